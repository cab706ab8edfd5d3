"""Benchmark of the citation mapper (``mnote.citations.mapper.map_query_data``)
against the real ``/query/data`` call it follows, measured in the same run.

    .venv/bin/python bench/mapping_bench.py [--blocks 2000] [--chunks 20] [--repeat 10]
        [--docs all|gamma] [--breakdown] [--profile] [--no-json] [--no-stack]

Mapping side: a generated DOCX-style sidecar of N blocks (default 2,000; meta
line + content rows with headings, parent headings, paraid positions,
~300–600 characters of mixed English/Chinese text, some ``<equation>``,
``<table>`` and ``<drawing>`` tags as LightRAG writes them), the whole
document chunked the way LightRAG's default chunking does with sidecars
(1–3 consecutive blocks' contents joined by "\\n\\n", some chunks cut in the
middle of a block), its ``kv_store_text_chunks.json`` with the
``sidecar.refs`` links, and a ``/query/data`` result of 20 of those chunks
spread over the document (whole-block chunks, chunks with a cut block at an
edge, and chunks made only of two cut blocks). The mapper is timed:

  - with / without the chunk store (without it: text matching, exact then
    rapidfuzz fuzzy),
  - cold (a new web process: nothing in memory, the document's index on
    disk, ``mnote.citations.sidecar.doc_index``) / warm / index built (a
    version's first search: no index anywhere, sidecar and chunk store parsed);
  - a search writes no rows; "map + permalink rows" (``permalinks.persist``,
    what saving an answer adds) as an extra row.

Baseline: the real embedded stack (lightrag-server + the local model
endpoint, on free ports, data in a temporary dir). The demo library's
documents are ingested, then ``client.query_data(q, mode=…, chunk_top_k=20)``
is timed for ``naive`` and ``mix`` (a different query each round, after one
untimed warm-up query per mode). The machine may be shared, so the baseline
and the fast mapping cases run interleaved, round by round: one naive query,
one mix query, then one cold, one warm, one index-built and one warm
mapping with its rows. The text-matching cases take seconds and run 3 times each after the
stack is stopped.

Prints a table (with each mapping case's CPU time, which other processes'
load does not stretch as it does wall time) and the ratios mapping ÷
query_data (medians; best in parentheses), writes
bench/results/mapping_bench.json. A cold case forgets everything a new
process would not have: the document indexes in memory, the mapper's
memos of cleaned text and the text helpers' memos. ``--breakdown`` adds
the exclusive time of each piece of the mapper (a wrapper timer, no
profiler); ``--profile`` adds cProfile listings. The stack is always stopped
and the temporary dir removed.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import hashlib
import io
import json
import os
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from machine import machine_info  # bench/machine.py, beside this file
from stack_harness import in_process_app, new_stack  # bench/stack_harness.py, beside this file

REPO_DIR = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_DIR / "bench" / "results"
RESULTS_FILE = RESULTS_DIR / "mapping_bench.json"
DEMO_DIR = REPO_DIR / "mnote" / "demo" / "library"

DOC_NAME = "mnote-0123456789abcdef-observatory-handbook.docx"
DOC_ID = "doc-" + hashlib.md5(b"mapping-bench-observatory-handbook").hexdigest()
MAPPING_QUERY = "primary mirror calibration temperature 校准 温度"

# Different queries per timed /query/data call (a user rarely repeats one).
BASELINE_QUERIES = [
    "Zerodur primary mirror",
    "How is the telescope calibrated every night?",
    "mirror re-aluminised coating chamber",
    "signal-to-noise ratio exposure time",
    "What should a new member do in the first week?",
    "glossary definition of flat field",
    "实验室安全 通风橱 使用",
    "会议纪要 决定 事项",
    "设备清单 离心机",
    "maintenance schedule of the dome and shutter",
    "化学品 储存 规定",
    "who to contact about access badges",
]
WARMUP_QUERY = "telescope"
SLOW_CALL_S = 1.0  # a mapping case whose first call is slower than this is repeated only 3 times

EN_WORDS = (
    "the primary mirror is aligned with the secondary after each calibration run and the dome "
    "temperature is logged every ten minutes while the shutter motor stays idle until the "
    "operator confirms the weather station reading for wind speed humidity and dew point "
    "spectrograph detector readout noise flat field bias frame dark current exposure time "
    "filter wheel guide camera focus offset tracking error pointing model encoder backlash "
    "coating chamber aluminium vacuum pump pressure gauge cryostat nitrogen cooling loop "
    "maintenance schedule inspection checklist safety interlock emergency stop procedure "
    "report archive pipeline reduction frame header keyword observer night log quality"
).split()
ZH_PHRASES = (
    "主镜 副镜 校准 温度 圆顶 快门 电机 气象站 风速 湿度 露点 光谱仪 探测器 读出噪声 平场 "
    "本底 暗电流 曝光时间 滤光片轮 导星相机 焦点 跟踪误差 指向模型 编码器 镀膜室 真空泵 "
    "压力表 液氮 冷却回路 维护计划 检查清单 安全联锁 紧急停止 操作规程 观测日志 数据归档 "
    "每晚 进行 一次 需要 记录 确认 检查 更换 调整 由值班人员 在开始观测前 如有异常应立即报告"
).split()
EQUATIONS = [
    r"\mathrm{SNR}=\frac{S\,t}{\sqrt{S\,t+B\,t+D\,t+R^2}}",
    r"T_{\mathrm{dome}}-T_{\mathrm{air}}\leq 1.5^{\circ}\mathrm{C}",
    r"\Delta f=\frac{\lambda}{2\,\mathrm{NA}^2}",
    r"P=\frac{\rho g Q H}{\eta}",
    r"\sigma_{\mathrm{read}}=\sqrt{\frac{1}{N}\sum_{i=1}^{N}(x_i-\bar{x})^2}",
]


# --- the synthetic document -------------------------------------------------------


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _english(rng: random.Random, n_chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < n_chars:
        sentence = " ".join(rng.choices(EN_WORDS, k=rng.randint(6, 16)))
        sentence = sentence[0].upper() + sentence[1:] + rng.choice([".", ".", ".", f" ({rng.randint(2, 99)} min)."])
        words.append(sentence)
        size += len(sentence) + 1
    return " ".join(words)


def _chinese(rng: random.Random, n_chars: int) -> str:
    parts: list[str] = []
    size = 0
    while size < n_chars:
        sentence = "".join(rng.choices(ZH_PHRASES, k=rng.randint(5, 12))) + "。"
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts)


def generate_sidecar(n_blocks: int, seed: int = 2026) -> tuple[dict, list[dict]]:
    """A DOCX-style sidecar: (meta row, content rows)."""
    rng = random.Random(seed)
    title = "Observatory Operations Handbook"
    rows: list[dict] = []
    chapter_no = section_no = 0
    chapter = ""
    heading, parents = title, []
    eq_no = tb_no = im_no = 0
    doc_hash = DOC_ID[4:]
    for i in range(n_blocks):
        # A heading starts a block; the paragraphs after it fill the next
        # blocks, which carry the same heading and parents.
        new_heading, level = None, 0
        if i == 0:
            new_heading, level = title, 1
            heading, parents = title, []
        elif i % 40 == 1:
            chapter_no += 1
            section_no = 0
            chapter = f"{chapter_no}. " + rng.choice(
                ["Optics", "Dome", "Detectors", "Safety", "Maintenance", "Data", "观测流程", "设备管理"]
            )
            new_heading, level = chapter, 2
            heading, parents = chapter, [title]
        elif i % 5 == 1:
            section_no += 1
            if rng.random() < 0.3:
                section = f"{chapter_no}.{section_no} " + "".join(rng.choices(ZH_PHRASES, k=2))
            else:
                section = f"{chapter_no}.{section_no} " + " ".join(rng.choices(EN_WORDS, k=3)).title()
            new_heading, level = section, 3
            heading, parents = section, [title, chapter]
        target = rng.randint(300, 600)
        pieces: list[str] = []
        if new_heading:
            pieces.append("#" * level + " " + new_heading)
        roll = rng.random()
        text_len = target - sum(len(p) for p in pieces)
        if roll < 0.35:
            body = _chinese(rng, text_len)
        elif roll < 0.55:
            body = _english(rng, int(text_len * 0.6)) + " " + _chinese(rng, int(text_len * 0.4))
        else:
            body = _english(rng, text_len)
        pieces.append(body)
        extra = rng.random()
        if extra < 0.08:
            eq_no += 1
            latex = rng.choice(EQUATIONS)
            eq = f'<equation id="eq-{doc_hash}-{eq_no:04d}" format="latex">{latex}</equation>'
            pieces.append("The relation used is:\n" + eq if rng.random() < 0.5 else eq)
        elif extra < 0.13:
            tb_no += 1
            cells = [["Item", "Value", "单位"]] + [
                [rng.choice(EN_WORDS).title(), f"{rng.uniform(0, 500):.1f}", rng.choice(["nm", "K", "Pa", "秒", "mm"])]
                for _ in range(rng.randint(2, 5))
            ]
            pieces.append(
                f'<table id="tb-{doc_hash}-{tb_no:04d}" format="json">{json.dumps(cells, ensure_ascii=False)}</table>'
            )
        elif extra < 0.16:
            im_no += 1
            pieces.append(
                f'<drawing id="im-{doc_hash}-{im_no:04d}" format="png" path="observatory-handbook.blocks.assets/image{im_no}.png" src="" />\n'
                f"Figure {im_no} " + " ".join(rng.choices(EN_WORDS, k=5))
            )
        content = "\n".join(pieces)
        rows.append(
            {
                "type": "content",
                "blockid": _hex(rng, 32),
                "format": "plain_text",
                "content": content,
                "heading": heading,
                "parent_headings": parents,
                "level": level or len(parents) + 1,
                "session_type": "body",
                "table_slice": "none",
                "positions": [{"type": "paraid", "range": [_hex(rng, 8).upper(), _hex(rng, 8).upper()]}],
            }
        )
    meta = {
        "type": "meta",
        "format": "lightrag",
        "version": "1.0",
        "document_name": DOC_NAME,
        "document_format": "docx",
        "document_hash": "sha256:" + hashlib.sha256(DOC_NAME.encode()).hexdigest(),
        "table_file": tb_no > 0,
        "equation_file": eq_no > 0,
        "drawing_file": im_no > 0,
        "asset_dir": im_no > 0,
        "blocks": n_blocks,
        "doc_id": DOC_ID,
        "parse_engine": "native",
        "parse_time": "2026-11-29T11:35:05.840880+00:00",
        "doc_title": title,
    }
    return meta, rows


@dataclasses.dataclass
class SyntheticChunk:
    index: int
    content: str
    block_ids: list[str]  # every block the chunk overlaps, in order
    kind: str  # whole | partial_edge | partial_only | inside

    @property
    def chunk_id(self) -> str:
        return f"{DOC_ID}-chunk-{self.index:03d}"


def _cut(text: str, rng: random.Random) -> int:
    """A cut point 35–70 % into a block, at a space when there is one near."""
    at = int(len(text) * rng.uniform(0.35, 0.7))
    space = text.rfind(" ", at - 30, at + 30)
    return space if space > 0 else at


def chunk_document(rows: list[dict], seed: int = 7) -> list[SyntheticChunk]:
    """Chunk the whole document like LightRAG's default chunking with
    sidecars: 1–3 consecutive blocks joined by "\\n\\n"; about a quarter of
    the chunks end in the middle of a block, and the next chunk starts with
    the rest of it (with a small overlap, as the token splitter has)."""
    rng = random.Random(seed)
    chunks: list[SyntheticChunk] = []
    i = 0
    carry: tuple[str, str] | None = None  # (block id, the rest of a cut block)
    while i < len(rows) or carry:
        pieces: list[str] = []
        ids: list[str] = []
        partial: list[bool] = []
        if carry:
            ids.append(carry[0])
            pieces.append(carry[1])
            partial.append(True)
            carry = None
        take = rng.choice([1, 1, 2, 2, 2, 3]) - (1 if pieces and rng.random() < 0.5 else 0)
        for _ in range(take):
            if i >= len(rows):
                break
            ids.append(rows[i]["blockid"])
            pieces.append(rows[i]["content"])
            partial.append(False)
            i += 1
        if i < len(rows) and rng.random() < 0.27:
            content = rows[i]["content"]
            at = _cut(content, rng)
            ids.append(rows[i]["blockid"])
            pieces.append(content[:at].rstrip())
            partial.append(True)
            overlap = max(0, at - rng.randint(20, 60))
            carry = (rows[i]["blockid"], content[overlap:].lstrip())
            i += 1
        if not pieces:
            break
        if all(partial):
            kind = "inside" if len(pieces) == 1 else "partial_only"
        else:
            kind = "partial_edge" if any(partial) else "whole"
        chunks.append(SyntheticChunk(len(chunks), "\n\n".join(pieces), ids, kind))
    return chunks


def pick_result_chunks(chunks: list[SyntheticChunk], n: int, seed: int = 11) -> list[SyntheticChunk]:
    """n chunks spread over the document: about 55 % whole-block chunks, 25 %
    with a cut block at an edge, 15 % made only of cut blocks, 5 % inside one
    block; in a shuffled (relevance-like) order."""
    rng = random.Random(seed)
    quotas = {
        "partial_only": max(1, round(n * 0.15)),
        "partial_edge": max(1, round(n * 0.25)),
        "inside": round(n * 0.05),
    }
    quotas["whole"] = n - sum(quotas.values())
    picked: list[SyntheticChunk] = []
    for kind, quota in quotas.items():
        pool = [c for c in chunks if c.kind == kind]
        if not pool or quota <= 0:
            continue
        step = len(pool) / quota
        picked.extend(pool[min(len(pool) - 1, int(step * k + rng.uniform(0, step)))] for k in range(quota))
    picked = list({c.index: c for c in picked}.values())
    while len(picked) < n:  # a small pool ran short: top up with whole chunks
        extra = rng.choice(chunks)
        if extra.index not in {c.index for c in picked}:
            picked.append(extra)
    rng.shuffle(picked)
    return picked[:n]


def query_data_result(picked: list[SyntheticChunk]) -> dict:
    """The /query/data body LightRAG 1.5.7 returns for these chunks."""
    return {
        "status": "success",
        "message": "Query executed successfully",
        "data": {
            "entities": [],
            "relationships": [],
            "chunks": [
                {"reference_id": "1", "content": c.content, "file_path": DOC_NAME, "chunk_id": c.chunk_id}
                for c in picked
            ],
            "references": [{"reference_id": "1", "file_path": DOC_NAME}],
        },
        "metadata": {"query_mode": "naive", "keywords": {"high_level": [], "low_level": []}},
    }


def chunk_store(chunks: list[SyntheticChunk]) -> dict:
    """kv_store_text_chunks.json as LightRAG's JsonKVStorage writes it."""
    return {
        c.chunk_id: {
            "tokens": len(c.content) // 3,
            "content": c.content,
            "chunk_order_index": c.index,
            "sidecar": {
                "type": "block",
                "id": c.block_ids[0],
                "refs": [{"type": "block", "id": b} for b in c.block_ids],
            },
            "full_doc_id": DOC_ID,
            "file_path": DOC_NAME,
            "llm_cache_list": [],
            "create_time": 1795951955,
            "update_time": 1795951955,
            "_id": c.chunk_id,
        }
        for c in chunks
    }


# --- timing helpers -------------------------------------------------------------


def stats(times: list[float]) -> dict:
    return {"best_s": min(times), "median_s": statistics.median(times), "runs_s": times}


def profile(fn) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    fn()
    profiler.disable()
    out = io.StringIO()
    ps = pstats.Stats(profiler, stream=out)
    ps.sort_stats("cumulative").print_stats(25)
    ps.sort_stats("cumulative").print_stats(r"mnote/citations|rapidfuzz|django/db/models/query.py", 25)
    ps.sort_stats("tottime").print_stats(15)
    return out.getvalue()


def ensure_urlconf() -> str | None:
    """The mapper builds permalinks with ``reverse("citation")``. When the
    project's URLconf cannot be imported (someone's work in progress), fall
    back to one holding only the citation route, and say so."""
    import importlib
    import types

    from django.conf import settings
    from django.urls import clear_url_caches, path

    try:
        importlib.import_module(settings.ROOT_URLCONF)
        return None
    except ImportError as e:
        from mnote.pages import citations as citation_views

        module = types.ModuleType("mapping_bench_urls")
        module.urlpatterns = [
            path("c/<str:token>", citation_views.citation, name="citation"),
            path("c/r/<str:reference>", citation_views.reference, name="citation-reference"),
        ]
        sys.modules[module.__name__] = module
        settings.ROOT_URLCONF = module.__name__
        clear_url_caches()
        note = f"{settings.ROOT_URLCONF!s}: project URLconf not importable ({e}); used one with only the citation route"
        print(f"warning: {note}", flush=True)
        return note


def breakdown(fn, runs: int, before=None) -> dict:
    """Exclusive wall time per piece of the mapper, without a profiler: the
    pieces are wrapped by a timer that subtracts the time of wrapped pieces
    called inside them, so the rows add up to the total."""
    import types

    from rapidfuzz import fuzz

    from mnote.citations import mapper, matching, sidecar
    from mnote.citations.models import Citation
    from mnote.text import display, evidence, terms

    exclusive: dict[str, float] = {}
    counts: dict[str, int] = {}
    stack: list[float] = []

    def wrap(name, func):
        def timed(*args, **kwargs):
            stack.append(0.0)
            t0 = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - t0
                inner = stack.pop()
                exclusive[name] = exclusive.get(name, 0.0) + elapsed - inner
                counts[name] = counts.get(name, 0) + 1
                if stack:
                    stack[-1] += elapsed

        return timed

    patches: list[tuple[object, str, object]] = []

    def patch(owner, attr, name):
        patches.append((owner, attr, owner.__dict__.get(attr, _MISSING)))
        setattr(owner, attr, wrap(name, getattr(owner, attr)))

    for attr in (
        "_references",
        "_registry_row",
        "_match_block",
        "_locator_position",
        "_citation_id",
        "doc_index",
        "evidence_sentences",
        "lexical_score",
        "_cleaned",  # the memo of clean_display_text (mnote/citations/matching.py)
        "_fingerprint",
        "_add_anchor",
        "reference_url",
    ):
        patch(mapper, attr, f"{attr}")
    # Block matching and the text memos live in matching.py: patched where called.
    for attr in ("_normalise", "_cleaned", "_fingerprint", "evidence_window", "lexical_score"):
        patch(matching, attr, f"{attr}")
    # Each text module binds the names it imports: patch them where they are called.
    for module, attr in (
        (display, "clean_display_text"),
        (evidence, "clean_display_text"),
        (evidence, "evidence_window"),
        (evidence, "lexical_score"),
        (terms, "_fold"),
        (display, "_fold"),
        (evidence, "_fold"),
    ):
        patch(module, attr, f"{attr}")
    shim = types.SimpleNamespace(partial_ratio=wrap("rapidfuzz partial_ratio", fuzz.partial_ratio))
    patches.append((matching, "fuzz", matching.fuzz))
    matching.fuzz = shim
    for attr in ("load_sidecar", "load_chunk_store", "_read_index"):
        patch(sidecar, attr, attr)
    patch(Citation, "get_absolute_url", "Citation.get_absolute_url (reverse)")
    total = 0.0
    try:
        for _ in range(runs):
            if before:
                before()
            t0 = time.perf_counter()
            fn()
            total += time.perf_counter() - t0
    finally:
        for owner, attr, old in reversed(patches):
            if old is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, old)
    rest = total - sum(exclusive.values())
    exclusive["map_query_data itself (registry SELECTs, loop, dicts)"] = rest
    counts["map_query_data itself (registry SELECTs, loop, dicts)"] = runs
    order = sorted(exclusive, key=lambda k: -exclusive[k])
    return {
        "calls": runs,
        "exclusive_ms": {k: exclusive[k] / runs * 1e3 for k in order},
        "counts": {k: counts[k] // runs for k in order},
        "total_ms": total / runs * 1e3,
    }


_MISSING = object()


# --- the baseline: the real embedded stack --------------------------------------


def stack_client(stack):
    from mnote.lightrag import load_config, make_client

    config = load_config(
        {"MNOTE_LIGHTRAG_ENV_FILE": str(stack.config.env_file)},
        default_url=stack.config.lightrag_url,
        default_input_dir=stack.config.input_dir,
        default_working_dir=stack.config.working_dir,
    )
    return make_client(config)


def ingest(stack, client, documents: list[Path], timeout: float = 600) -> dict:
    for doc in documents:
        shutil.copy(doc, stack.config.input_dir / doc.name)
    start = time.perf_counter()
    client.scan()
    deadline = time.monotonic() + timeout
    while True:
        page = client.documents_page(page_size=100)
        states = {d.file_path: d.status for d in page.documents}
        failed = {name: s for name, s in states.items() if s == "failed"}
        if failed:
            raise SystemExit(f"LightRAG failed to ingest {failed}; see {stack.config.data_dir / 'logs'}")
        if len(states) >= len(documents) and all(s == "processed" for s in states.values()):
            return {
                "documents": len(documents),
                "chunks": sum(d.chunks_count for d in page.documents),
                "ingest_s": time.perf_counter() - start,
            }
        if time.monotonic() > deadline:
            raise SystemExit(f"LightRAG did not process the documents within {timeout:.0f} s: {states}")
        time.sleep(0.5)


# --- the bench -----------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=2000, help="blocks in the generated sidecar (default 2000)")
    parser.add_argument("--chunks", type=int, default=20, help="chunks in the /query/data result (default 20)")
    parser.add_argument("--repeat", type=int, default=10, help="runs per measurement (default 10)")
    parser.add_argument(
        "--docs",
        choices=["all", "gamma"],
        default="all",
        help="baseline documents to ingest: the 6 demo documents (default) or only the Gamma manual",
    )
    parser.add_argument("--profile", action="store_true", help="also cProfile one call of each mapping case")
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="also time the mapper's pieces (exclusive time per function, no profiler)",
    )
    parser.add_argument("--no-json", action="store_true", help="do not write bench/results/mapping_bench.json")
    parser.add_argument(
        "--no-stack",
        action="store_true",
        help="skip the baseline (no stack, no ratios, no JSON): for quick mapping-only runs",
    )
    args = parser.parse_args(argv)
    repeat = max(args.repeat, 1)

    tmp = Path(tempfile.mkdtemp(prefix="mnote-mapping-bench-"))
    stack = None
    try:
        data_dir = tmp / "data"
        data_dir.mkdir()
        (data_dir / "library").mkdir()
        in_process_app(data_dir, data_dir / "library")
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command
        from django.db import connections

        from mnote.citations import sidecar as sidecar_module
        from mnote.citations import permalinks
        from mnote.citations import mapper as mapper_module
        from mnote.citations.mapper import map_query_data
        from mnote.citations.models import Citation
        from mnote.library.models import IndexedRoot, Source
        from mnote.text import display as display_module
        from mnote.text import terms as terms_module
        from mnote.text import evidence as evidence_module
        from mnote.preview import locator_anchor

        urlconf_note = ensure_urlconf()

        # --- the synthetic library (sidecar, chunk store, registry row)
        inputs, storage = tmp / "synthetic" / "inputs", tmp / "synthetic" / "rag_storage"
        storage.mkdir(parents=True)
        settings.MNOTE_LIGHTRAG = dataclasses.replace(settings.MNOTE_LIGHTRAG, input_dir=inputs, working_dir=storage)
        call_command("migrate", verbosity=0, interactive=False)
        assert Path(settings.DATABASES["default"]["NAME"]).is_relative_to(data_dir)

        meta, rows = generate_sidecar(args.blocks)
        chunks = chunk_document(rows)
        picked = pick_result_chunks(chunks, args.chunks)
        result = query_data_result(picked)
        sidecar_file = inputs / "__parsed__" / f"{DOC_NAME}.parsed" / f"{Path(DOC_NAME).stem}.blocks.jsonl"
        sidecar_file.parent.mkdir(parents=True)
        sidecar_file.write_text(
            "\n".join(json.dumps(r, ensure_ascii=False) for r in [meta, *rows]) + "\n", encoding="utf-8"
        )
        store_file = storage / "kv_store_text_chunks.json"
        store_off = storage / "kv_store_text_chunks.json.off"
        store_file.write_text(json.dumps(chunk_store(chunks), ensure_ascii=False, indent=2), encoding="utf-8")
        root = IndexedRoot.objects.create(name="Handbooks", path="handbooks")
        Source.objects.create(
            root=root,
            relative_path="observatory-handbook.docx",
            absolute_path=str(data_dir / "library" / "handbooks" / "observatory-handbook.docx"),
            sha256="b" * 64,
            lightrag_name=DOC_NAME,
            lightrag_doc_id=DOC_ID,
            status=Source.Status.INDEXED,
            chunk_count=len(chunks),
        )
        contents = [len(r["content"]) for r in rows]
        synthetic = {
            "blocks": len(rows),
            "block_chars_min": min(contents),
            "block_chars_median": statistics.median(contents),
            "block_chars_max": max(contents),
            "sidecar_bytes": sidecar_file.stat().st_size,
            "document_chunks": len(chunks),
            "chunk_store_bytes": store_file.stat().st_size,
            "result_chunks": len(picked),
            "result_chunk_kinds": {
                k: sum(1 for c in picked if c.kind == k) for k in ("whole", "partial_edge", "partial_only", "inside")
            },
            "result_chunk_chars_median": statistics.median(len(c.content) for c in picked),
            "blocks_with_equation": sum("<equation" in r["content"] for r in rows),
            "blocks_with_table": sum("<table" in r["content"] for r in rows),
            "blocks_with_drawing": sum("<drawing" in r["content"] for r in rows),
            "mapping_query": MAPPING_QUERY,
        }
        print(
            f"synthetic sidecar: {len(rows)} blocks ({synthetic['sidecar_bytes'] / 1e6:.2f} MB), "
            f"{len(chunks)} chunks in the document (store {synthetic['chunk_store_bytes'] / 1e6:.2f} MB), "
            f"result of {len(picked)} chunks {synthetic['result_chunk_kinds']}",
            flush=True,
        )

        index_dir = Path(os.environ["MNOTE_DATA_DIR"]) / "cache" / "index"

        def clear_caches():
            """A new web process: nothing in memory; the document's index on disk stays."""
            sidecar_module._read_sidecar.cache_clear()
            sidecar_module._read_chunk_store.cache_clear()
            sidecar_module.forget_doc_indexes()
            sidecar_module.forget_display_texts()
            mapper_module.forget_text_memos()  # the mapper's memos of cleaned text, path facts, ids
            locator_anchor._render_place.cache_clear()  # where each version's preview render would be
            for module in (display_module, terms_module, evidence_module):  # the text helpers' memos too
                for value in vars(module).values():
                    if callable(getattr(value, "cache_clear", None)):
                        value.cache_clear()

        def clear_all():
            """A document version's first search: no index anywhere yet (it is built and written)."""
            clear_caches()
            shutil.rmtree(index_dir, ignore_errors=True)

        def use_store(on: bool):
            if on and store_off.exists():
                store_off.rename(store_file)
            elif not on and store_file.exists():
                store_file.rename(store_off)

        def run_map(persist: bool = False):
            """A search maps and writes nothing; ``persist``: also the permalink
            rows, as saving an answer does."""
            mapped = map_query_data(result, query=MAPPING_QUERY, sources=Source.objects.all())
            if persist:
                permalinks.persist(mapped.citations)
            return mapped

        expected = {c.chunk_id: set(c.block_ids) for c in picked}
        kinds = {c.chunk_id: c.kind for c in picked}

        def first_call(tag: str) -> float:
            """The first call ever for this case (no index yet), and a check
            that each citation's block is one the chunk overlaps."""
            Citation.objects.all().delete()
            clear_all()
            t0 = time.perf_counter()
            mapped = run_map()
            elapsed = time.perf_counter() - t0
            matches: dict[str, int] = {}
            wrong: list[str] = []
            for c in mapped.citations:
                how = c.diagnostics["blockMatch"]
                matches[how] = matches.get(how, 0) + 1
                if c.block_id not in expected[c.chunk_id]:
                    wrong.append(f"{c.chunk_id.rsplit('-', 2)[-2]}-{c.chunk_id[-3:]} ({kinds[c.chunk_id]}): {how}")
            checks[tag] = {
                "citations": len(mapped.citations),
                "dropped": len(mapped.dropped),
                "block_match": matches,
                "block_in_chunk_refs": len(mapped.citations) - len(wrong),
                "not_in_refs": wrong,
            }
            rows_out[f"map_{tag}_first_call"] = stats([elapsed])
            return elapsed

        # This thread's CPU time per call beside the wall time: the machine is
        # shared, and CPU time is what other processes' load does not stretch.
        cpu: dict[str, list[float]] = {}

        def timed(fn, key: str | None = None) -> float:
            t0, c0 = time.perf_counter(), time.thread_time()
            fn()
            if key:
                cpu.setdefault(key, []).append(time.thread_time() - c0)
            return time.perf_counter() - t0

        def cold_call(key: str | None = None) -> float:
            clear_caches()
            return timed(run_map, key)

        def built_call(key: str | None = None) -> float:
            clear_all()
            return timed(run_map, key)

        rows_out: dict[str, dict] = {}
        checks: dict[str, dict] = {}
        profiles: dict[str, str] = {}
        breakdowns: dict[str, dict] = {}
        returned: dict[str, list[int]] = {"naive": [], "mix": []}
        ingested = {"documents": 0, "chunks": 0, "ingest_s": None}
        stack_start_s = None
        times: dict[str, list[float]] = {
            k: []
            for k in (
                "query_data_naive",
                "query_data_mix",
                "map_with_store_cold",
                "map_with_store_warm",
                "map_with_store_built",
                "map_with_store_warm_persist",
            )
        }

        # --- with the chunk store: interleaved with the baseline, round by round
        use_store(True)
        first_call("with_store")
        run_map()  # untimed: imports, URL resolver, SQLite statement cache

        def map_round():
            times["map_with_store_cold"].append(cold_call("map_with_store_cold"))
            times["map_with_store_warm"].append(timed(run_map, "map_with_store_warm"))
            times["map_with_store_built"].append(built_call("map_with_store_built"))
            run_map()  # the index is on disk again for the next cold call
            times["map_with_store_warm_persist"].append(timed(lambda: run_map(True), "map_with_store_warm_persist"))

        if args.no_stack:
            for _ in range(repeat):
                map_round()
        else:
            stack_dir = tmp / "stack"
            stack_dir.mkdir()
            stack = new_stack(stack_dir)
            print("starting the embedded stack …", flush=True)
            t0 = time.perf_counter()
            stack.start()
            stack_start_s = time.perf_counter() - t0
            docs = sorted(p for p in DEMO_DIR.rglob("*") if p.is_file())
            if args.docs == "gamma":
                docs = [DEMO_DIR / "en" / "gamma-telescope-manual.docx"]
            with stack_client(stack) as client:
                print(f"ingesting {len(docs)} demo document(s) …", flush=True)
                ingested = ingest(stack, client, docs)
                print(f"  {ingested['chunks']} chunks in {ingested['ingest_s']:.1f} s", flush=True)
                for mode in ("naive", "mix"):  # untimed warm-up
                    client.query_data(WARMUP_QUERY, mode=mode, chunk_top_k=args.chunks)
                print(
                    f"{repeat} rounds of: query_data naive, query_data mix, mapping (cold, warm, index built, warm + rows) …",
                    flush=True,
                )
                for k in range(repeat):
                    query = BASELINE_QUERIES[k % len(BASELINE_QUERIES)]
                    for mode in ("naive", "mix"):
                        t0 = time.perf_counter()
                        body = client.query_data(query, mode=mode, chunk_top_k=args.chunks)
                        times[f"query_data_{mode}"].append(time.perf_counter() - t0)
                        returned[mode].append(len((body.get("data") or {}).get("chunks") or []))
                    map_round()
            print("stopping the embedded stack …", flush=True)
            stack.stop()
            stack = None
        for key, values in times.items():
            if values:
                rows_out[key] = stats(values)
        if args.profile:
            clear_caches()
            profiles["with_store, cold"] = profile(run_map)
            profiles["with_store, warm"] = profile(run_map)
        if args.breakdown:
            breakdowns["with_store, warm"] = breakdown(run_map, repeat)
            breakdowns["with_store, cold"] = breakdown(run_map, repeat, before=clear_caches)

        # --- without the chunk store: text matching (seconds per call: 3 runs are enough)
        use_store(False)
        first = first_call("no_store")
        case_repeat = repeat if first < SLOW_CALL_S else min(repeat, 3)
        rows_out["map_no_store_cold"] = stats([cold_call("map_no_store_cold") for _ in range(case_repeat)])
        rows_out["map_no_store_warm"] = stats([timed(run_map, "map_no_store_warm") for _ in range(case_repeat)])
        rows_out["map_no_store_built"] = stats([built_call("map_no_store_built") for _ in range(case_repeat)])
        run_map()
        if args.profile:
            clear_caches()
            profiles["no_store, cold"] = profile(run_map)
        if args.breakdown:
            breakdowns["no_store, warm"] = breakdown(run_map, 1)
        use_store(True)

        # Cold loading alone (the part the cache saves).
        doc_source = Source.objects.get(lightrag_name=DOC_NAME)
        for name, fn in (
            ("load_sidecar_cold", lambda: sidecar_module.load_sidecar(inputs, DOC_NAME)),
            ("load_chunk_store_cold", lambda: sidecar_module.load_chunk_store(storage)),
            ("doc_index_from_disk", lambda: mapper_module.doc_index(doc_source)),
        ):
            values = []
            for _ in range(repeat):
                clear_caches()
                values.append(timed(fn, name))
            rows_out[name] = stats(values)
        for key, values in cpu.items():
            if key in rows_out:
                rows_out[key]["cpu_median_s"] = statistics.median(values)
        connections.close_all()

        baselines = () if args.no_stack else ("query_data_naive", "query_data_mix")
        mapped_rows = [k for k in rows_out if k.startswith("map_") and not k.endswith("first_call")]
        ratios = {
            f"{m} / {b}": rows_out[m]["median_s"] / rows_out[b]["median_s"] for m in mapped_rows for b in baselines
        }
        ratios_best = {
            f"{m} / {b}": rows_out[m]["best_s"] / rows_out[b]["best_s"] for m in mapped_rows for b in baselines
        }

        info = machine_info(dirty=("mnote/citations", "mnote/text"))
        labels = {
            "query_data_naive": f"baseline /query/data naive, chunk_top_k={args.chunks}",
            "query_data_mix": f"baseline /query/data mix, chunk_top_k={args.chunks}",
            "map_with_store_cold": "map, chunk store, cold (new process, index on disk)",
            "map_with_store_warm": "map, chunk store, warm",
            "map_with_store_built": "map, chunk store, index built (version's 1st search)",
            "map_with_store_warm_persist": "  map + permalink rows (saving an answer), warm",
            "map_no_store_cold": "map, text matching, cold (index on disk)",
            "map_no_store_warm": "map, text matching, warm",
            "map_no_store_built": "map, text matching, index built",
            "map_with_store_first_call": "  first call (index built), store",
            "map_no_store_first_call": "  first call (index built), text",
            "load_sidecar_cold": "  load_sidecar alone, cold",
            "load_chunk_store_cold": "  load_chunk_store alone, cold",
            "doc_index_from_disk": "  doc_index alone, read from disk",
        }
        print()
        print(
            f"{synthetic['blocks']} blocks, {synthetic['document_chunks']} document chunks, result of "
            f"{synthetic['result_chunks']} chunks; repeat={repeat}; nproc={info['nproc']}; python {info['python']}"
        )
        if returned["naive"]:
            print(
                f"baseline: {ingested['documents']} demo docs, {ingested['chunks']} chunks; chunks returned "
                f"naive {returned['naive']}, mix {returned['mix']}"
            )
        print(f"{'measurement':<52} {'runs':>4} {'best ms':>9} {'median ms':>10} {'CPU ms':>8}")
        for key, label in labels.items():
            if key in rows_out:
                r = rows_out[key]
                cpu_ms = f"{r['cpu_median_s'] * 1e3:>8.1f}" if "cpu_median_s" in r else f"{'':>8}"
                print(f"{label:<52} {len(r['runs_s']):>4} {r['best_s'] * 1e3:>9.1f} "
                      f"{r['median_s'] * 1e3:>10.1f} {cpu_ms}")
        if ratios:
            print()
            print("ratios mapping / query_data (median; best in parentheses):")
            for key, value in ratios.items():
                print(f"  {key:<60} {value:>7.2f}x   ({ratios_best[key]:.2f}x)")
        print()
        for tag, check in checks.items():
            print(
                f"{tag}: {check['citations']} citations, {check['dropped']} dropped, block in the chunk's refs "
                f"{check['block_in_chunk_refs']}/{check['citations']}, matched by {check['block_match']}"
                + (f"; not in refs: {check['not_in_refs']}" if check["not_in_refs"] else "")
            )
        for label, table in breakdowns.items():
            print(f"\n--- where the time goes: {label} (exclusive ms per call, mean of {table['calls']}) ---")
            for name, ms in table["exclusive_ms"].items():
                print(f"  {name:<44} {ms:>9.2f}  ({table['counts'][name]} calls)")
            print(f"  {'total':<44} {table['total_ms']:>9.2f}")
        for label, text in profiles.items():
            print(f"\n--- cProfile: {label} ---\n{text}")

        if not args.no_json and not args.no_stack:
            RESULTS_DIR.mkdir(parents=True, exist_ok=True)
            out = {
                "benchmark": "mapping_bench",
                "command": " ".join(
                    [".venv/bin/python", "bench/mapping_bench.py", *(argv if argv is not None else sys.argv[1:])]
                ),
                "machine": info,
                "repeat": repeat,
                "synthetic": synthetic,
                "baseline": {
                    **ingested,
                    "stack_start_s": stack_start_s,
                    "chunk_top_k": args.chunks,
                    "queries": [BASELINE_QUERIES[k % len(BASELINE_QUERIES)] for k in range(repeat)],
                    "chunks_returned": returned,
                },
                "mapping_checks": checks,
                "urlconf_fallback": urlconf_note,
                "results": rows_out,
                "ratios_median": ratios,
                "ratios_best": ratios_best,
                "breakdown": breakdowns,
            }
            RESULTS_FILE.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
            print(f"\nwrote {RESULTS_FILE.relative_to(REPO_DIR)}")
    finally:
        if stack is not None:
            stack.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Locate time in a 10,000-paragraph document (issue 5), against the cost of
loading the same preview page, measured in the same run.

    .venv/bin/python bench/locate_bench.py [--paragraphs 10000] [--loads 3] [--no-docx]

Generates a Markdown document of N paragraphs (default 10,000; English,
Chinese and mixed paragraphs from a Zipf-distributed vocabulary, with
identifiers and numbers), a "#" heading every 200 paragraphs and a "##"
heading every 20. When ``mnote/preview/docx_render.py`` exists, the same
content is also written as a DOCX with ``mnote/demo/docx_writer.py``.

The app runs on a temporary data dir (migrated SQLite DB, one member user,
one ``IndexedRoot`` + one ``Source`` row per document, status "indexed"),
under gunicorn exactly as production runs it (``web_process``), without
LightRAG: the preview renders from the file alone. Headless Chromium
(Playwright) logs in, opens ``/preview/<id>/`` and, inside the page, times
``await window.mnoteLocate(locator)`` with ``performance.now()``:

  first locate   the first call after a fresh page load (tokenises every block);
                 one per page load (--loads, default 3), each with another locator;
  warm locate    20 paragraph locators spread through the document (the
                 evidence is the paragraph's heading + a 200-character window
                 of it, the search query 2 words from that window) plus one
                 Chinese locator, after the first; on every page load;
  + paraIds      (DOCX only) the same locators with ``paraIds`` of the target
                 paragraph, i.e. the fast path verified against the evidence.

Each locate is checked: the reported ``blockIndex`` must be the target
paragraph (``exact``), or the highlighted run of blocks must contain it
(``landed``). "+ 2 frames" adds the time until two animation frames after the
locate resolved (style, layout and paint of the highlight).

Baselines in the same page: the page load (navigation timing:
DOMContentLoaded and load, warm server cache) and a trivial pass
``document.querySelectorAll('[data-block-index]').length``.

Prints a table and the ratios, writes bench/results/locate_bench.json. The
web app is stopped and the temporary dir removed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from machine import machine_info  # bench/machine.py, beside this file
from stack_harness import in_process_app_in, log_in_page, register_indexed  # bench/stack_harness.py, beside this file

REPO_DIR = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_DIR / "bench" / "results"
RESULTS_FILE = RESULTS_DIR / "locate_bench.json"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PART_EVERY = 200  # "#" heading every 200 paragraphs
SECTION_EVERY = 20  # "##" heading every 20 paragraphs
WARM_LOCATORS = 20

# --- the generated document ---------------------------------------------------

BASE_WORDS = (
    "mirror telescope calibration detector exposure filter dome shutter cooling vacuum chamber coating "
    "aluminium sensor readout noise gain bias flat dark frame pixel spectrum wavelength focus alignment "
    "mount axis encoder motor bearing lubrication inspection maintenance schedule safety interlock valve "
    "pressure temperature humidity nitrogen helium cryostat laser fibre cable connector controller firmware "
    "software network archive backup report meeting minutes decision action owner deadline budget vendor "
    "procurement order invoice contract warranty training member onboarding access badge laboratory fume "
    "hood solvent reagent storage cabinet label waste disposal spill glove goggles procedure emergency "
    "observation night weather cloud seeing transparency moon target catalogue coordinate magnitude star "
    "galaxy nebula photometry astrometry pipeline reduction calibration stack median mean error tolerance "
    "the a of and to in is for on with as by at from that this be it or an are was were should must may "
    "each every after before during when while until within between under over into through"
).split()
SYLLABLES = "ka lo mi ne ra tu vo ze pri stra con dex ver ton mal rin sel par qua fen lix mor tal gan bri".split()
CJK_CHARS = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所"
    "民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日"
    "那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想"
    "已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指"
    "校准温度镜面望远镜探测器曝光滤光片圆顶冷却真空镀膜传感器噪声增益像素光谱波长聚焦对准维护检查安全联锁阀门压力湿度氮气激光"
)
CJK_PUNCT = "，，，、；。"


def _zipf_weights(n: int, s: float = 1.07) -> list[float]:
    return [1 / (k + 1) ** s for k in range(n)]


class Generator:
    def __init__(self, seed: int = 5150):
        self.rng = random.Random(seed)
        rng = self.rng
        words = list(dict.fromkeys(BASE_WORDS))
        # Synthetic words: a long tail of rarer terms, as real documents have.
        while len(words) < 6000:
            word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
            if word not in words:
                words.append(word)
        rng.shuffle(words[60:])  # keep some real words frequent
        self.words = words
        self.word_weights = _zipf_weights(len(words))
        lexicon = set()
        while len(lexicon) < 3000:
            lexicon.add("".join(rng.choice(CJK_CHARS) for _ in range(rng.choice((2, 2, 2, 3, 4)))))
        self.cjk_words = sorted(lexicon)
        rng.shuffle(self.cjk_words)
        self.cjk_weights = _zipf_weights(len(self.cjk_words))

    def _english_sentence(self) -> str:
        rng = self.rng
        words = rng.choices(self.words, self.word_weights, k=rng.randint(8, 20))
        if rng.random() < 0.35:
            words.insert(rng.randrange(len(words)), rng.choice([f"EQ-{rng.randint(1, 9999):04d}", f"{rng.uniform(0, 500):.1f}", f"rev{rng.randint(1, 99)}"]))
        sentence = " ".join(words)
        if rng.random() < 0.3:
            cut = rng.randrange(3, len(words))
            sentence = " ".join(words[:cut]) + ", " + " ".join(words[cut:])
        return sentence[0].upper() + sentence[1:] + "."

    def _chinese_sentence(self) -> str:
        rng = self.rng
        out = []
        for _ in range(rng.randint(3, 7)):
            out.append("".join(rng.choices(self.cjk_words, self.cjk_weights, k=rng.randint(2, 5))))
            out.append(rng.choice(CJK_PUNCT[:-1]))
        if rng.random() < 0.3:
            out.insert(rng.randrange(len(out)), f"EQ-{rng.randint(1, 9999):04d}")
        return "".join(out[:-1]) + "。"

    def paragraph(self) -> tuple[str, str]:
        """(kind, text); kinds: en (65%), zh (25%), mixed (10%)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.65:
            kind, text = "en", ""
            while len(text) < rng.randint(220, 480):
                text = (text + " " + self._english_sentence()).strip()
        elif roll < 0.90:
            kind, text = "zh", ""
            while len(text) < rng.randint(90, 180):
                text += self._chinese_sentence()
        else:
            kind = "mixed"
            text = self._english_sentence() + " " + self._chinese_sentence() + " " + self._english_sentence()
        return kind, text

    def title(self, number: str) -> str:
        rng = self.rng
        words = rng.choices(self.words[:1500], k=rng.randint(2, 5))
        title = f"{number} " + " ".join(words).capitalize()
        if rng.random() < 0.3:
            title += " " + "".join(rng.choices(self.cjk_words, self.cjk_weights, k=2))
        return title


@dataclass
class Block:
    kind: str  # "h1", "h2", "en", "zh", "mixed"
    text: str
    heading_path: list[str] = field(default_factory=list)


def generate(n: int) -> list[Block]:
    gen = Generator()
    blocks: list[Block] = []
    part = section = ""
    for i in range(n):
        if i % PART_EVERY == 0:
            part = gen.title(f"Part {i // PART_EVERY + 1}:")
            blocks.append(Block("h1", part, [part]))
        if i % SECTION_EVERY == 0:
            section = gen.title(f"{i // PART_EVERY + 1}.{(i % PART_EVERY) // SECTION_EVERY + 1}")
            blocks.append(Block("h2", section, [part, section]))
        kind, text = gen.paragraph()
        blocks.append(Block(kind, text, [part, section]))
    return blocks


def write_markdown(blocks: list[Block], path: Path) -> None:
    lines = []
    for block in blocks:
        prefix = {"h1": "# ", "h2": "## "}.get(block.kind, "")
        lines.append(prefix + block.text)
    path.write_text("\n\n".join(lines) + "\n", encoding="utf-8")


def write_docx(blocks: list[Block], path: Path) -> None:
    sys.path.insert(0, str(REPO_DIR))
    from mnote.demo import docx_writer as w

    content = [w.Heading(b.text, 1 if b.kind == "h1" else 2) if b.kind in ("h1", "h2") else w.Paragraph(b.text) for b in blocks]
    w.write_docx(w.Document(title="Locate bench: 10,000 paragraphs", blocks=content), path)


# --- locators -------------------------------------------------------------------


def _window(text: str, rng: random.Random, width: int = 200) -> str:
    if len(text) <= width:
        return text
    start = rng.randrange(0, len(text) - width)
    # Start and end on word boundaries for Latin text, like a chunk cut would.
    if " " in text:
        while start > 0 and text[start - 1] != " ":
            start -= 1
    return text[start:start + width]


def _two_words(window: str, kind: str, rng: random.Random) -> str:
    if kind == "zh":
        runs = [r for r in "".join(c if "\u4e00" <= c <= "\u9fff" else " " for c in window).split() if len(r) >= 2]
        picks = []
        for run in rng.sample(runs, min(2, len(runs))):
            start = rng.randrange(0, len(run) - 1)
            picks.append(run[start:start + 2])
        return " ".join(picks)
    words = [w.strip(".,;:()") for w in window.split()[1:-1]]
    words = [w for w in words if len(w) >= 4 and w.isalpha()]
    return " ".join(rng.sample(words, min(2, len(words))))


def build_locators(blocks: list[Block], seed: int = 77) -> tuple[list[dict], dict]:
    """WARM_LOCATORS locators on English paragraphs spread through the
    document, and one on a Chinese paragraph. Each carries its expected block."""
    rng = random.Random(seed)
    paragraph_blocks = [i for i, b in enumerate(blocks) if b.kind not in ("h1", "h2")]

    def locator(index: int) -> dict:
        block = blocks[index]
        window = _window(block.text, rng)
        return {
            "precision": "paragraph",
            "resourceKind": "markdown",
            "headingPath": block.heading_path,
            "evidenceText": f"{block.heading_path[-1]}\n{window}",
            "searchQuery": _two_words(window, block.kind, rng),
            "displayQuote": window,
            "_expected": index,
            "_kind": block.kind,
        }

    out = []
    span = len(paragraph_blocks)
    for k in range(WARM_LOCATORS):
        target = paragraph_blocks[int((k + 0.5) * span / WARM_LOCATORS) + rng.randrange(-5, 6)]
        while blocks[target].kind != "en":
            target += 1
        out.append(locator(target))
    zh = paragraph_blocks[int(span * 0.62)]
    while blocks[zh].kind != "zh":
        zh += 1
    return out, locator(zh)


# --- the app --------------------------------------------------------------------


# No LightRAG: the preview renders from the file alone. Nothing listens here.
NO_LIGHTRAG = {"MNOTE_LIGHTRAG_URL": "http://127.0.0.1:9"}


# --- in the page ----------------------------------------------------------------

NAV_TIMING = """() => {
  const n = performance.getEntriesByType("navigation")[0];
  return {responseStart: n.responseStart, responseEnd: n.responseEnd,
          domContentLoaded: n.domContentLoadedEventEnd, load: n.loadEventEnd,
          transferSize: n.transferSize, decodedBodySize: n.decodedBodySize};
}"""

# performance.now() has a coarse resolution in a page that is not
# cross-origin isolated, so each baseline pass is repeated and averaged.
TRIVIAL = """() => {
  const reps = 20;
  let n = 0;
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) n = document.querySelectorAll("[data-block-index]").length;
  const t1 = performance.now();
  let chars = 0;
  for (let i = 0; i < reps; i++) {
    chars = 0;
    for (const e of document.querySelectorAll("[data-block-index]")) chars += (e.textContent || "").length;
  }
  const t2 = performance.now();
  return {ms: (t1 - t0) / reps, textMs: (t2 - t1) / reps, blocks: n, chars};
}"""

LOCATE = """async (locator) => {
  const t0 = performance.now();
  const result = await window.mnoteLocate(locator);
  const t1 = performance.now();
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  const t2 = performance.now();
  const hit = Array.from(document.querySelectorAll(".mnote-hit")).map((e) => Number(e.dataset.blockIndex));
  return {ms: t1 - t0, framesMs: t2 - t0, result, hit};
}"""

BLOCK_INFO = """(indices) => indices.map((i) => {
  const e = document.querySelector(`[data-block-index="${i}"]`);
  return e ? {text: e.textContent.slice(0, 40), paraId: e.dataset.paraId || null, heading: e.dataset.headingLevel || null} : null;
})"""


class PreviewProblem(RuntimeError):
    """The preview page showed an error message instead of the document."""


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(values: list[float]) -> dict:
    return {
        "n": len(values),
        "median_ms": statistics.median(values) if values else None,
        "p95_ms": percentile(values, 95),
        "min_ms": min(values) if values else None,
        "max_ms": max(values) if values else None,
    }


def page_locator(loc: dict, kind: str, para_id: str | None = None) -> dict:
    out = {k: v for k, v in loc.items() if not k.startswith("_")}
    out["resourceKind"] = kind
    if para_id:
        out["paraIds"] = [para_id, para_id]
    return out


def measure_document(browser_context, base_url: str, source_id: int, kind: str, blocks: list[Block],
                     locators: list[dict], cjk: dict, loads: int) -> dict:
    url = f"{base_url}/preview/{source_id}/"
    page = browser_context.new_page()
    try:
        t0 = time.perf_counter()
        response = page.goto(url, wait_until="load", timeout=180_000)
        cold_wall = time.perf_counter() - t0
        if response is None or response.status != 200:
            raise SystemExit(f"{url}: HTTP {response.status if response else '?'}")
        cold_nav = page.evaluate(NAV_TIMING)
        problem = page.evaluate("() => (document.querySelector('.alert.error') || {}).textContent || ''")
        if problem.strip():
            raise PreviewProblem(f"the preview shows a problem after {cold_wall:.1f} s: {problem.strip()}")
        count = page.evaluate(TRIVIAL)["blocks"]
        if count != len(blocks):
            raise SystemExit(f"{url}: {count} blocks rendered, expected {len(blocks)}")
        expected = [loc["_expected"] for loc in locators] + [cjk["_expected"]]
        info = page.evaluate(BLOCK_INFO, expected)
        for index, got in zip(expected, info):
            want = blocks[index].text[:40]
            if not got or got["text"].strip()[:30] != want.strip()[:30]:
                raise SystemExit(f"{url}: block {index} is {got!r}, expected text {want!r}")
        para_ids = [i["paraId"] for i in info]

        nav, trivial, trivial_text, first, warm, warm_cjk, warm_para, frames = ([] for _ in range(8))
        checks = []

        def run(loc: dict, tag: str, para_id=None):
            out = page.evaluate(LOCATE, page_locator(loc, kind, para_id))
            result = out["result"]
            check = {
                "tag": tag,
                "expected": loc["_expected"],
                "blockIndex": result["blockIndex"],
                "status": result["status"],
                "score": result["score"],
                "hit": out["hit"],
                "exact": result["blockIndex"] == loc["_expected"],
                "landed": loc["_expected"] in out["hit"],
                "ms": out["ms"],
            }
            checks.append(check)
            frames.append(out["framesMs"])
            return out["ms"]

        for load in range(loads):
            page.goto(url, wait_until="load", timeout=180_000)
            nav.append(page.evaluate(NAV_TIMING))
            for _ in range(3):
                base = page.evaluate(TRIVIAL)
                trivial.append(base["ms"])
                trivial_text.append(base["textMs"])
            order = locators[load % len(locators):] + locators[: load % len(locators)]
            first.append(run(order[0], f"first (load {load + 1})"))
            for loc in order[1:]:
                warm.append(run(loc, "warm"))
            warm.append(run(order[0], "warm"))  # the first one again, now warm
            warm_cjk.append(run(cjk, "warm cjk"))
            if any(para_ids):
                for loc, para_id in zip(locators, para_ids):
                    warm_para.append(run(loc, "warm paraIds", para_id))
        # A first locate with paraIds on a fresh load (DOCX): the fast path still tokenises.
        first_para = []
        if any(para_ids):
            for load in range(loads):
                page.goto(url, wait_until="load", timeout=180_000)
                first_para.append(run(locators[load], f"first paraIds (load {load + 1})", para_ids[load]))

        rows = {
            "first_locate": summary(first),
            "warm_locate": summary(warm),
            "warm_locate_cjk": summary(warm_cjk),
            "locate_plus_2_frames": summary(frames),
            "trivial_query_selector_all": summary(trivial),
            "trivial_read_all_text": summary(trivial_text),
            "page_dom_content_loaded": summary([n["domContentLoaded"] for n in nav]),
            "page_load_event": summary([n["load"] for n in nav]),
            "page_response_end": summary([n["responseEnd"] for n in nav]),
        }
        if warm_para:
            rows["warm_locate_para_ids"] = summary(warm_para)
            rows["first_locate_para_ids"] = summary(first_para)
        return {
            "url_path": f"/preview/{source_id}/",
            "blocks": count,
            "html_bytes": nav[0]["decodedBodySize"],
            "cold_first_load": {"wall_s": cold_wall, **cold_nav},
            "rows": rows,
            "checks": checks,
        }
    finally:
        page.close()


def accuracy(checks: list[dict]) -> dict:
    groups: dict[str, list[dict]] = {}
    for c in checks:
        tag = c["tag"].split(" (")[0]
        groups.setdefault(tag, []).append(c)
    return {
        tag: {
            "n": len(rows),
            "exact_blockIndex": sum(c["exact"] for c in rows),
            "landed_in_highlight": sum(c["landed"] for c in rows),
            "status": dict(sorted({s: sum(1 for c in rows if c["status"] == s) for s in {c["status"] for c in rows}}.items())),
            "misses": [{k: c[k] for k in ("expected", "blockIndex", "status", "score", "hit")} for c in rows if not c["landed"]],
            "landed_not_first": [{k: c[k] for k in ("expected", "blockIndex", "status", "score", "hit")} for c in rows if c["landed"] and not c["exact"]],
        }
        for tag, rows in groups.items()
    }


def cdp_profile(context, base_url: str, source_id: int, kind: str, locators: list[dict], cjk: dict) -> dict:
    """V8 CPU profiles (Chrome DevTools Protocol) of a first locate, of the
    warm locators and of the CJK locator: self time per function."""
    page = context.new_page()
    session = context.new_cdp_session(page)
    out = {}
    try:
        page.goto(f"{base_url}/preview/{source_id}/", wait_until="load", timeout=180_000)
        session.send("Profiler.enable")
        session.send("Profiler.setSamplingInterval", {"interval": 100})

        def profiled(label, batch):
            session.send("Profiler.start")
            for loc in batch:
                page.evaluate(LOCATE, page_locator(loc, kind))
            profile = session.send("Profiler.stop")["profile"]
            nodes = {n["id"]: n for n in profile["nodes"]}
            self_us: dict[str, float] = {}
            for node_id, delta in zip(profile["samples"], profile["timeDeltas"]):
                frame = nodes[node_id]["callFrame"]
                name = frame["functionName"] or "(anonymous)"
                where = frame["url"].rsplit("/", 1)[-1]
                key = f"{name} {where}:{frame['lineNumber'] + 1}" if where else name
                self_us[key] = self_us.get(key, 0) + delta
            total = sum(self_us.values())
            top = sorted(self_us.items(), key=lambda kv: -kv[1])[:14]
            out[label] = {"locates": len(batch), "sampled_ms": total / 1000,
                          "self_ms": {k: round(v / 1000, 2) for k, v in top}}

        profiled("first locate", locators[:1])
        profiled("20 warm EN locates", locators[1:] + locators[:1])
        profiled("5 warm CJK locates", [cjk] * 5)
    finally:
        session.detach()
        page.close()
    return out


def fmt(value) -> str:
    if value is None:
        return "—"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}" if value >= 0.1 else f"{value:.3f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paragraphs", type=int, default=10_000, help="paragraphs in the document (default 10000)")
    parser.add_argument("--loads", type=int, default=3, help="fresh page loads per document (default 3)")
    parser.add_argument("--no-docx", action="store_true", help="skip the DOCX document")
    parser.add_argument("--profile", action="store_true", help="also V8-profile the locates on the Markdown document")
    parser.add_argument("--keep", action="store_true", help="keep the temporary dir")
    parser.add_argument("--no-json", action="store_true", help="do not write bench/results/locate_bench.json")
    args = parser.parse_args(argv)

    loadavg_start = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="mnote-locate-bench-"))
    web = None
    try:
        env, data_dir, base_dir = in_process_app_in(tmp, "bench", **NO_LIGHTRAG)
        import django

        django.setup()
        from mnote.stack.processes import StackConfig, web_process
        from mnote.stack.managed import free_port

        blocks = generate(args.paragraphs)
        files = [base_dir / "bench" / "ten-thousand-paragraphs.md"]
        write_markdown(blocks, files[0])
        docx = (REPO_DIR / "mnote" / "preview" / "docx_render.py").exists() and not args.no_docx
        if docx:
            files.append(base_dir / "bench" / "ten-thousand-paragraphs.docx")
            write_docx(blocks, files[1])
        sizes = {p.suffix: p.stat().st_size for p in files}
        kinds = {b.kind: sum(1 for x in blocks if x.kind == b.kind) for b in blocks}
        print(f"generated {len(blocks)} blocks ({kinds}); " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in sizes.items()), flush=True)
        registered = register_indexed("Locate bench", "bench", {str(p.relative_to(base_dir / "bench")): p for p in files})
        ids = {Path(relative).suffix: pk for relative, pk in registered.items()}
        locators, cjk = build_locators(blocks)

        port = free_port()
        web = web_process(StackConfig(data_dir=data_dir), "127.0.0.1", port, env)
        web.start()
        web.wait_healthy(60)
        base_url = f"http://127.0.0.1:{port}"
        print(f"web app (gunicorn, as production) at {base_url}", flush=True)

        from playwright.sync_api import sync_playwright

        results = {}
        profiles = {}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            chromium_version = browser.version
            try:
                context = browser.new_context(viewport={"width": 1200, "height": 900}, locale="en-US")
                page = context.new_page()
                log_in_page(page, base_url)
                page.close()
                for suffix, kind in ((".md", "markdown"), (".docx", "docx")):
                    if suffix not in ids:
                        continue
                    print(f"{kind}: opening the preview, {args.loads} loads x ({WARM_LOCATORS} + 2) locates …", flush=True)
                    try:
                        result = measure_document(context, base_url, ids[suffix], kind, blocks, locators, cjk, args.loads)
                    except PreviewProblem as e:
                        print(f"  {kind}: {e}", flush=True)
                        results[kind] = {"problem": str(e), "file_bytes": sizes[suffix]}
                        continue
                    result["accuracy"] = accuracy(result.pop("checks"))
                    result["file_bytes"] = sizes[suffix]
                    results[kind] = result
                if args.profile:
                    print("markdown: V8 CPU profile of the locates …", flush=True)
                    profiles = cdp_profile(context, base_url, ids[".md"], "markdown", locators, cjk)
                context.close()
            finally:
                browser.close()

        info = machine_info(dirty=("mnote/preview", "static/js/locate.js", "templates/preview"), chromium=chromium_version)
        info["loadavg_start"] = loadavg_start
        info["loadavg_end"] = os.getloadavg()
        labels = {
            "page_response_end": "baseline: HTML received (responseEnd)",
            "page_dom_content_loaded": "baseline: DOMContentLoaded",
            "page_load_event": "baseline: load event",
            "trivial_query_selector_all": "baseline: querySelectorAll(...).length",
            "trivial_read_all_text": "baseline: + textContent of every block",
            "first_locate": "first locate (tokenises all blocks)",
            "warm_locate": "warm locate (20 EN locators)",
            "warm_locate_cjk": "warm locate, CJK locator",
            "locate_plus_2_frames": "  info: any locate + 2 animation frames",
            "first_locate_para_ids": "first locate with paraIds",
            "warm_locate_para_ids": "warm locate with paraIds",
        }
        ratios = {}
        print()
        print(f"N={args.paragraphs} paragraphs, {len(blocks)} blocks; {args.loads} page loads; nproc={info['nproc']}; "
              f"chromium {chromium_version}; load average {loadavg_start[0]:.2f} → {info['loadavg_end'][0]:.2f}")
        for kind, result in results.items():
            if "problem" in result:
                print(f"\n{kind}: NOT MEASURED — {result['problem']}")
                continue
            rows = result["rows"]
            print(f"\n{kind}: {result['blocks']} blocks, HTML {result['html_bytes'] / 1e6:.1f} MB, "
                  f"cold first load {result['cold_first_load']['wall_s']:.2f} s (server render + cache)")
            print(f"  {'measurement':<44} {'median ms':>10} {'p95 ms':>9} {'max ms':>9} {'n':>4}")
            for key, label in labels.items():
                if key in rows:
                    r = rows[key]
                    print(f"  {label:<44} {fmt(r['median_ms']):>10} {fmt(r['p95_ms']):>9} {fmt(r['max_ms']):>9} {r['n']:>4}")
            dcl = rows["page_dom_content_loaded"]["median_ms"]
            ratios[kind] = {
                "first_locate / DOMContentLoaded": rows["first_locate"]["median_ms"] / dcl,
                "warm_locate / DOMContentLoaded": rows["warm_locate"]["median_ms"] / dcl,
                "warm_locate / querySelectorAll": rows["warm_locate"]["median_ms"] / rows["trivial_query_selector_all"]["median_ms"],
                "first_locate / read_all_text": rows["first_locate"]["median_ms"] / rows["trivial_read_all_text"]["median_ms"],
                "first_locate / warm_locate": rows["first_locate"]["median_ms"] / rows["warm_locate"]["median_ms"],
            }
            print("  ratios (medians): " + "; ".join(f"{k} {v:.2f}" for k, v in ratios[kind].items()))
            for tag, acc in result["accuracy"].items():
                print(f"  accuracy {tag:<14} exact blockIndex {acc['exact_blockIndex']}/{acc['n']}, "
                      f"landed in highlight {acc['landed_in_highlight']}/{acc['n']}, status {acc['status']}")
                for miss in acc["misses"][:5]:
                    print(f"    miss: {miss}")

        for label, prof in profiles.items():
            print(f"\nV8 profile, markdown, {label}: {prof['sampled_ms']:.1f} ms sampled; self time by function:")
            for name, value in prof["self_ms"].items():
                print(f"  {value:>9.2f} ms  {name}")

        if not args.no_json:
            RESULTS_DIR.mkdir(parents=True, exist_ok=True)
            out = {
                "benchmark": "locate_bench",
                "command": " ".join([".venv/bin/python", "bench/locate_bench.py", *(argv if argv is not None else sys.argv[1:])]),
                "machine": info,
                "document": {
                    "paragraphs": args.paragraphs,
                    "blocks": len(blocks),
                    "block_kinds": kinds,
                    "file_bytes": sizes,
                    "heading_every": {"h1": PART_EVERY, "h2": SECTION_EVERY},
                },
                "locators": [{k: v for k, v in loc.items()} for loc in locators + [cjk]],
                "results": results,
                "ratios_median": ratios,
                "v8_profiles_markdown": profiles,
            }
            RESULTS_FILE.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
            print(f"\nwrote {RESULTS_FILE.relative_to(REPO_DIR)}")
    finally:
        if web is not None:
            web.stop()
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

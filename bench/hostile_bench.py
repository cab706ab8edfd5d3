"""Hostile files against the real preview: every one rendered or refused
with a clear message within the time and memory targets, no 500, and the
login page still quick while four hostile renders run at once.

    .venv/bin/python bench/hostile_bench.py [--port 8500] [--fuzz 60] [--load-seconds 30] [--seed 1]

The hostile set (>= 60 files, every kind of the one table) is generated at
run time into a temporary folder, never committed: backtracking-bait
DOCTYPEs, 3,000-deep nesting in HTML/EPUB/XML/ODT/DOCX, 10,000 slides,
1,000,000 CSV rows, > 200 columns, ZIP bombs, NUL bytes, DTDs with entity
expansion, bad encodings, ZIP headers that lie about sizes. A mutation
fuzzer adds byte flips, zeroed runs and truncations of real files from
/work/shared/corpus (seeded, so a run can be repeated).

The app runs as `make run` serves it: gunicorn with the app's layout
(mnote.stack.processes.gunicorn_layout), on a fresh SQLite database and
data folder, logged in as a member. Each file is opened once
(``/preview/<id>/``, an uncached render) and once more (the cached render or
refusal); a sampler reads the peak resident memory of every reader process
the web workers start, and the web workers' own growth.

Then four threads open fresh hostile files (new content: nothing cached)
back to back while a fifth asks for the login page every 100 ms: its p50,
p95 and max, against the same page on the idle server in the same run.

Writes bench/results/hostile_bench.json.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from html import unescape
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx  # noqa: E402

from machine import machine_info  # noqa: E402
from mnote.stack.processes import gunicorn_layout  # noqa: E402
from stack_harness import gunicorn  # noqa: E402

RESULTS_FILE = REPO / "bench" / "results" / "hostile_bench.json"
CORPUS = Path(os.environ.get("MNOTE_CORPUS", REPO.parent / "shared" / "corpus"))
TARGET_S = 5.0
TARGET_MB = 300
TARGET_LOGIN_P95_S = 1.0
MB = 1024 * 1024

# --- the hostile set -----------------------------------------------------------

CT = "http://schemas.openxmlformats.org/package/2006/content-types"
PR = "http://schemas.openxmlformats.org/package/2006/relationships"
OR = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
P = "http://schemas.openxmlformats.org/presentationml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
LAUGHS = (
    '<!DOCTYPE lolz [<!ENTITY lol "lollollollollollollollollollol">'
    + "".join(f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10))
    + "]>"
)
EXTERNAL = '<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'


def zip_bytes(members: dict[str, bytes | str], *, level: int = 6) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as z:
        for name, data in members.items():
            z.writestr(name, data.encode() if isinstance(data, str) else data)
    return out.getvalue()


def lying_sizes(data: bytes, factor: int | None = None, size: int = 1) -> bytes:
    """The ZIP with every header's uncompressed size replaced (tiny, or ``factor`` times too big)."""
    data = bytearray(data)
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (at := data.find(signature, start)) >= 0:
            real = struct.unpack_from("<I", data, at + offset)[0]
            struct.pack_into("<I", data, at + offset, min(real * factor, 0xFFFFFFFE) if factor else size)
            start = at + 4
    return bytes(data)


def zip_bomb(name: str, around: dict[str, bytes | str], mb: int = 200) -> bytes:
    """A package whose ``name`` member inflates to ``mb`` MB of one byte."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for member, data in around.items():
            z.writestr(member, data)
        with z.open(name, "w", force_zip64=True) as f:
            block = b"\0" * MB
            for _ in range(mb):
                f.write(block)
    return out.getvalue()


def docx(body: str, prolog: str = "") -> bytes:
    return zip_bytes({
        "[Content_Types].xml": f'<Types xmlns="{CT}"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        "_rels/.rels": f'<Relationships xmlns="{PR}"><Relationship Id="rId1" Type="{OR}/officeDocument" Target="word/document.xml"/></Relationships>',
        "word/document.xml": f'<?xml version="1.0"?>{prolog}<w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>',
    })  # fmt: skip


def docx_members(body: str) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(docx(body))) as z:
        return {n: z.read(n).decode() for n in z.namelist()}


def para(text: str) -> str:
    return f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"


def pptx(slides: int, slide_body: str = "", prolog: str = "", nonce: str = "") -> bytes:
    shape = (slide_body or f'<p:sp><p:txBody><a:p><a:r><a:t>Slide text {nonce}</a:t></a:r></a:p></p:txBody></p:sp>')
    slide = f'<?xml version="1.0"?>{prolog}<p:sld xmlns:p="{P}" xmlns:a="{A}"><p:cSld><p:spTree>{shape}</p:spTree></p:cSld></p:sld>'
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", f'<Types xmlns="{CT}"><Default Extension="xml" ContentType="application/xml"/>'
                   '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/></Types>')
        z.writestr("_rels/.rels", f'<Relationships xmlns="{PR}"><Relationship Id="rId1" Type="{OR}/officeDocument" Target="ppt/presentation.xml"/></Relationships>')
        ids = "".join(f'<p:sldId id="{256 + i}" r:id="rId{i + 1}"/>' for i in range(slides))
        z.writestr("ppt/presentation.xml", f'<p:presentation xmlns:p="{P}" xmlns:r="{OR}"><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>')
        rels = "".join(f'<Relationship Id="rId{i + 1}" Type="{OR}/slide" Target="slides/slide{i + 1}.xml"/>' for i in range(slides))
        z.writestr("ppt/_rels/presentation.xml.rels", f'<Relationships xmlns="{PR}">{rels}</Relationships>')
        for i in range(slides):
            z.writestr(f"ppt/slides/slide{i + 1}.xml", slide)
    return out.getvalue()  # fmt: skip


def xlsx(rows_xml: str, *, shared: str = "", sheets: int = 1, sheet_name: str = "sheet1.xml", prolog: str = "") -> bytes:
    sheet_list = "".join(f'<sheet name="S{i}" sheetId="{i + 1}" r:id="rId{i + 1}"/>' for i in range(sheets))
    rels = "".join(f'<Relationship Id="rId{i + 1}" Type="{OR}/worksheet" Target="worksheets/{sheet_name if i == 0 else f"s{i}.xml"}"/>' for i in range(sheets))
    members = {
        "[Content_Types].xml": f'<Types xmlns="{CT}"><Default Extension="xml" ContentType="application/xml"/></Types>',
        "_rels/.rels": f'<Relationships xmlns="{PR}"><Relationship Id="rId1" Type="{OR}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<workbook xmlns="{S}" xmlns:r="{OR}"><sheets>{sheet_list}</sheets></workbook>',
        "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="{PR}">{rels}'
        + (f'<Relationship Id="rIdS" Type="{OR}/sharedStrings" Target="sharedStrings.xml"/>' if shared else "") + "</Relationships>",
        f"xl/worksheets/{sheet_name}": f'{prolog}<worksheet xmlns="{S}"><sheetData>{rows_xml}</sheetData></worksheet>',
    }
    for i in range(1, sheets):
        members[f"xl/worksheets/s{i}.xml"] = f'<worksheet xmlns="{S}"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>sheet {i}</t></is></c></row></sheetData></worksheet>'
    if shared:
        members["xl/sharedStrings.xml"] = shared
    return zip_bytes(members)  # fmt: skip


def epub(chapter: bytes | str, *, chapters: int = 1, opf_extra: str = "") -> bytes:
    items = "".join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>' for i in range(chapters))
    spine = "".join(f'<itemref idref="c{i}"/>' for i in range(chapters))
    members: dict[str, bytes | str] = {
        "mimetype": "application/epub+zip",
        "META-INF/container.xml": '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
        "OEBPS/content.opf": f'{opf_extra}<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata/><manifest>{items}</manifest><spine>{spine}</spine></package>',
    }
    for i in range(chapters):
        members[f"OEBPS/c{i}.xhtml"] = chapter
    return zip_bytes(members)  # fmt: skip


def odt(text_xml: str, prolog: str = "") -> bytes:
    ns = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"')
    return zip_bytes({
        "mimetype": "application/vnd.oasis.opendocument.text",
        "content.xml": f'<?xml version="1.0"?>{prolog}<office:document-content {ns}><office:body><office:text>{text_xml}</office:text></office:body></office:document-content>',
    })  # fmt: skip


def xhtml(body: str, head: str = "") -> str:
    return f'<?xml version="1.0"?>{head}<html xmlns="http://www.w3.org/1999/xhtml"><body>{body}</body></html>'


def nested(tag: str, depth: int, inner: str = "deep text") -> str:
    return f"<{tag}>" * depth + inner + f"</{tag}>" * depth


def million_rows(nonce: str = "") -> bytes:
    return "".join(f"{i},{nonce}name {i},{i * 3}\n" for i in range(1_000_000)).encode()


def redos_html(nonce: str = "") -> bytes:
    return f'<!DOCTYPE {"[]" * 40}[\n<p>x {nonce}</p>\n'.encode()


def wide_xlsx() -> bytes:
    # Data in GW10:GY10 (columns 205-207), past the preview's first 200 columns.
    cells = "".join(f'<c r="G{c}10" t="inlineStr"><is><t>far {c}</t></is></c>' for c in "WXY")
    return xlsx(f'<row r="10">{cells}</row>')


def png_header_only() -> bytes:
    # A PNG that claims 100,000 x 100,000 pixels and holds none.
    ihdr = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\0\0\0\0"


def hostile_files() -> dict[str, bytes]:
    """Name → content; every kind of the table, each attack its own file."""
    deep3000 = nested("div", 3000)
    files: dict[str, bytes | str] = {
        # HTML
        "html/redos-doctype.html": redos_html(),
        "html/redos-doctype-nested.html": "<!DOCTYPE html [" + "[<!-- -->]" * 30 + "\n<p>x",
        "html/redos-doctype-quotes.html": '<!DOCTYPE html "' + "[]'" * 40 + "\n<p>x</p>",
        "html/deep-3000.html": f"<html><body>{deep3000}</body></html>",
        "html/deep-100000.html": "<b>" * 100_000 + "x",
        "html/nul-bytes.html": b"<html><body><p>before\0after</p>\0\0<p>more</p></body></html>",
        "html/bad-encoding.html": b'<meta charset="x-no-such-charset"><p>\xff\xfe\xc3\x28 text</p>',
        "html/billion-laughs.html": f"{LAUGHS}<html><body><p>&lol9;</p></body></html>",
        "html/external-entity.html": f"{EXTERNAL}<html><body><p>&xxe;</p></body></html>",
        "html/huge-line.html": "<p>" + "word " * 1_200_000 + "</p>",
        "html/attribute-storm.html": "<p " + " ".join(f'a{i}="{i}"' for i in range(100_000)) + ">x</p>",
        "html/comment-never-ends.html": "<p>x</p><!--" + "-" * 2_000_000,
        # EPUB
        "epub/deep-3000.epub": epub(xhtml(deep3000)),
        "epub/billion-laughs.epub": epub(xhtml("<p>&lol9;</p>", LAUGHS)),
        "epub/redos-doctype.epub": epub(redos_html()),
        "epub/zip-bomb.epub": zip_bomb("OEBPS/c0.xhtml", {"mimetype": "application/epub+zip"}),
        "epub/lying-sizes.epub": lying_sizes(epub(xhtml("<p>small</p>" * 5000))),
        "epub/5000-chapters.epub": epub(xhtml("<p>chapter</p>"), chapters=5000),
        "epub/nul-bytes.epub": epub(b"<html>\0<body><p>x\0y</p></body></html>"),
        "epub/opf-entities.epub": epub(xhtml("<p>x</p>"), opf_extra=LAUGHS),
        # XML and other code kinds
        "code/deep-3000.xml": nested("a", 3000),
        "code/billion-laughs.xml": f"{LAUGHS}<a>&lol9;</a>",
        "code/deep-json.json": "[" * 200_000 + "]" * 200_000,
        "code/huge-line.js": "var a = '" + "x" * 1_900_000 + "';",
        "code/lexer-bait.py": "'''" + "\\'''" * 100_000,
        "code/nul-bytes.py": b"print('x')\0\0\0" * 1000,
        "code/yaml-anchors.yaml": "a: &a [" + ",".join(["x"] * 10) + "]\n" + "".join(f"a{i}: &a{i} [*a{i - 1 if i > 1 else ''},*a{i - 1 if i > 1 else ''}]\n" for i in range(1, 30)),
        "code/bad-encoding.ini": b"[s]\nkey=\xff\xfe\x80\x81 value\n" * 5000,
        # CSV
        "csv/million-rows.csv": million_rows(),
        "csv/300-columns.csv": "\n".join(",".join(f"r{r}c{c}" for c in range(300)) for r in range(300)),
        "csv/one-huge-field.csv": '"' + "x" * 3_000_000 + '"\n',
        "csv/quote-never-closed.csv": 'a,b\n"' + "line\n" * 100_000,
        "csv/nul-bytes.csv": b"a,b\n1,\0\0\n" * 10_000,
        "csv/bad-encoding.csv": b"name,value\n\xff\xfe\x80,1\n" * 10_000,
        "csv/sniffer-bait.csv": ("'" + "a" * 4000 + "'" + ";" * 4000 + "\n") * 3,
        "csv/fifty-mb.csv": b"x," * (26 * MB),
        # XLSX
        "xlsx/300-columns.xlsx": xlsx('<row r="1">' + "".join(f'<c t="inlineStr"><is><t>c{i}</t></is></c>' for i in range(300)) + "</row>"),
        "xlsx/data-past-column-200.xlsx": wide_xlsx(),
        "xlsx/million-rows.xlsx": xlsx("".join(f'<row r="{i}"><c r="A{i}"><v>{i}</v></c></row>' for i in range(1, 1_000_001))),
        "xlsx/zip-bomb.xlsx": zip_bomb("xl/worksheets/sheet1.xml", {"[Content_Types].xml": "<Types/>"}),
        "xlsx/lying-sizes.xlsx": lying_sizes(xlsx('<row r="1"><c r="A1"><v>1</v></c></row>' * 2000)),
        "xlsx/billion-laughs.xlsx": xlsx('<row r="1"><c r="A1" t="s"><v>0</v></c></row>', shared=f'{LAUGHS}<sst xmlns="{S}"><si><t>&lol9;</t></si></sst>'),
        "xlsx/sheet-stored-as-bin.xlsx": xlsx('<row r="1"><c r="A1"><v>1</v></c></row>', sheet_name="sheet1.bin"),
        "xlsx/deep-3000.xlsx": xlsx('<row r="1"><c r="A1" t="inlineStr"><is>' + nested("r", 3000, "<t>x</t>") + "</is></c></row>"),
        "xlsx/250-sheets.xlsx": xlsx('<row r="1"><c r="A1"><v>1</v></c></row>', sheets=250),
        "xlsx/million-shared-strings.xlsx": xlsx('<row r="1"><c r="A1" t="s"><v>999999</v></c></row>', shared=f'<sst xmlns="{S}">' + "<si><t>s</t></si>" * 1_100_000 + "</sst>"),
        # PPTX
        "pptx/10000-slides.pptx": pptx(10_000),
        "pptx/1990-slides.pptx": pptx(1_990),
        "pptx/deep-3000.pptx": pptx(1, nested("p:grpSp", 3000, "")),
        "pptx/billion-laughs.pptx": pptx(1, '<p:sp><p:txBody><a:p><a:r><a:t>&lol9;</a:t></a:r></a:p></p:txBody></p:sp>', prolog=LAUGHS),
        "pptx/zip-bomb.pptx": zip_bomb("ppt/slides/slide1.xml", {"[Content_Types].xml": "<Types/>"}),
        "pptx/lying-sizes.pptx": lying_sizes(pptx(50), factor=1000),
        # ODT
        "odt/deep-lists-3000.odt": odt(nested("text:list", 3000, "<text:p>deep</text:p>")),
        "odt/deep-spans-3000.odt": odt("<text:p>" + nested("text:span", 3000) + "</text:p>"),
        "odt/billion-laughs.odt": odt("<text:p>&lol9;</text:p>", LAUGHS),
        "odt/external-entity.odt": odt("<text:p>&xxe;</text:p>", EXTERNAL),
        "odt/zip-bomb.odt": zip_bomb("content.xml", {"mimetype": "application/vnd.oasis.opendocument.text"}),
        "odt/lying-sizes.odt": lying_sizes(odt("<text:p>x</text:p>" * 3000)),
        # DOCX
        "docx/deep-tables.docx": docx(nested("w:tbl", 3000, "")),
        "docx/billion-laughs.docx": docx(para("&lol9;"), LAUGHS),
        "docx/zip-bomb.docx": zip_bomb("word/document.xml", {k: v for k, v in docx_members("").items() if k != "word/document.xml"}),
        "docx/lying-sizes.docx": lying_sizes(docx(para("text") * 5000), factor=1000),
        "docx/120000-paragraphs.docx": docx(para("p") * 120_000),
        "docx/nul-in-text.docx": docx("<w:p><w:r><w:t>a&#0;b</w:t></w:r></w:p>"),
        # RTF
        "rtf/deep-groups.rtf": "{\\rtf1 " + "{" * 100_000 + "x" + "}" * 100_000 + "}",
        "rtf/nul-bytes.rtf": b"{\\rtf1\\ansi Hello \0 world\\par}",
        "rtf/huge-bin.rtf": b"{\\rtf1 \\bin999999999 x}",
        "rtf/unicode-junk.rtf": "{\\rtf1 " + "\\u-99999?" * 50_000 + "}",
        "rtf/truncated.rtf": "{\\rtf1{\\fonttbl{\\f0 Arial;}}{\\colortbl;" + "\\red255" * 100_000,
        # Text, Markdown
        "text/nul-bytes.txt": b"text\0" * 10_000,
        "text/bad-encoding.txt": b"\xff\xfe\xfd\x80\x81\x82 " * 100_000,
        "text/huge-line.log": "x" * 6 * MB,
        "markdown/nested-quotes.md": ">" * 100_000 + " deep",
        "markdown/nested-lists.md": "".join("  " * i + "- item\n" for i in range(5_000)),
        "markdown/link-bait.md": "[" * 100_000 + "](" * 100_000,
        # Images
        "image/header-only.png": png_header_only(),
        "image/misnamed.jpg": b"\x89PNG\r\n\x1a\n" + b"\0" * 100,
        "image/not-an-image.gif": b"<svg onload=alert(1)>",
        "image/too-large.bmp": b"BM" + b"\0" * (51 * MB),
        # TextBundle, PDF
        "textpack/zip-bomb.textpack": zip_bomb("text.md", {}),
        "textpack/no-text.textpack": zip_bytes({"info.json": "{}"}),
        "textpack/deep-markdown.textpack": zip_bytes({"text.md": ">" * 50_000 + " x"}),
        "pdf/truncated.pdf": b"%PDF-1.7\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n",
        "pdf/deep-arrays.pdf": b"%PDF-1.4\n1 0 obj" + b"[" * 100_000 + b"\n%%EOF",
        "pdf/nul-bytes.pdf": b"%PDF-1.4\n" + b"\0" * 100_000,
    }  # fmt: skip
    return {name: (data.encode() if isinstance(data, str) else data) for name, data in files.items()}


def load_files(rounds: int) -> dict[str, bytes]:
    """Fresh hostile files (new content each, nothing cached) for the load phase."""
    makers = {
        "html": lambda n: redos_html(n),
        "csv": lambda n: million_rows(n),
        "pptx": lambda n: pptx(1_990, nonce=n),
        "xml": lambda n: (f"<!-- {n} -->" + nested("a", 3000)).encode(),
    }
    return {f"load/{kind}-{i}.{kind}": make(f"round {i}") for i in range(rounds) for kind, make in makers.items()}


# --- the mutation fuzzer ---------------------------------------------------------


def mutants(count: int, rng: random.Random) -> dict[str, bytes]:
    """Byte flips, zeroed runs and truncations of real files from the corpus."""
    pool = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.suffix.lower() in
                  {".docx", ".xlsx", ".pptx", ".epub", ".odt", ".pdf"} and p.stat().st_size < 8 * MB)  # fmt: skip
    out = {}
    for i in range(count):
        path = rng.choice(pool)
        data = bytearray(path.read_bytes())
        how = rng.choice(("flip", "zero", "truncate"))
        if how == "flip":
            for _ in range(rng.randint(1, 40)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif how == "zero":
            at = rng.randrange(len(data))
            run = min(rng.randint(16, 4096), len(data) - at)
            data[at : at + run] = bytes(run)
        else:
            data = data[: rng.randrange(1, len(data))]
        out[f"fuzz/{i:03d}-{how}-{path.name}"] = bytes(data)
    return out


# --- the app ---------------------------------------------------------------------

SEED = """
import json, sys
import django; django.setup()
from django.contrib.auth import get_user_model
from mnote.library.models import IndexedRoot, Source
root = IndexedRoot.objects.create(name="Hostile", path="hostile")
ids = {}
for name in json.load(sys.stdin):
    path = root.path + "/" + name
    ids[name] = Source.objects.create(root=root, relative_path=name, absolute_path=sys.argv[1] + "/" + path,
                                      status=Source.Status.INDEXED).pk
get_user_model().objects.create_user("bench", password="bench-pass-123")
print(json.dumps(ids))
"""


def prepare(folder: Path, files: dict[str, bytes]) -> tuple[dict, dict[str, int]]:
    library = folder / "library"
    for name, data in files.items():
        path = library / "hostile" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MNOTE_", "DATABASE_URL"))}
    env.update(
        DJANGO_SETTINGS_MODULE="mnote.settings",
        MNOTE_DATA_DIR=str(folder / "data"),
        MNOTE_SECRET_KEY="hostile-bench",
        MNOTE_LIBRARY_BASE_DIR=str(library),
        MNOTE_LIGHTRAG_URL="http://127.0.0.1:9",
        MNOTE_LIGHTRAG_INPUT_DIR=str(folder / "inputs"),
        MNOTE_LIGHTRAG_WORKING_DIR=str(folder / "rag_storage"),
        MNOTE_PREVIEW_RENDERS_PER_MINUTE="0",
        MNOTE_LOG_LEVEL="WARNING",
    )
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], env=env, cwd=REPO, check=True)
    seeded = subprocess.run([sys.executable, "-c", SEED, str(library)], input=json.dumps(sorted(files)), env=env,
                            cwd=REPO, check=True, capture_output=True, text=True)  # fmt: skip
    return env, json.loads(seeded.stdout.strip().splitlines()[-1])


def serve(env: dict, port: int, log: Path) -> subprocess.Popen:
    return gunicorn(env, port, log, *gunicorn_layout(), "--timeout", "120")


def log_in(base: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=120)
    client.get("/accounts/login/")
    token = client.cookies["csrftoken"]
    done = client.post("/accounts/login/", data={"username": "bench", "password": "bench-pass-123",
                                                 "csrfmiddlewaretoken": token}, headers={"Referer": base + "/accounts/login/"})  # fmt: skip
    if "sessionid" not in client.cookies:
        raise SystemExit(f"login failed ({done.status_code})")
    return client


class MemorySampler:
    """Peak resident memory of the readers the web workers start, and of the workers themselves."""

    def __init__(self, master_pid: int):
        self.master = master_pid
        self.reader_peak_kb = 0
        self.worker_kb: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def workers(self) -> list[int]:
        return [pid for pid, ppid in _processes() if ppid == self.master]

    def reset(self) -> None:
        self.reader_peak_kb = 0

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            workers = set(self.workers())
            for pid, ppid in _processes():
                if ppid in workers:
                    self.reader_peak_kb = max(self.reader_peak_kb, _status_kb(pid, "VmHWM"))
            for pid in workers:
                self.worker_kb[pid] = _status_kb(pid, "VmRSS")

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _processes() -> list[tuple[int, int]]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    found.append((int(entry), int(f.read().rsplit(")", 1)[1].split()[1])))
            except (OSError, IndexError, ValueError):
                continue
    return found


def _status_kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


ALERT = re.compile(r'<div class="alert error" role="alert">(.*?)</div>', re.S)


def classify(response: httpx.Response) -> tuple[str, str]:
    if response.status_code >= 500:
        return "500", f"HTTP {response.status_code}"
    page = response.text
    alert = ALERT.search(page)
    if alert:
        return "refused", " ".join(unescape(alert.group(1)).split())
    document = page.split('id="document"', 1)[-1]
    if "data-block-index" in document or 'class="pdf-page"' in document or "<img" in document:
        return "rendered", ""
    return "blank", f"HTTP {response.status_code} with nothing shown"


def open_all(client: httpx.Client, ids: dict[str, int], names: list[str], sampler: MemorySampler) -> list[dict]:
    rows = []
    for name in names:
        sampler.reset()
        time.sleep(0.03)
        started = time.monotonic()
        try:
            first = client.get(f"/preview/{ids[name]}/")
        except httpx.HTTPError as e:
            rows.append({"file": name, "outcome": "no answer", "message": repr(e), "seconds": time.monotonic() - started})
            continue
        seconds = time.monotonic() - started
        time.sleep(0.05)
        outcome, message = classify(first)
        started = time.monotonic()
        again = client.get(f"/preview/{ids[name]}/")
        rows.append({
            "file": name, "outcome": outcome, "message": message, "status": first.status_code, "seconds": round(seconds, 3),
            "again_seconds": round(time.monotonic() - started, 3), "again_outcome": classify(again)[0],
            "reader_peak_mb": round(sampler.reader_peak_kb / 1024, 1),
        })  # fmt: skip
        print(f"  {rows[-1]['outcome']:9} {seconds:6.2f} s {rows[-1]['reader_peak_mb']:6.0f} MB  {name}: {message[:90]}", flush=True)
    return rows


def login_latency(base: str, seconds: float, stop: threading.Event | None = None) -> list[float]:
    times = []
    with httpx.Client(base_url=base, timeout=60) as http:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not (stop and stop.is_set()):
            started = time.monotonic()
            http.get("/accounts/login/")
            times.append(time.monotonic() - started)
            time.sleep(0.1)
    return times


def under_load(base: str, cookies, ids: dict[str, int], load_names: list[str], seconds: float) -> dict:
    queue = list(load_names)
    lock = threading.Lock()
    outcomes = []

    def hostile_reader():
        with httpx.Client(base_url=base, cookies=cookies, timeout=120) as http:
            while True:
                with lock:
                    if not queue:
                        return
                    name = queue.pop(0)
                started = time.monotonic()
                response = http.get(f"/preview/{ids[name]}/")
                outcomes.append((classify(response)[0], time.monotonic() - started))

    readers = [threading.Thread(target=hostile_reader) for _ in range(4)]
    for t in readers:
        t.start()
    time.sleep(0.5)
    latencies = login_latency(base, seconds)
    with lock:
        queue.clear()
    for t in readers:
        t.join()
    return {"latencies": latencies, "hostile_opened": len(outcomes),
            "hostile_outcomes": {k: sum(1 for o, _s in outcomes if o == k) for k in {o for o, _s in outcomes}}}  # fmt: skip


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8500)
    parser.add_argument("--fuzz", type=int, default=60, help="mutants of corpus files")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--load-seconds", type=float, default=30)
    parser.add_argument("--load-rounds", type=int, default=6, help="fresh files of each of the 4 load kinds")
    parser.add_argument("--only", default="", help="only hostile files whose name holds this")
    parser.add_argument("--no-json", action="store_true")
    args = parser.parse_args(argv)

    print("generating the hostile set ...", flush=True)
    hostile = {k: v for k, v in hostile_files().items() if args.only in k}
    fuzz = mutants(args.fuzz, random.Random(args.seed)) if not args.only else {}
    load = load_files(args.load_rounds) if args.load_seconds > 0 else {}
    folder = Path(tempfile.mkdtemp(prefix="hostile-bench-"))
    try:
        env, ids = prepare(folder, {**hostile, **fuzz, **load})
        print(f"{len(hostile)} hostile files, {len(fuzz)} mutants, {len(load)} load files in {folder}", flush=True)
        web = serve(env, args.port, folder / "web.log")
        base = f"http://127.0.0.1:{args.port}"
        sampler = MemorySampler(web.pid).start()
        try:
            workers_before = {pid: _status_kb(pid, "VmRSS") for pid in sampler.workers()}
            client = log_in(base)
            idle = login_latency(base, 5)
            print("opening each file (uncached, then cached):", flush=True)
            rows = open_all(client, ids, sorted(hostile) + sorted(fuzz), sampler)
            workers_after = dict(sampler.worker_kb)
            loaded = under_load(base, client.cookies, ids, sorted(load, key=lambda n: n.split("-")[-1]), args.load_seconds) if load else None
        finally:
            sampler.stop()
            web.terminate()
            web.wait(30)
        log_tail = (folder / "web.log").read_text(errors="replace")[-4000:]
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    report = summarise(rows, idle, loaded, workers_before, workers_after, len(hostile), len(fuzz))
    print_report(report, rows)
    if "Traceback" in log_tail:
        print("\nweb log (tail):\n" + log_tail)
    if not args.no_json:
        RESULTS_FILE.parent.mkdir(parents=True, exist_ok=True)
        RESULTS_FILE.write_text(json.dumps({
            "benchmark": "hostile_bench", "command": "python bench/hostile_bench.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": machine_info(dirty=("mnote/preview",)), "summary": report, "files": rows,
        }, indent=2, ensure_ascii=False) + "\n")  # fmt: skip
        print(f"\nwrote {RESULTS_FILE.relative_to(REPO)}")
    return 0


def summarise(rows, idle, loaded, workers_before, workers_after, hostile_count, fuzz_count) -> dict:
    outcomes = {}
    for row in rows:
        outcomes[row["outcome"]] = outcomes.get(row["outcome"], 0) + 1
    slow = [r["file"] for r in rows if r.get("seconds", 99) > TARGET_S]
    big = [r["file"] for r in rows if r.get("reader_peak_mb", 0) > TARGET_MB]
    unclear = [r["file"] for r in rows if r["outcome"] not in ("rendered", "refused")]
    growth = max([(workers_after.get(pid, kb) - kb) / 1024 for pid, kb in workers_before.items()] + [0])
    report = {
        "files": len(rows), "hostile": hostile_count, "mutants": fuzz_count, "outcomes": outcomes,
        "responses_500": outcomes.get("500", 0), "unclear": unclear,
        f"over_{TARGET_S:g}_s": slow, f"over_{TARGET_MB}_mb": big,
        "seconds_max": max((r.get("seconds", 0) for r in rows), default=0),
        "seconds_p95": percentile([r.get("seconds", 0) for r in rows], 0.95),
        "again_seconds_max": max((r.get("again_seconds", 0) for r in rows), default=0),
        "reader_peak_mb_max": max((r.get("reader_peak_mb", 0) for r in rows), default=0),
        "web_worker_growth_mb_max": round(growth, 1),
        "login_idle": {"n": len(idle), "p50_s": statistics.median(idle), "p95_s": percentile(idle, 0.95)},
    }  # fmt: skip
    if loaded:
        lat = loaded["latencies"]
        report["login_under_4_hostile"] = {
            "n": len(lat), "p50_s": statistics.median(lat), "p95_s": percentile(lat, 0.95), "max_s": max(lat),
            "hostile_opened": loaded["hostile_opened"], "hostile_outcomes": loaded["hostile_outcomes"],
        }  # fmt: skip
    return report


def print_report(report: dict, rows: list[dict]) -> None:
    print(f"\n{'kind':10}{'files':>7}{'rendered':>10}{'refused':>9}{'other':>7}{'max s':>8}{'max MB':>8}")
    kinds: dict[str, list[dict]] = {}
    for row in rows:
        kinds.setdefault(row["file"].split("/")[0], []).append(row)
    for kind, group in sorted(kinds.items()):
        print(f"{kind:10}{len(group):7}{sum(r['outcome'] == 'rendered' for r in group):10}"
              f"{sum(r['outcome'] == 'refused' for r in group):9}{sum(r['outcome'] not in ('rendered', 'refused') for r in group):7}"
              f"{max(r.get('seconds', 0) for r in group):8.2f}{max(r.get('reader_peak_mb', 0) for r in group):8.0f}")  # fmt: skip
    print(f"\n{report['files']} files ({report['hostile']} hostile, {report['mutants']} mutants): {report['outcomes']}")
    print(f"500s: {report['responses_500']}; unclear (blank or no answer): {report['unclear'] or 'none'}")
    print(f"first open: p95 {report['seconds_p95']:.2f} s, max {report['seconds_max']:.2f} s (target {TARGET_S:g} s); "
          f"over: {report[f'over_{TARGET_S:g}_s'] or 'none'}")  # fmt: skip
    print(f"again (cached): max {report['again_seconds_max']:.2f} s")
    print(f"reader peak RSS max {report['reader_peak_mb_max']:.0f} MB (target {TARGET_MB}); web worker growth max "
          f"{report['web_worker_growth_mb_max']:.0f} MB")  # fmt: skip
    idle = report["login_idle"]
    print(f"login page idle: p50 {idle['p50_s'] * 1000:.0f} ms, p95 {idle['p95_s'] * 1000:.0f} ms (n={idle['n']})")
    if "login_under_4_hostile" in report:
        load = report["login_under_4_hostile"]
        print(f"login page, 4 hostile renders at once: p50 {load['p50_s'] * 1000:.0f} ms, p95 {load['p95_s'] * 1000:.0f} ms, "
              f"max {load['max_s'] * 1000:.0f} ms (n={load['n']}; target p95 {TARGET_LOGIN_P95_S:g} s); "
              f"hostile opened {load['hostile_opened']}: {load['hostile_outcomes']}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())

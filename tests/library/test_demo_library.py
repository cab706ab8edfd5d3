"""The checked-in demo library matches its generator and has the shape other tests rely on."""

import posixpath
import re
import zipfile
from pathlib import Path

import pytest
from lxml import etree

from mnote.demo.build_demo import LIBRARY, LIBRARY_DIR, build

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
W14 = "http://schemas.microsoft.com/office/word/2010/wordml"
M = "http://schemas.openxmlformats.org/officeDocument/2006/math"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
CONTENT_TYPES = "http://schemas.openxmlformats.org/package/2006/content-types"
PACKAGE_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
MC_IGNORABLE = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Ignorable"

DOCX_FILES = sorted(name for name in LIBRARY if name.endswith(".docx"))
HANDBOOK = "zh/实验室安全手册.docx"
REGENERATE = "regenerate with: python -m mnote.demo.build_demo mnote/demo/library"


def w(tag: str) -> str:
    return f"{{{W}}}{tag}"


def parts(name: str) -> dict[str, etree._Element]:
    with zipfile.ZipFile(LIBRARY_DIR / name) as archive:
        return {part: etree.fromstring(archive.read(part)) for part in archive.namelist()}


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_it_regenerates_the_checked_in_library_byte_for_byte(tmp_path):
    build(tmp_path)

    regenerated, checked_in = files_under(tmp_path), files_under(LIBRARY_DIR)

    assert sorted(checked_in) == sorted(regenerated) == sorted(LIBRARY), REGENERATE
    for name, content in regenerated.items():
        assert checked_in[name] == content, f"{name} differs from its generator; {REGENERATE}"


def test_its_text_documents_are_utf8_with_unix_newlines():
    # They are their own source: an editor must not turn them into another encoding or CRLF.
    for name in (name for name in LIBRARY if not name.endswith(".docx")):
        content = (LIBRARY_DIR / name).read_bytes()
        assert b"\r" not in content and content.endswith(b"\n"), name
        content.decode("utf-8")


def test_it_regenerates_identical_bytes_on_every_run(tmp_path):
    build(tmp_path / "first")
    build(tmp_path / "second")

    assert files_under(tmp_path / "first") == files_under(tmp_path / "second")


@pytest.mark.parametrize("name", DOCX_FILES)
def test_it_gives_every_docx_paragraph_a_unique_para_id(name):
    package = parts(name)
    paragraphs = [p for part in package.values() for p in part.iter(w("p"))]
    para_ids = [p.get(f"{{{W14}}}paraId") for p in paragraphs]
    text_ids = [p.get(f"{{{W14}}}textId") for p in paragraphs]

    assert paragraphs
    for value in para_ids + text_ids:
        # MS-DOCX: 8 hex digits, strictly below 0x80000000.
        assert value is not None and re.fullmatch(r"[0-9A-F]{8}", value), value
        assert int(value, 16) < 0x80000000, value
    assert len(set(para_ids)) == len(para_ids)
    assert len(set(text_ids)) == len(text_ids)
    for part_name in ("word/document.xml", "word/footnotes.xml"):
        assert package[part_name].get(MC_IGNORABLE) == "w14"


@pytest.mark.parametrize("name", DOCX_FILES)
def test_it_writes_a_consistent_docx_package(name):
    package = parts(name)
    types = package["[Content_Types].xml"]
    defaults = {d.get("Extension") for d in types.iter(f"{{{CONTENT_TYPES}}}Default")}
    overrides = {o.get("PartName").lstrip("/") for o in types.iter(f"{{{CONTENT_TYPES}}}Override")}
    assert overrides <= set(package)
    for part in package:
        assert part in overrides or part.rsplit(".", 1)[-1] in defaults, part

    for rels_part, base in (("_rels/.rels", ""), ("word/_rels/document.xml.rels", "word")):
        for rel in package[rels_part].iter(f"{{{PACKAGE_RELS}}}Relationship"):
            if rel.get("TargetMode") != "External":
                assert posixpath.normpath(posixpath.join(base, rel.get("Target"))) in package, rel.get("Target")
    rel_ids = {rel.get("Id") for rel in package["word/_rels/document.xml.rels"]}
    document = package["word/document.xml"]
    assert {el.get(f"{{{R}}}id") for el in document.iter() if el.get(f"{{{R}}}id")} <= rel_ids

    styles = {s.get(w("styleId")): s for s in package["word/styles.xml"].iter(w("style"))}
    for level in (1, 2, 3):
        assert styles[f"Heading{level}"].find(f".//{w('outlineLvl')}").get(w("val")) == str(level - 1)
    assert {s.get(w("val")) for s in document.iter(w("pStyle"))} <= set(styles)
    assert document.find(f".//{w('pStyle')}[@{w('val')}='Heading1']") is not None

    footnote_ids = {n.get(w("id")) for n in package["word/footnotes.xml"].iter(w("footnote"))}
    references = {r.get(w("id")) for r in document.iter(w("footnoteReference"))}
    assert references and references <= footnote_ids

    assert document.find(f".//{{{M}}}oMath//{{{M}}}f") is not None
    assert document.find(f".//{{{M}}}oMath//{{{M}}}sSub") is not None
    assert document.find(f".//{w('tbl')}//{w('gridSpan')}") is not None
    assert document.find(f".//{w('tbl')}//{w('vMerge')}") is not None
    assert document.find(f".//{w('tblHeader')}") is not None
    assert document.find(f".//{w('hyperlink')}") is not None
    assert document.find(f".//{w('numPr')}") is not None

    title = package["docProps/core.xml"].find("{http://purl.org/dc/elements/1.1/}title")
    assert title is not None and title.text


def handbook_sections() -> list[str]:
    """The handbook's body text, one string per Heading1 section (heading included)."""
    body = parts(HANDBOOK)["word/document.xml"].find(w("body"))
    sections = [""]
    for element in body:
        style = element.find(f"{w('pPr')}/{w('pStyle')}")
        if style is not None and style.get(w("val")) == "Heading1":
            sections.append("")
        sections[-1] += "".join(t.text or "" for t in element.iter(w("t")))
    return sections


def standalone_pyrrolidine(text: str) -> bool:
    return "吡咯烷" in re.sub(r"N-甲基(-2-)?吡咯烷酮", "", text)


def test_it_puts_standalone_pyrrolidine_in_a_later_section_than_nmp():
    sections = handbook_sections()
    nmp = [i for i, text in enumerate(sections) if "N-甲基吡咯烷酮" in text]
    pyrrolidine = [i for i, text in enumerate(sections) if standalone_pyrrolidine(text)]

    assert nmp, "no section mentions N-甲基吡咯烷酮"
    assert pyrrolidine, "no section mentions 吡咯烷 on its own"
    # Every genuine 吡咯烷 match comes after the NMP section, so a search that
    # cites the NMP passage for 吡咯烷 has matched a substring only.
    assert min(pyrrolidine) > max(nmp)
    assert not any("N-甲基吡咯烷酮" in sections[i] for i in pyrrolidine)

"""Rendering a file of any kind through the one table of renderers, and the
checks every preview must pass: blocks numbered in order, nothing active."""

import zipfile
from pathlib import Path

import lxml.html

from mnote.kinds import kind_of
from mnote.preview.renderers import PreviewContext, renderer_for

ASSET = "/asset/"


def render(path: Path, page: int = 1) -> dict:
    renderer = renderer_for(kind_of(path.name))
    with open(path, "rb") as fp:
        return renderer(fp, PreviewContext(asset_url=lambda part: ASSET + part, path=path, page=page))


def tree(result: dict):
    return lxml.html.fragment_fromstring(result["html"], create_parent="div")


def blocks(result: dict) -> list:
    found = tree(result).xpath("//*[@data-block-index]")
    assert [int(el.get("data-block-index")) for el in found] == list(range(len(found)))
    assert len(found) == result["blocks"]
    return found


def block_texts(result: dict) -> list[str]:
    return [" ".join(el.text_content().split()) for el in blocks(result)]


def assert_safe(result: dict) -> None:
    root = tree(result)
    assert not root.xpath("//script|//style|//iframe|//object|//embed|//form|//input|//link|//meta|//svg")
    assert not [a for el in root.iter() for a in el.attrib if a.startswith("on") or a in ("style", "srcset")]
    assert all(h.startswith(("http:", "https:", "mailto:", "#")) for h in root.xpath("//a/@href"))
    assert all(s.startswith(ASSET) for s in root.xpath("//img/@src"))


def rewrite(path: Path, replace: dict[str, bytes] | None = None, add: dict[str, bytes] | None = None) -> Path:
    """A copy of the package with members replaced or added."""
    out = path.with_name("hostile-" + path.name)
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = (replace or {}).get(info.filename, source.read(info))
            target.writestr(info.filename, data)
        for name, data in (add or {}).items():
            target.writestr(name, data)
    return out

"""Real-world presentations, workbooks and books nobody here wrote: each is
rendered into safe HTML with blocks in order, or refused with a message.

A few public samples live in tests/fixtures/previews/ (see SOURCES.tsv there).
The whole corpus is read too when MNOTE_CORPUS names it (.ci/run points it at
../shared/corpus); a person's clone has only the samples."""

import os
import time
from pathlib import Path

import lxml.html
import pytest

from mnote.kinds import kind_of
from mnote.preview.docx.limits import PreviewRejected
from mnote.preview.renderers import PreviewContext, renderer_for
from tests.paths import REPO_DIR

SAMPLES = REPO_DIR / "tests" / "fixtures" / "previews"
CORPUS = Path(os.environ["MNOTE_CORPUS"]) if os.environ.get("MNOTE_CORPUS") else None


def corpus_files() -> list[Path]:
    found = sorted(p for p in SAMPLES.iterdir() if p.suffix != ".tsv")
    for folder in ("pptx", "xlsx", "epub") if CORPUS else ():
        # A corpus that was named must hold these folders: a failure, not a skip.
        assert (CORPUS / folder).is_dir(), f"no {folder}/ in MNOTE_CORPUS={CORPUS}"
        found += sorted((CORPUS / folder).iterdir())
    return found


def check(path: Path) -> str:
    started = time.monotonic()
    try:
        with open(path, "rb") as fp:
            result = renderer_for(kind_of(path.name))(fp, PreviewContext(asset_url=lambda p: "/asset/" + p, path=path))
    except PreviewRejected as e:
        assert e.message.startswith("This "), (path.name, e.message)
        return "rejected"
    assert time.monotonic() - started < 10, path.name
    root = lxml.html.fragment_fromstring(result["html"], create_parent="div")
    assert not root.xpath("//script|//iframe|//object|//embed|//form|//svg|//*[@onload or @onerror or @style]"), (
        path.name
    )
    # Links leave for the web (new tab), stay in the page, or page a big sheet.
    assert all(h.startswith(("http:", "https:", "mailto:", "#", "?rows_page=")) for h in root.xpath("//a/@href")), (
        path.name
    )
    assert all(s.startswith("/asset/") for s in root.xpath("//img/@src")), path.name
    indexes = [int(i) for i in root.xpath("//@data-block-index")]
    assert indexes == list(range(len(indexes))) and len(indexes) == result["blocks"], path.name
    return "rendered"


SAMPLE_OUTCOMES = {
    "futurepress__alice_without_cover.epub": "rendered",
    "scanny__tbl-cell.pptx": "rendered",
    "tafia__pass_protected.xlsx": "rejected",  # password-protected: a clear message
    "tafia__strict_iso_paths.xlsx": "rendered",  # Strict OOXML namespaces
}


def test_the_public_samples_render_or_are_refused_as_they_should():
    outcomes = {path.name: check(path) for path in sorted(SAMPLES.iterdir()) if path.suffix != ".tsv"}
    assert outcomes == SAMPLE_OUTCOMES


@pytest.mark.parametrize("kind", ["pptx", "xlsx", "epub"])
def test_every_real_world_file_renders_or_is_refused_with_a_message(kind):
    # The samples refused on purpose are checked above; the share is of files meant to render.
    files = [p for p in corpus_files() if p.suffix == f".{kind}" and SAMPLE_OUTCOMES.get(p.name) != "rejected"]
    assert files
    outcomes = [check(path) for path in files]
    assert outcomes.count("rendered") >= 0.85 * len(outcomes)

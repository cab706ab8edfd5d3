"""Citations against the real embedded LightRAG: a DOCX with headings, an
equation and a table, searched, cited, and cited again after an edit."""

import os
import shutil
import time
from pathlib import Path

import pytest
from django.test import Client

from mnote.search.answers import answer_question, full_library_search
from mnote.library.sync import sync_root
from tests.live_stack import make_shelf, use_shelf
from tests.paths import DEMO_LIBRARY

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

DEMO = DEMO_LIBRARY


@pytest.fixture(scope="module")
def manual_shelf(embedded_stack, tmp_path_factory):
    """The manual, indexed once for this module (again after the test that edits it)."""
    return make_shelf(
        embedded_stack, tmp_path_factory, "Manuals", "manuals",
        lambda folder: shutil.copy(DEMO / "en" / "gamma-telescope-manual.docx", folder / "gamma-telescope-manual.docx"),
    )  # fmt: skip


@pytest.fixture
def manual(manual_shelf, settings):
    source = use_shelf(manual_shelf, settings).sources.get()
    assert source.status == "indexed", source.last_error
    return source


def test_it_cites_the_second_section_of_a_docx_by_paragraph(manual, member):
    mapped = full_library_search(member, "Zerodur meniscus primary mirror actuators", mode="naive")
    ours = [c for c in mapped.citations if c.source_id == manual.pk]
    assert ours, mapped.dropped
    best = ours[0]
    assert best.precision == "paragraph" and not best.degraded
    assert best.block_id and best.locator["blockId"] == best.block_id
    assert best.heading_path[-1] == "2. Optics"
    assert "page" not in best.locator
    assert "Zerodur" in best.display_quote
    assert "<" not in best.display_quote and "#" not in best.display_quote
    assert "Zerodur" in best.evidence_text
    assert best.locator["paraIds"][0] and best.locator["paraIds"][1]
    assert mapped.diagnostics["providerRerankAvailable"] is True  # the embedded stack reranks (BM25 + dense)


def test_it_turns_the_equation_into_readable_text(manual, member):
    mapped = full_library_search(member, "signal-to-noise ratio exposure time", mode="naive")
    quotes = " ".join(c.display_quote for c in mapped.citations if c.source_id == manual.pk)
    assert "SNR" in quotes
    assert "\\frac" not in quotes and "<equation" not in quotes


def test_it_answers_without_an_llm_from_the_cited_sentences(manual, member):
    answer = answer_question(member, "What are the Zerodur meniscus primary mirror and its actuators?", mode="naive")
    assert answer.kind == "extractive"
    ids = {c.citation_id for c in answer.mapped.citations}
    assert answer.sentences and all(set(s.citation_ids) <= ids for s in answer.sentences)
    assert any("Zerodur" in s.text for s in answer.sentences)
    assert all(len(s.citation_ids) <= 3 for s in answer.sentences)


def test_its_permalink_opens_for_another_member_and_reports_an_edit(manual, member, django_user_model):
    mapped = full_library_search(member, "Zerodur meniscus primary mirror", mode="naive")
    url = next(c.citation_url for c in mapped.citations if c.source_id == manual.pk)
    colleague = django_user_model.objects.create_user("noor", password="colleague-pass-1")
    fresh = Client()
    fresh.force_login(colleague)
    page = fresh.get(url, follow=True)
    assert page.status_code == 200
    assert b"gamma-telescope-manual.docx" in page.content
    assert b"has changed since" not in page.content

    path = Path(manual.absolute_path)
    with open(path, "ab") as f:
        f.write(b"\0")  # any edit changes the content hash
    os.utime(path, (time.time() + 5, time.time() + 5))
    sync_root(manual.root)
    page = fresh.get(url, follow=True)
    assert page.status_code == 200
    assert b"has changed since this citation was made" in page.content  # and, where it can, what became of the words

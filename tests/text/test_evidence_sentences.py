"""A card quotes the sentences of its chunk that answer the query — whole
sentences, the answer's place rather than the chunk's start — and the
preview is asked to mark those very words."""

import pytest

from mnote.citations.mapper import map_query_data
from mnote.library.models import IndexedRoot, Source
from mnote.text import evidence_sentences
from mnote.text.sentences import split_sentences

FILLER = " ".join(f"Paragraph {n} describes the dome's weather station and how its logs are kept." for n in range(12))
ANSWER = "Re-aluminise the primary and secondary mirrors every 24 months in the coating plant."
CHUNK = f"{FILLER} {ANSWER} {FILLER}"


def test_the_quote_is_the_sentence_that_answers_not_the_chunks_start():
    quote = evidence_sentences(CHUNK, "How often is the primary mirror re-aluminised?", width=300)

    assert ANSWER in quote
    assert len(quote) <= 300
    assert not quote.startswith("Paragraph 0 ")


def test_the_quote_starts_and_ends_on_whole_sentences():
    quote = evidence_sentences(CHUNK, "coating plant mirrors", width=300)
    sentences = split_sentences(CHUNK)

    assert all(s in sentences for s in split_sentences(quote))
    assert quote[-1] == "."


def test_a_rarer_word_of_the_question_decides_between_sentences():
    text = ("The mirror is inspected every week by the night assistant. The mirror cell holds 18 pads. "
            "Coating the mirror takes two days in the aluminising chamber.")
    quote = evidence_sentences(text, "how long does coating the mirror take", width=70)

    assert quote == "Coating the mirror takes two days in the aluminising chamber."


def test_one_sentence_longer_than_the_width_is_cut_between_words_around_the_terms():
    text = "Alpha " * 80 + "the shutter motor is serviced monthly " + "beta " * 80 + "end."
    quote = evidence_sentences(text, "shutter motor", width=120)

    assert "shutter motor" in quote and len(quote) <= 120
    assert text.startswith(quote) or text[text.index(quote) - 1] == " "


def test_nothing_matching_gives_the_chunks_first_sentences():
    assert evidence_sentences(CHUNK, "zxqv blorft", width=160).startswith("Paragraph 0 ")


@pytest.mark.django_db
def test_the_card_quotes_the_evidence_and_the_locator_asks_the_preview_for_the_same_words(lightrag_dirs):
    root = IndexedRoot.objects.create(name="Manual", path="manual")
    source = Source.objects.create(root=root, relative_path="telescope.md", absolute_path="/library/manual/telescope.md",
                                   sha256="a" * 64, lightrag_name="telescope.md", lightrag_doc_id="doc-telescope",
                                   status=Source.Status.INDEXED)
    chunk = {"reference_id": "1", "content": CHUNK, "file_path": source.lightrag_name, "chunk_id": "doc-telescope-chunk-000"}
    result = {"status": "success", "data": {"chunks": [chunk], "references": [{"reference_id": "1", "file_path": "telescope.md"}]}}

    [citation] = map_query_data(result, query="How often is the primary mirror re-aluminised?",
                                sources=Source.objects.all()).citations

    assert ANSWER in citation.display_quote
    assert citation.display_quote == citation.locator["displayQuote"] == citation.locator["evidenceText"]
    assert all(s in split_sentences(CHUNK) for s in split_sentences(citation.display_quote))

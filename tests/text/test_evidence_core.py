"""The sentence of a card's evidence that a preview takes the reader to."""

from mnote.text.evidence import evidence_core

PADDED = ("Site 4: the old retaining wall has collapsed. Recommendation: install monitoring stakes. "
          "Site 7 showed a sinkhole that opened after the February storm surge. The hole is fenced off.")  # fmt: skip


def test_it_is_the_sentence_holding_the_query_not_the_padding_before_it():
    start, end = evidence_core(PADDED, "sinkhole after the February storm surge")
    assert PADDED[start:end] == "Site 7 showed a sinkhole that opened after the February storm surge."


def test_it_is_the_whole_evidence_when_no_sentence_holds_the_query():
    assert evidence_core(PADDED, "tidal gauge calibration") == (0, len(PADDED))
    assert evidence_core(PADDED, "") == (0, len(PADDED))

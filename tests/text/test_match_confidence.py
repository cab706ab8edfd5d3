"""The relevance floor's measure: a passage that stands out from all the
candidates LightRAG found, holding the question's words, is a confident
match; a question about something no candidate mentions is not."""

from mnote.text.relevance import absent_words, match_confidence

CANDIDATES = [
    "Quotas limit the disk space each user may fill.",
    "Printers are set up in CUPS.",
    "The DHCP server hands out addresses.",
    "DNS zones are kept in bind's configuration.",
]


def test_words_no_candidate_mentions_lower_the_confidence_at_the_same_cosines():
    cosines = [0.85, 0.80, 0.80, 0.80]
    about_the_library = match_confidence("limit the disk space of a user", CANDIDATES, cosines)
    about_something_else = match_confidence("kubernetes ingress controller", CANDIDATES, cosines)

    assert absent_words("kubernetes ingress controller", CANDIDATES) == 1.0
    assert absent_words("disk space", CANDIDATES) == 0.0
    assert about_the_library > about_something_else


def test_the_cards_stand_out_against_all_the_candidates_not_only_themselves():
    cards, card_cosines = CANDIDATES[:2], [0.86, 0.85]
    # Among the cards alone the first barely stands out; among all that
    # LightRAG found (most of them far) it does.
    among_cards = match_confidence("disk space per user", cards, card_cosines)
    among_all = match_confidence("disk space per user", cards, card_cosines, CANDIDATES, [0.86, 0.85, 0.70, 0.70])

    assert among_all > among_cards
    assert match_confidence("q", cards, [None, None], CANDIDATES, [None] * 4) is None

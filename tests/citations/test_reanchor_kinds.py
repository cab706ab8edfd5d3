"""Re-anchoring in the texts the other kinds give: a PDF's text layer, whose
lines and pages break elsewhere once the words above them change, and a
sheet's rows."""

from mnote.citations.reanchor import Selector, reanchor

# A PDF's text layer: lines end in "\r\n", pages are joined by "\n".
PAGE_1 = (
    "Valves\r\nThe valve stems are lapped every spring by the night\r\nshift, before the plant restarts. "
    "Nobody\r\nruns the pumps while they are open.\r\n"
)
PAGE_2 = "Filters\r\nReplace the intake filters when the pressure drop\r\npasses forty millibar.\r\n"
QUOTE = "The valve stems are lapped every spring by the night\r\nshift, before the plant restarts."


def cited(text: str, quote: str) -> Selector:
    start = text.index(quote)
    return Selector.at(text, start, start + len(quote))


def test_a_pdf_passage_whose_lines_break_elsewhere_is_unchanged_not_reworded():
    old = PAGE_1 + "\n" + PAGE_2
    # A heading added above: the paragraph is wrapped again, its line break falls two words earlier.
    new = ("Safety first\r\nWear gloves.\r\nValves\r\nThe valve stems are lapped every spring by\r\nthe night "
           "shift, before the plant restarts. Nobody runs\r\nthe pumps while they are open.\r\n\n" + PAGE_2)
    found = reanchor(cited(old, QUOTE), new, len(old))
    assert found.case == "unchanged"
    assert " ".join(new[found.start : found.end].split()) == " ".join(QUOTE.split())


def test_a_pdf_passage_cut_by_a_page_break_now_is_found_whole():
    old = PAGE_1 + "\n" + PAGE_2
    quote = "Replace the intake filters when the pressure drop\r\npasses forty millibar."
    new = (PAGE_1 + "A new line above.\r\nFilters\r\nReplace the intake filters\n"
           "when the pressure drop passes forty millibar.\r\n")
    found = reanchor(cited(old, quote), new, len(old))
    assert found.case in ("unchanged", "moved") and found.exact.endswith("passes forty millibar.")
    assert found.score == 100.0  # the same words: nothing to show as reworded


def test_a_deleted_row_of_a_sheet_is_removed_not_its_neighbour():
    rows = ["Item Room Checked by Note", "Fume hood Lab 2 Mia Wong Sash kept below the marked line",
            "Eye wash station Lab 2 Li Na Flushed for three minutes weekly",
            "Eye wash station Lab 3 Li Na Flushed for three minutes monthly"]
    old = " ".join(rows)
    selector = cited(old, rows[2])
    assert reanchor(selector, " ".join(rows[:2] + rows[3:]), len(old)).case == "removed"


def test_a_cells_last_word_replaced_by_two_is_taken_whole():
    rows = ["Item Room Checked by Note", "Eye wash station Lab 2 Li Na Flushed for three minutes weekly",
            "Fire blanket Corridor Sam Reyes Seal intact and in date"]
    old = " ".join(rows)
    found = reanchor(cited(old, rows[1]), old.replace("minutes weekly", "minutes every Monday"), len(old))
    assert found.case == "reworded"
    assert found.exact == "Eye wash station Lab 2 Li Na Flushed for three minutes every Monday"


def test_a_reworded_sentence_ending_in_a_full_stop_is_not_widened_into_the_next():
    text = ("AppArmor profiles live in /etc/apparmor.d/. "
            "Each profile can be loaded either in enforcing or complaining mode. "
            "The former enforces the policy and reports violation attempts.")
    quote = "Each profile can be loaded either in enforcing or complaining mode."
    found = reanchor(cited(text, quote), text.replace("either", "revised"), len(text))
    assert found.case == "reworded" and found.exact == quote.replace("either", "revised")

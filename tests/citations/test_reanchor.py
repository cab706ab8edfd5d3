"""A cited quote found again in a new version of its text: each case, on plain text."""

from mnote.citations.reanchor import Selector, reanchor, word_changes

TEXT = (
    "Pumps. Check the seals weekly and write down what you find. "
    "Valves. The valve stems are lapped every spring by the night shift, before the plant restarts. "
    "Filters. Replace the intake filters when the pressure drop passes forty millibar."
)
QUOTE = "The valve stems are lapped every spring by the night shift"


def cited(text: str = TEXT, quote: str = QUOTE) -> Selector:
    start = text.index(quote)
    return Selector.at(text, start, start + len(quote))


def test_the_same_words_in_the_same_text_are_unchanged():
    found = reanchor(cited(), TEXT)
    assert (found.case, TEXT[found.start : found.end]) == ("unchanged", QUOTE)


def test_text_added_above_leaves_the_words_unchanged_further_down():
    new = "Safety first. Wear gloves. " + TEXT
    found = reanchor(cited(), new)
    assert found.case == "unchanged" and new[found.start : found.end] == QUOTE and found.start > TEXT.index(QUOTE)


def test_a_paragraph_moved_elsewhere_is_moved():
    valves = "Valves. The valve stems are lapped every spring by the night shift, before the plant restarts."
    new = TEXT.replace(valves + " ", "") + " Archive. Old logs go to the basement. " + valves.replace("Valves. ", "")
    found = reanchor(cited(), new)
    assert found.case == "moved" and new[found.start : found.end] == QUOTE


def test_words_changed_inside_are_reworded_on_whole_words():
    new = TEXT.replace("lapped every spring", "lapped and polished every autumn")
    found = reanchor(cited(), new)
    assert found.case == "reworded"
    assert new[found.start : found.end] == "The valve stems are lapped and polished every autumn by the night shift"
    assert found.start == 0 or not new[found.start - 1].isalnum()


def test_words_changed_around_leave_the_quote_in_place():
    new = TEXT.replace("before the plant restarts", "after the plant stops").replace("Valves.", "Valve care.")
    found = reanchor(cited(), new)
    assert found.case in ("unchanged", "moved") and new[found.start : found.end] == QUOTE


def test_deleted_words_are_removed_even_when_close_words_remain_elsewhere():
    twins = "Set pump A to speed one. Set pump B to speed two. Set pump C to speed three. End of list."
    selector = cited(twins, "Set pump B to speed two.")
    assert selector.twins is True and cited().twins is False
    found = reanchor(selector, twins.replace("Set pump B to speed two. ", ""))
    assert found.case == "removed" and found.start is None


def test_deleted_words_are_removed():
    found = reanchor(cited(), TEXT.replace(QUOTE, "Nothing here"))
    assert found.case == "removed"


def test_an_old_or_empty_selector_is_not_a_selector():
    assert Selector.from_json({}) is None and Selector.from_json({"exact": "  "}) is None
    assert Selector.from_json(cited().as_json()) == cited()
    anchor = {"textQuote": {"exact": QUOTE, "prefix": "x", "suffix": "y"}, "textPosition": {"start": 3, "end": 9}}
    assert Selector.from_anchor(anchor) == Selector(QUOTE, "x", "y", 3, 9)


def test_word_changes_mark_what_was_removed_and_added():
    assert word_changes("lapped every spring", "lapped every autumn") == [
        ("same", "lapped every"), ("removed", "spring"), ("added", "autumn"),
    ]


def test_a_deleted_line_is_not_taken_for_its_near_twin_that_slid_into_its_place():
    lines = [f"Text frame having auto-size set to MSO_AUTO_SIZE.{mode}" for mode in ("NONE", "SHAPE_TO_FIT", "TEXT_TO_FIT")]
    text = "Slide one. " + " ".join(lines) + " End of the slide."
    selector = cited(text, lines[1])
    assert selector.twin_words  # its twins' words are kept with it
    found = reanchor(selector, text.replace(lines[1] + " ", ""))
    assert found.case == "removed"
    # The same line reworded is still found.
    reworded = text.replace(lines[1], lines[1].replace("frame having", "frame now having"))
    assert reanchor(selector, reworded).case == "reworded"


SPACING = [
    "Paragraph having space before of no explicit setting",
    "Paragraph having space before of 6 pt",
    "Paragraph having space after of no explicit setting",
    "Paragraph having space after of 6 pt",
    "Paragraph having line spacing of 1.5 lines",
]


def test_a_deleted_line_is_not_taken_for_the_line_next_to_it_that_says_a_little_less():
    lines = ["Hallo, lower «Kundenname»", "Hallo, lower no MERGEFORMAT «Kundenname»",
             "Hallo, lower no MERGEFORMAT, no trailing spaces «Kundenname»", "Hallo, initial «Kundenname»"]
    text = " ".join(lines)
    selector = cited(text, lines[2])
    assert reanchor(selector, text.replace(lines[2] + " ", "")).case == "removed"


def test_a_deleted_line_is_not_taken_for_its_sibling_that_differs_in_a_number():
    lines = [f'<w:ind w:left="{left}" w:hanging="360" >' for left in (720, 1080, 1440)]
    text = "Indents. " + " ".join(lines) + " End."
    selector = cited(text, lines[1])
    assert reanchor(selector, text.replace(lines[1] + " ", "")).case == "removed"
    # Moved to the end and a word changed: found there, not on a sibling.
    edited = text.replace(lines[1] + " ", "") + " Later: " + lines[1].replace("hanging", "firstLine")
    found = reanchor(selector, edited)
    moved_to = edited.index("Later: ") + len("Later: ")
    assert found.case == "reworded" and found.start >= moved_to - 1
    assert 'w:ind w:left="1080" w:firstLine="360' in edited[found.start : found.end]


def test_a_line_of_a_list_of_near_twins_moved_and_reworded_is_found_where_it_went():
    text = "Spacing. " + " ".join(SPACING) + " End of the slide."
    selector = cited(text, SPACING[2])
    assert set(selector.twin_words) & set(SPACING)  # its near twins are kept with it
    reworded = SPACING[2].replace("explicit", "stated")
    edited = "A slide added. " + text.replace(SPACING[2] + " ", "") + " Notes: " + reworded
    found = reanchor(selector, edited)
    assert found.case == "reworded" and edited[found.start : found.end] == reworded
    # Deleted from the list: removed, though its twins stand where it stood.
    assert reanchor(selector, text.replace(SPACING[2] + " ", "")).case == "removed"


def test_a_deleted_line_is_not_taken_for_a_line_close_in_letters_but_not_in_words():
    text = ("Article II. [expect]Article II.[/expect]Another article "
            "Section 2.01 [expect]Section 2.01[/expect]Another section (a) [expect](a)[/expect]Blagh blagh.")
    quote = "[expect]Section 2.01[/expect]Another section"
    paragraph = "Section 2.01 " + quote + " "
    assert reanchor(cited(text, quote), text.replace(paragraph, "")).case == "removed"

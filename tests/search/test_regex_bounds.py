"""Text from documents and from the answering model reaches regular
expressions; none may take more than linear time on it (a long run of spaces
or of one character), and each still does its job."""

import time

from mnote.search.badges import split_sentences
from mnote.search.markers import map_ref_markers, strip_llm_markers
from mnote.text.display import clean_display_text

RUN = 50_000


def _quick(function, *args):
    started = time.perf_counter()
    result = function(*args)
    assert time.perf_counter() - started < 1, function.__name__
    return result


def test_answer_markers_are_stripped_in_linear_time():
    assert _quick(strip_llm_markers, "The dome  [1, 2] opens [KG] slowly.") == "The dome opens slowly."
    _quick(strip_llm_markers, "x" + " " * RUN + "y [source" + " " * RUN)
    text, refs = _quick(map_ref_markers, "The dome  [ref: a, b ] opens.", {"a": "c1", "b": "c2"})
    assert text == "The dome opens." and refs == {8: ["c1", "c2"]}
    _quick(map_ref_markers, "[ref:" + " " * RUN, {})


def test_sentences_split_in_linear_time():
    assert split_sentences("It works, e.g. here. Next one.") == ["It works, e.g. here.", "Next one."]
    _quick(split_sentences, "a" * RUN + ". " + "b" * RUN + ". Next")


def test_a_markdown_table_rule_is_recognised_in_linear_time():
    assert "---" not in _quick(clean_display_text, "| a | b |\n|---|:---:|\n| 1 | 2 |")
    _quick(clean_display_text, "| a |\n|---" + " " * RUN + "x|")

from dataclasses import dataclass

from mnote.search.badges import (
    AnsweredSentence,
    extractive_answer,
    map_ref_markers,
    place_badges,
    render_badged_text,
    split_sentences,
    strip_llm_markers,
)


@dataclass
class Cited:
    citation_id: str
    chunk_id: str | None
    display_quote: str


VOLTAGE = Cited(
    "a3z1",
    "doc-7f3a-chunk-001",
    "Each cell has a nominal voltage of 3.7 V and a charge cut-off of 4.2 V. The pack uses 18650 cells.",
)
BALANCING = Cited(
    "b7k2",
    "doc-7f3a-chunk-004",
    "The battery management system balances the cells during charging and stops at 45 °C.",
)
WIRING = Cited("IMG-c9q0", None, "Figure 2: wiring diagram of the controller board.")
CHINESE = Cited(
    "d1e2",
    "doc-91bc-chunk-002",
    "该电池的额定电压为3.7V，充电截止电压为4.2V。电池管理系统在充电时对电芯进行均衡。循环寿命超过2000次。",
)
CITATIONS = [VOLTAGE, BALANCING, WIRING, CHINESE]


def badges(sentences):
    return {s.text: s.citation_ids for s in sentences}


def test_it_removes_numbered_markers_and_the_reference_list():
    answer = (
        "The nominal voltage is 3.7 V [1]. Charging stops at 4.2 V [1, 2].\n"
        "Balancing runs while charging[2][3] and above 45 °C it stops [^1]. 额定电压为3.7V【1】。\n"
        "\n"
        "### References\n"
        "- [1] cells.pdf\n"
        "- [2] bms.pdf\n"
    )

    cleaned = strip_llm_markers(answer)

    assert cleaned == (
        "The nominal voltage is 3.7 V. Charging stops at 4.2 V.\n"
        "Balancing runs while charging and above 45 °C it stops. 额定电压为3.7V。"
    )


def test_it_removes_chinese_reference_sections_and_lightrag_markers():
    answer = "电池管理系统会均衡电芯 [KG]。\n\n参考文献：\n1. 电池手册.pdf\n2. [DC] 说明书.docx"

    assert strip_llm_markers(answer) == "电池管理系统会均衡电芯。"


def test_it_keeps_brackets_that_are_content():
    answer = "The box spans [x0, y0] to [x1, y1] on the interval [0, 1]; see `items[1]` and note (1). [ref:chunk-9]"

    assert strip_llm_markers(answer) == answer


def test_it_keeps_a_sources_paragraph_that_is_prose():
    answer = "Measurements vary.\n\nSources of error include the thermometer and the clock."

    assert strip_llm_markers(answer) == answer


def test_it_splits_english_and_chinese_sentences():
    text = (
        "The cut-off is 4.2 V at 25 °C. See Fig. 3, e.g. the top curve. It rose by 4.2% in 2023! Why?\n"
        "1. First item. Second sentence.\n"
        "电池的额定电压为3.7V。循环寿命超过2000次！是否安全？注意：不要过充；保持干燥"
    )

    assert split_sentences(text) == [
        "The cut-off is 4.2 V at 25 °C.",
        "See Fig. 3, e.g. the top curve.",
        "It rose by 4.2% in 2023!",
        "Why?",
        "1. First item.",
        "Second sentence.",
        "电池的额定电压为3.7V。",
        "循环寿命超过2000次！",
        "是否安全？",
        "注意：不要过充；",
        "保持干燥",
    ]


def test_it_maps_ref_markers_to_citation_ids_and_drops_unknown_chunks():
    text, refs = map_ref_markers(
        "Charged at 4.2 V [ref:doc-7f3a-chunk-001]. Unknown [ref:doc-0000-chunk-099].",
        {"doc-7f3a-chunk-001": "a3z1"},
    )

    assert text == "Charged at 4.2 V. Unknown."
    assert refs == {16: ["a3z1"]}


def test_it_badges_a_sentence_with_its_ref_marker_citation():
    answer = "The pack is assembled by hand [ref:doc-7f3a-chunk-004]. It ships in spring.[ref:doc-7f3a-chunk-001]"

    sentences = place_badges(answer, CITATIONS)

    assert badges(sentences) == {
        "The pack is assembled by hand.": ["b7k2"],
        "It ships in spring.": ["a3z1"],
    }


def test_it_badges_sentences_with_the_quotes_that_support_them():
    answer = (
        "The nominal voltage of the cell is 3.7 V, which suits consumer electronics [1]. "
        "The battery management system balances cells while charging [2]. "
        "The weather in Paris is usually mild [3]."
    )

    sentences = place_badges(answer, CITATIONS, query="cell voltage")

    assert badges(sentences) == {
        "The nominal voltage of the cell is 3.7 V, which suits consumer electronics.": ["a3z1"],
        "The battery management system balances cells while charging.": ["b7k2"],
        "The weather in Paris is usually mild.": [],
    }


def test_it_gives_no_badge_to_a_sentence_that_only_repeats_the_query():
    sentences = place_badges("Here is what the library says about cell voltage.", CITATIONS, query="cell voltage")

    assert sentences[0].citation_ids == []


def test_it_badges_chinese_sentences():
    answer = "电池的额定电压为3.7V[1]。电池管理系统会在充电时均衡电芯。巴黎的天气通常很温和。"

    sentences = place_badges(answer, CITATIONS, query="电池电压")

    assert badges(sentences) == {
        "电池的额定电压为3.7V。": ["d1e2"],
        "电池管理系统会在充电时均衡电芯。": ["d1e2"],
        "巴黎的天气通常很温和。": [],
    }


def test_it_never_puts_more_than_three_badges_on_a_sentence():
    quote = "Nominal voltage 3.7 V, charge cut-off 4.2 V, pack of 18650 cells."
    many = [Cited(f"c{n:03d}", f"doc-1-chunk-{n:03d}", quote) for n in range(6)]
    answer = "Nominal voltage 3.7 V, charge cut-off 4.2 V, pack of 18650 cells [ref:doc-1-chunk-005]."

    sentences = place_badges(answer, many)

    assert sentences[0].citation_ids == ["c005", "c000", "c001"]


def test_it_only_uses_ids_of_the_given_citations():
    answer = "The nominal voltage is 3.7 V [a3z1][zz99] [ref:doc-7f3a-chunk-001] [ref:chunk-gone]. 电压为3.7V【2】。"
    known = {c.citation_id for c in CITATIONS}

    sentences = place_badges(answer, CITATIONS)

    used = {cid for s in sentences for cid in s.citation_ids}
    assert used and used <= known


def test_it_keeps_decimal_numbers_in_one_badged_sentence():
    sentences = place_badges("Charging stops at 4.2 V. The pack uses 18650 cells.", [VOLTAGE])

    assert badges(sentences) == {
        "Charging stops at 4.2 V.": ["a3z1"],
        "The pack uses 18650 cells.": ["a3z1"],
    }


def test_it_answers_an_english_query_from_the_relevant_quote_sentence():
    sentences = extractive_answer("What is the nominal voltage of a cell?", CITATIONS)

    assert sentences == [
        AnsweredSentence("Each cell has a nominal voltage of 3.7 V and a charge cut-off of 4.2 V.", ["a3z1"], "")
    ]


def test_it_answers_a_chinese_query_from_the_relevant_quote_sentence():
    sentences = extractive_answer("电池的循环寿命是多少？", CITATIONS)

    assert sentences == [AnsweredSentence("循环寿命超过2000次。", ["d1e2"], "")]


def test_it_badges_an_extractive_sentence_with_other_quotes_that_also_support_it():
    copy = Cited("e5f6", "doc-2222-chunk-001", "Wiring: see Figure 2: wiring diagram of the controller board, rev B.")

    sentences = extractive_answer("controller wiring diagram", [WIRING, copy])

    assert sentences[0].citation_ids == ["IMG-c9q0", "e5f6"]
    assert len(sentences) == 1


def test_it_gives_no_extractive_answer_when_nothing_matches():
    assert extractive_answer("quantum chromodynamics", CITATIONS) == []
    assert extractive_answer("the of and", CITATIONS) == []


def test_it_renders_badges_after_each_sentence():
    sentences = [
        AnsweredSentence("Charging stops at 4.2 V.", ["a3z1", "b7k2"]),
        AnsweredSentence("Paris is mild.", [], " "),
        AnsweredSentence("额定电压为3.7V。", ["d1e2"], "\n"),
    ]

    assert render_badged_text(sentences) == "Charging stops at 4.2 V. [a3z1] [b7k2] Paris is mild.\n额定电压为3.7V。 [d1e2]"


def test_it_never_answers_with_a_question_or_a_flattened_table():
    from mnote.search.badges import extractive_answer

    class Quote:
        def __init__(self, citation_id, display_quote):
            self.citation_id, self.chunk_id, self.display_quote = citation_id, None, display_quote

    quotes = [
        Quote("q1a2", "Example questions - What is the primary mirror of the GAMMA telescope made of?"),
        Quote("t3b4", "File | Language | Format | en/gamma.docx | English | Word | primary mirror | made"),
        Quote("z5c6", "The primary mirror is made of Zerodur, a glass-ceramic."),
    ]
    answer = extractive_answer("What is the primary mirror made of?", quotes)
    assert [s.citation_ids[0] for s in answer] == ["z5c6"]


# --- streaming: badges placed while the answer arrives ----------------------

from mnote.search.badges import BadgePlacer  # noqa: E402


@dataclass
class _Quote:
    citation_id: str
    chunk_id: str
    display_quote: str


STREAM_QUOTES = [
    _Quote("aaaa", "doc-1-chunk-000", "The Gamma telescope has a 4.2 metre primary mirror made of Zerodur glass."),
    _Quote("bbbb", "doc-1-chunk-001", "The mirror is re-aluminised every three years in the on-site coating chamber."),
    _Quote("cccc", "doc-2-chunk-000", "The Beta dome opens at dusk and closes at dawn."),
]
STREAMED_ANSWER = (
    "The mirror is re-aluminised every three years [1]. The Beta dome opens at dusk [2].\n\n"
    "### References\n\n- [1] gamma.docx\n- [2] beta.md"
)


def test_a_sentence_is_badged_once_the_next_one_begins_and_the_reference_list_never_shows():
    placer = BadgePlacer(STREAM_QUOTES, query="mirror dome", ids_by_reference={"1": ["aaaa", "bbbb"], "2": ["cccc"]})
    arrivals = []
    for i in range(0, len(STREAMED_ANSWER), 7):
        arrivals.append((i, placer.feed(STREAMED_ANSWER[i : i + 7]), placer.pending))
    first = next(i for i, new, _ in arrivals if new)
    assert first > STREAMED_ANSWER.index("[1].")  # not before its marker arrived
    assert all("References" not in pending and "[1]" not in pending for _, _, pending in arrivals)
    placer.finish()
    assert [(s.text, s.citation_ids) for s in placer.sentences] == [
        ("The mirror is re-aluminised every three years.", ["bbbb"]),
        ("The Beta dome opens at dusk.", ["cccc"]),
    ]


def test_lightrags_marker_badges_its_files_passage_that_backs_the_sentence_best():
    # Too loosely worded to be badged on its words alone; the marker names
    # file 1, and its passage sharing the sentence's terms is badged.
    text = "The primary mirror is inspected by visiting engineers each month"
    assert place_badges(text + ".", STREAM_QUOTES)[0].citation_ids == []
    [sentence] = place_badges(text + " [1].", STREAM_QUOTES, ids_by_reference={"1": ["aaaa", "bbbb"], "2": ["cccc"]})
    assert sentence.citation_ids == ["aaaa"]
    # A marker never badges a passage that shares nothing with the sentence.
    [unrelated] = place_badges("Visiting hours end at noon [2].", STREAM_QUOTES, ids_by_reference={"2": ["cccc"]})
    assert unrelated.citation_ids == []

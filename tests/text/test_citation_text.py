import json
import random
import re

import pytest

from mnote.text import (
    clean_display_text,
    ensure_query_terms,
    evidence_window,
    fingerprint,
    latex_to_text,
    lexical_score,
    mark_terms,
    query_terms,
)
from tests.paths import FIXTURES



def recorded_blocks(name: str) -> list[dict]:
    """Content rows of a real LightRAG 1.5.7 sidecar, as recorded."""
    rows = [json.loads(line) for line in (FIXTURES / "sidecars" / name).read_text().splitlines() if line.strip()]
    return [row for row in rows if row["type"] == "content"]


def block_content(name: str, heading: str) -> str:
    return next(b["content"] for b in recorded_blocks(name) if b["heading"] == heading)


ALL_RECORDED_BLOCKS = [
    pytest.param(block["content"], id=f"{name.split('.')[0]}:{block['heading']}")
    for name in (
        "sidecar_docx_sample.blocks.jsonl",
        "sidecar_pdf_sample.blocks.jsonl",
        "sidecar_docx_live_gamma.blocks.jsonl",
    )
    for block in recorded_blocks(name)
]
FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. " * 12


def assert_markup_free(text: str) -> None:
    for leftover in ("<", ">", "format=", "id=", "</", "/>", "$$", "\\", "drawing", "equation"):
        assert leftover not in text, f"{leftover!r} left in {text!r}"


# --- display quote -------------------------------------------------------------


def test_it_shows_the_shaft_power_equation_as_readable_text():
    display = clean_display_text(block_content("sidecar_docx_sample.blocks.jsonl", "Power"))

    assert "P=ρgQH/η" in display
    assert display == "Power Shaft power is given by: P=ρgQH/η"


def test_it_shows_an_inline_equation_in_its_sentence():
    display = clean_display_text(block_content("sidecar_docx_sample.blocks.jsonl", "Zeta Pump Specification"))

    assert display == "Zeta Pump Specification The pump head follows H=v²/2g for ideal flow."


def test_it_shows_a_display_equation_with_symbols_and_signs():
    display = clean_display_text(block_content("sidecar_pdf_sample.blocks.jsonl", "Collision risk"))

    assert display == (
        "Collision risk The flux model uses Φ per square metre, and the annual probability is P=1−e^(−ΦAt)"
    )


def test_it_drops_a_drawing_and_keeps_the_caption_text_around_it():
    display = clean_display_text(block_content("sidecar_docx_sample.blocks.jsonl", "Drawings"))

    assert "Figure 1 Pump cross-section" in display
    assert "image1.png" not in display
    assert_markup_free(display)


@pytest.mark.parametrize(
    "raw",
    [
        'Before <drawing id="im-1" format="png" path="a.blocks.assets/image1.png" src="" /> after',
        'Before <drawing id="im-1" format="png"/> after',
        'Before <drawing id="im-1" format="png"></drawing> after',
        'Before <drawing id="im-1" format="png">alt</drawing> after',
        "Before <DRAWING ID='im-1'/> after",
    ],
)
def test_it_drops_drawings_self_closing_or_not(raw):
    assert clean_display_text(raw) == "Before after"


def test_it_flattens_a_json_table_into_rows_and_cells():
    display = clean_display_text(block_content("sidecar_docx_sample.blocks.jsonl", "Drawings"))

    assert display.endswith("Model | Flow (m3/h) | Head (m); Z-100 | 120 | 32")


def test_it_flattens_an_html_table_into_rows_and_cells():
    display = clean_display_text(block_content("sidecar_pdf_sample.blocks.jsonl", "Debris by altitude"))

    assert display == "Debris by altitude Altitude (km) | Objects; 500-600 | 9,800"


def test_it_reads_html_table_cells_with_entities_and_equations_once():
    raw = (
        '<table format="html"><tr><th>A &amp; B</th><th>x&lt;y</th></tr>'
        '<tr><td><equation format="latex">\\alpha^2</equation></td><td>&amp;lt;</td></tr></table>'
    )

    assert clean_display_text(raw) == "A & B | x<y; α² | &lt;"


def test_it_never_resolves_entities_or_doctypes_inside_an_html_table():
    raw = (
        '<table format="html"><!DOCTYPE t [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        "<tr><td>&xxe;</td><td>safe</td></tr></table>"
    )

    display = clean_display_text(raw)

    assert "root:" not in display
    assert "safe" in display


def test_it_reads_a_nested_html_table_inside_its_cell():
    raw = '<table format="html"><tr><td>outer<table><tr><td>inner</td></tr></table></td><td>b</td></tr></table> after'

    assert clean_display_text(raw) == "outer inner | b after"


@pytest.mark.parametrize(
    "hostile",
    [
        '<table format="html">' + "<table><tr><td>" * 3000,
        '<table format="json">' + "[" * 50000,
        "<table>" * 5000,
        "</table>" * 5000,
        "<equation>" * 10000,
        '<td class="x" ' * 20000,
    ],
    ids=["nested-html", "nested-json", "open-tables", "close-tables", "open-equations", "open-tags"],
)
def test_it_cleans_hostile_nesting_without_recursing(hostile):
    assert "<" not in clean_display_text(hostile)


def test_it_flattens_json_cells_that_are_numbers_nulls_or_marked_up():
    cells = [["Q", None, 1.5], ["m<sup>3</sup>/h", '<equation format="latex">\\eta</equation>']]
    raw = f'<table format="json">{json.dumps(cells)}</table>'

    assert clean_display_text(raw) == "Q | 1.5; m³/h | η"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('Shaft power is given by:\n<equation format="lat', "Shaft power is given by:"),
        ("The mirror is re-aluminised <equ", "The mirror is re-aluminised"),
        ('Tracked objects <table id="tb-1" format="json"', "Tracked objects"),
        ("Some text </equa", "Some text"),
        ("Trailing bracket <", "Trailing bracket"),
    ],
)
def test_it_removes_a_tag_cut_by_the_end_of_a_chunk(raw, expected):
    assert clean_display_text(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "ion>Calibration is performed every night.",
        'at="latex">Calibration is performed every night.',
        'png" src="" />\nCalibration is performed every night.',
        'src="" />Calibration is performed every night.',
        "/>Calibration is performed every night.",
    ],
)
def test_it_removes_the_tail_of_a_tag_cut_by_the_start_of_a_chunk(raw):
    assert clean_display_text(raw) == "Calibration is performed every night."


def test_it_reads_an_equation_the_chunk_started_inside():
    raw = 'ation id="eq-1" format="latex">P=\\frac{ρgQH}{η}</equation>\nwhere η is the efficiency.'

    assert clean_display_text(raw) == "P=ρgQH/η where η is the efficiency."


def test_it_reads_a_json_table_the_chunk_started_inside():
    raw = '"R band", "658 nm"]]</table>\n\n## Maintenance\nThe mirror is re-aluminised.'

    assert clean_display_text(raw) == "R band | 658 nm Maintenance The mirror is re-aluminised."


def test_it_keeps_the_cells_of_a_json_table_cut_by_the_end_of_a_chunk():
    raw = 'Filters:\n<table format="json">[["Filter", "Wavelength"], ["R band", "658'

    assert clean_display_text(raw) == "Filters: Filter | Wavelength; R band | 658"


def test_it_reads_an_unclosed_equation_only_up_to_the_next_lightrag_tag():
    raw = 'Head: <equation format="latex">H=v^2/2g <drawing id="im-1" format="png"/> Figure 1 <equation>\\alpha</equation>'

    assert clean_display_text(raw) == "Head: H=v²/2g Figure 1 α"


def test_it_reads_an_unclosed_equation_only_up_to_the_next_paragraph():
    raw = 'Head: <equation format="latex">H=v^2/2g\n\nThe next paragraph stays prose.'

    assert clean_display_text(raw) == "Head: H=v²/2g The next paragraph stays prose."


def test_it_survives_an_unclosed_equation_with_unbalanced_braces():
    assert clean_display_text('Power: <equation format="latex">P=\\frac{ρg') == "Power: P=ρg/"


def test_it_removes_heading_markers_only_at_line_starts():
    raw = "# Zeta Pump\n## Power\n### Notes\nPump #3 is the spare.\n  ## Indented"

    assert clean_display_text(raw) == "Zeta Pump Power Notes Pump #3 is the spare. Indented"


def test_it_unescapes_entities_and_collapses_whitespace():
    raw = "Flow&nbsp;rate &amp; head\n\n\tat   25&#8201;°C &mdash; nominal"

    assert clean_display_text(raw) == "Flow rate & head at 25 °C — nominal"


def test_it_removes_other_html_shells_and_keeps_words_apart():
    raw = '<div class="x"><p>First</p><p>Second<br/>Third</p></div><!-- note --><span>in</span>line'

    assert clean_display_text(raw) == "First Second Third inline"


def test_it_shows_sup_and_sub_as_unicode_where_it_can():
    raw = "CO<sub>2</sub> at 10<sup>-3</sup> m<sup>3</sup>/h, the 5<sup>th</sup> run, ref<sup>[12]</sup>"

    assert clean_display_text(raw) == "CO₂ at 10⁻³ m³/h, the 5ᵗʰ run, ref^[12]"


@pytest.mark.parametrize("prose", ["x > 3 and y < 4", "a <b and c> d", "5 < 7 > 2"])
def test_it_leaves_comparisons_in_prose_alone(prose):
    assert clean_display_text(prose) == prose


def test_it_keeps_cjk_text_intact():
    raw = "# 保护基\n吡咯烷是一种五元环胺，<equation format=\"latex\">\\mathrm{pK_a}\\approx 11.3</equation>。"

    assert clean_display_text(raw) == "保护基 吡咯烷是一种五元环胺，pKₐ≈11.3。"


@pytest.mark.parametrize("raw", ALL_RECORDED_BLOCKS)
def test_it_cleans_every_recorded_sidecar_block_to_tag_free_text(raw):
    display = clean_display_text(raw)

    assert display
    assert_markup_free(display)
    assert "#" not in display
    assert clean_display_text(display) == display


def test_it_cleans_a_recorded_query_data_chunk():
    body = json.loads((FIXTURES / "lightrag" / "query_data_mix.json").read_text())["body"]
    raw = body["data"]["chunks"][0]["content"]

    display = clean_display_text(raw)

    assert_markup_free(display)
    assert display.startswith("Gamma Telescope Manual The Gamma telescope has a 4.2 metre primary mirror")
    assert "Filter | Wavelength; R band | 658 nm Maintenance The mirror" in display


@pytest.mark.parametrize("raw", [None, "", "   \n\t "])
def test_it_gives_empty_text_for_empty_input(raw):
    assert clean_display_text(raw) == ""


def test_it_never_raises_on_broken_markup():
    pieces = [
        "<equation format=\"latex\">", "</equation>", "<table format=\"json\">", "<table format=\"html\">",
        "</table>", "<drawing id=\"a\" />", "<drawing>", "<sup>", "</sub>", "<tr><td>", "[[\"a\",",
        "\"b\"]]", "\\frac{", "}", "{", "&amp;", "&#x;", "<", ">", "\"", "=", "# ", "\n\n", "文字", "text ",
        "<!--", "-->", "<![CDATA[", "$$", "\\", "^", "_",
    ]  # fmt: skip
    rng = random.Random(20261129)
    for _ in range(400):
        raw = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 25)))
        assert isinstance(clean_display_text(raw), str)


# --- LaTeX ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("latex", "text"),
    [
        ("\\alpha", "α"),
        ("\\Phi", "Φ"),
        ("a \\cdot b \\times c", "a·b×c"),
        ("x \\leq \\infty", "x≤∞"),
        ("a \\pm b \\approx c \\neq d", "a±b≈c≠d"),
        ("\\partial f \\rightarrow 0", "∂f→0"),
        ("\\frac{a}{b}", "a/b"),
        ("P=\\frac{ρgQH}{η}", "P=ρgQH/η"),
        ("\\frac{a+b}{c}", "(a+b)/c"),
        ("\\frac{a}{b+c}", "a/(b+c)"),
        ("\\frac{-1}{2}", "−1/2"),
        ("\\frac{\\frac{a}{b}}{c+d}", "a/b/(c+d)"),
        ("\\dfrac12", "1/2"),
        ("\\sqrt{x}", "√x"),
        ("\\sqrt{x+1}", "√(x+1)"),
        ("\\sqrt[3]{x}", "∛x"),
        ("\\sqrt[n]{x}", "x^(1/n)"),
        ("x^2", "x²"),
        ("x^{10}", "x¹⁰"),
        ("x_i", "xᵢ"),
        ("T_{max}", "Tₘₐₓ"),
        ("e^{-\\Phi A t}", "e^(−ΦAt)"),
        ("$$P = 1 - e^{-\\Phi A t}$$", "P=1−e^(−ΦAt)"),
        ("$x^2$", "x²"),
        ("\\[ E = mc^2 \\]", "E=mc²"),
        ("\\sum_{i=1}^{n} x_i", "∑ᵢ₌₁ⁿxᵢ"),
        ("\\int_0^1 f(x)\\,dx", "∫₀¹f(x) dx"),
        ("10\\,\\mathrm{kg} \\cdot \\mathrm{m}^{-3}", "10 kg·m⁻³"),
        ("\\text{flow rate} = Q", "flow rate=Q"),
        ("\\left( \\frac{1}{2} \\right)^{2}", "(1/2)²"),
        ("\\left. \\frac{df}{dx} \\right|_{x=0}", "df/dx|ₓ₌₀"),
        ("\\sin x + \\cos(y)", "sin x+cos(y)"),
        ("90^\\circ", "90°"),
        ("f^\\prime(x)", "f′(x)"),
        ("\\mathbb{R}^n", "ℝⁿ"),
        ("\\hat{x}", "x̂"),
        ("\\begin{pmatrix} a & b \\\\ c & d \\end{pmatrix}", "a b; c d"),
        ("\\newton \\cdot \\metre", "newton·metre"),
        ("\\operatorname{sign} x", "sign x"),
    ],
)
def test_it_reads_latex_as_plain_text(latex, text):
    assert latex_to_text(latex) == text


@pytest.mark.parametrize(
    "latex", ["", "{", "}", "}}}a{{{", "\\", "\\frac", "\\frac{a", "x^", "_", "\\sqrt[3", "$", "\\left", "\\begin{"]
)
def test_it_never_raises_on_malformed_latex(latex):
    assert isinstance(latex_to_text(latex), str)


def test_it_degrades_unbalanced_latex_to_what_it_can_read():
    assert latex_to_text("\\frac{a+b}{c") == "(a+b)/c"
    assert latex_to_text("x}^2 + y") == "x²+y"


def test_it_survives_deeply_nested_latex():
    for hostile in ("{" * 5000 + "x", "\\sqrt" * 3000 + "x", "x^{" * 3000, "$" * 5000, "\\frac" * 3000):
        assert isinstance(latex_to_text(hostile), str)


def test_it_never_raises_on_random_latex():
    pieces = ["\\frac", "\\sqrt", "[", "]", "{", "}", "^", "_", "\\alpha", "\\left(", "\\right", "x", "2", " ", "&",
              "\\\\", "\\", "$", "\\text", "\\begin{array}", "\\end", "-", "\\mathbb", "\\hat", "\\,"]  # fmt: skip
    rng = random.Random(7)
    for _ in range(1000):
        assert isinstance(latex_to_text("".join(rng.choice(pieces) for _ in range(rng.randint(1, 30)))), str)


# --- query terms ----------------------------------------------------------------


def test_it_takes_content_words_from_an_english_query():
    assert query_terms("What mirror does the Gamma telescope have?") == ["mirror", "gamma", "telescope"]


def test_it_takes_a_cjk_run_and_its_bigrams():
    assert query_terms("吡咯烷") == ["吡咯烷", "吡咯", "咯烷"]


def test_it_splits_mixed_scripts_and_folds_width_and_case():
    assert query_terms("NMP溶剂 ＭＩＲＲＯＲ x-ray a 4.2") == ["nmp", "溶剂", "mirror", "ray"]


def test_it_gives_no_terms_for_a_query_of_stopwords_and_punctuation():
    assert query_terms("what is the?! a") == []


# --- display quote keeps the query ----------------------------------------------


def test_it_keeps_a_display_quote_that_already_has_every_term():
    raw = block_content("sidecar_docx_live_gamma.blocks.jsonl", "Calibration")
    display = clean_display_text(raw)

    assert ensure_query_terms(display, raw, "tungsten lamp calibration") == display


def test_it_brings_back_a_term_a_shortened_display_quote_lost():
    raw = block_content("sidecar_pdf_sample.blocks.jsonl", "Collision risk")
    short = clean_display_text(raw)[:30]

    kept = ensure_query_terms(short, raw, "annual probability")

    assert kept.startswith("Collision risk The flux model … ")
    assert "the annual probability is" in kept
    assert len(kept) < len(short) + 90


def test_it_brings_back_a_term_an_equation_shows_as_a_symbol():
    raw = block_content("sidecar_pdf_sample.blocks.jsonl", "Collision risk")
    display = clean_display_text(raw)

    assert ensure_query_terms(display, raw, "phi flux") == display + " … Phi"


def test_it_does_not_bring_back_terms_that_live_only_in_tag_attributes():
    drawings = block_content("sidecar_docx_sample.blocks.jsonl", "Drawings")
    debris = block_content("sidecar_pdf_sample.blocks.jsonl", "Debris by altitude")
    power = block_content("sidecar_docx_sample.blocks.jsonl", "Power")

    for raw, query in [(drawings, "png assets image1"), (debris, "density"), (power, "latex eq format")]:
        display = clean_display_text(raw)
        assert ensure_query_terms(display, raw, query) == display


def test_it_brings_back_a_whole_cjk_run():
    raw = "前言部分。" * 20 + "吡咯烷是五元环胺。"
    short = clean_display_text(raw)[:20]

    assert "吡咯烷是五元环胺" in ensure_query_terms(short, raw, "吡咯烷")


# --- locator evidence -------------------------------------------------------------


def test_it_centres_the_evidence_on_query_terms_far_from_the_start():
    text = FILLER + "The impeller curve is measured at nominal speed. " + FILLER

    evidence = evidence_window(text, "impeller curve", width=200)

    assert "impeller curve" in evidence
    centre = evidence.index("impeller") + len("impeller curve") / 2
    assert abs(centre - len(evidence) / 2) < 40
    assert len(evidence) <= 220


def test_it_centres_a_cjk_query_on_the_word_not_inside_a_longer_name():
    text = "说明文字。" * 40 + "N-甲基吡咯烷酮是一种溶剂。" + "其他内容。" * 40 + "吡咯烷是五元环胺，常用于合成。" + "结尾。" * 60

    evidence = evidence_window(text, "吡咯烷", width=60)

    assert "吡咯烷是五元环胺" in evidence
    assert "甲基吡咯烷酮" not in evidence
    assert abs(evidence.index("吡咯烷是") - len(evidence) / 2) < 10


def test_it_centres_on_the_densest_cluster_of_terms():
    text = "mirror " + FILLER + "The primary mirror of the telescope is re-aluminised. " + FILLER + " telescope"

    evidence = evidence_window(text, "telescope mirror", width=120)

    assert "primary mirror of the telescope" in evidence


def test_it_cuts_the_evidence_between_whole_words():
    text = FILLER + "Calibration uses a tungsten flat-field lamp every night. " + FILLER
    words = set(clean_display_text(text).split())

    evidence = evidence_window(text, "tungsten", width=100)

    assert evidence.split()[0] in words
    assert evidence.split()[-1] in words


def test_it_prefixes_the_evidence_with_the_last_heading():
    raw = "The mirror is re-aluminised every three years in the on-site coating chamber."

    evidence = evidence_window(raw, "coating", heading_path=["Gamma Telescope Manual", "Maintenance"])

    assert evidence == "Maintenance — The mirror is re-aluminised every three years in the on-site coating chamber."


def test_it_does_not_repeat_a_heading_the_window_starts_with():
    raw = block_content("sidecar_docx_live_gamma.blocks.jsonl", "Maintenance")

    evidence = evidence_window(raw, "mirror", heading_path=["Gamma Telescope Manual", "Maintenance"])

    assert evidence == "Maintenance The mirror is re-aluminised every three years in the on-site coating chamber."


def test_it_gives_the_same_evidence_from_raw_or_already_cleaned_text():
    raw = block_content("sidecar_pdf_sample.blocks.jsonl", "Collision risk")

    assert evidence_window(clean_display_text(raw), "annual probability") == evidence_window(raw, "annual probability")


def test_it_gives_evidence_without_markup():
    raw = block_content("sidecar_docx_sample.blocks.jsonl", "Drawings")

    evidence = evidence_window(raw, "pump cross-section", heading_path=["Zeta Pump Specification", "Drawings"])

    assert_markup_free(evidence)
    assert "Pump cross-section" in evidence


def test_it_starts_the_evidence_at_the_beginning_when_no_term_matches():
    text = "First sentence here. " + FILLER

    evidence = evidence_window(text, "zirconium", width=80)

    assert evidence.startswith("First sentence here.")
    assert len(evidence) <= 80


def test_it_gives_the_heading_alone_for_empty_text():
    assert evidence_window("", "mirror", heading_path=["Maintenance"]) == "Maintenance"
    assert evidence_window("", "mirror") == ""


# --- fingerprint --------------------------------------------------------------------


def test_it_fingerprints_the_same_passage_the_same_despite_case_width_and_punctuation():
    assert fingerprint("The Gamma telescope, 4.2 m!") == fingerprint("the  GAMMA telescope 42m")
    assert fingerprint("ＴＨＥ ｍｉｒｒｏｒ") == fingerprint("the mirror")
    assert re.fullmatch(r"[0-9a-f]{40}", fingerprint("x"))


def test_it_fingerprints_passages_that_differ_only_late_differently():
    opening = "Shared opening of a long section. " * 40

    assert fingerprint(opening + "Ending one.") != fingerprint(opening + "Ending two.")


# --- MNote lexical score ------------------------------------------------------------------


def test_it_scores_the_fraction_of_query_terms_present():
    text = "The Gamma telescope has a 4.2 metre primary mirror."

    assert lexical_score(text, "gamma mirror zerodur coating") == pytest.approx(0.45)
    assert lexical_score(text, "zirconium") == 0.0


def test_it_gives_a_small_bonus_for_the_exact_phrase():
    with_phrase = lexical_score("The primary mirror is large.", "primary mirror")
    without = lexical_score("The mirror is primary.", "primary mirror")

    assert with_phrase == 1.0
    assert without == pytest.approx(0.9)


def test_it_scores_cjk_partial_overlap_between_zero_and_one():
    score = lexical_score("三甲基硅基很稳定", "三乙基硅基的稳定性")

    assert 0.0 < score < 1.0


def test_it_scores_zero_without_terms_or_text():
    assert lexical_score("some text", "the of") == 0.0
    assert lexical_score("", "mirror") == 0.0


# --- marks ----------------------------------------------------------------------------------


def test_it_marks_query_terms_as_whole_words():
    segments = mark_terms("The mirrors of the Gamma telescope.", "mirror gamma")

    assert segments == [
        ("The ", False),
        ("mirrors", True),
        (" of the ", False),
        ("Gamma", True),
        (" telescope.", False),
    ]


def test_it_marks_a_cjk_run_inside_longer_text():
    assert mark_terms("N-甲基吡咯烷酮", "吡咯烷") == [("N-甲基", False), ("吡咯烷", True), ("酮", False)]


def test_it_does_not_mark_a_latin_term_inside_another_word():
    assert mark_terms("every three years", "re") == [("every three years", False)]


def test_it_marks_folded_matches_and_keeps_the_text_as_shown():
    display = "Flow in m³/h and ＦＬＯＷ"

    segments = mark_terms(display, "m3 flow")

    assert "".join(s for s, _ in segments) == display
    assert [s for s, marked in segments if marked] == ["Flow", "m³", "ＦＬＯＷ"]


def test_it_returns_the_whole_quote_unmarked_without_matches():
    assert mark_terms("Nothing to see", "mirror") == [("Nothing to see", False)]
    assert mark_terms("", "mirror") == []


def test_it_shows_word_symbol_font_bullets_as_bullets_not_boxes():
    from mnote.text import clean_display_text

    assert clean_display_text("\uf0b7 First step\n\uf0a7 Detail \uf0fc done") == "• First step ▪ Detail ✓ done"


def test_it_calls_empty_and_field_error_quotes_unreadable_and_keeps_real_ones():
    from mnote.text import is_unreadable

    assert is_unreadable("") and is_unreadable("  · | ; ")
    assert is_unreadable("Figure 2 Error! Reference source not found. | Table 1 Error! Reference source not found.")
    assert is_unreadable("图 3 错误!未找到引用源。 | 表 1 错误！未找到引用源。")
    assert not is_unreadable("Hello")
    assert not is_unreadable(
        "Approval needs two signatures from the budget holder (see Error! Reference source not found.) "
        "before any order above the limit is placed with a supplier."
    )


def test_a_markdown_table_reads_like_the_html_ones_without_its_separator_row():
    raw = "## 进度\n| 截止日期 | 状态 |\n|------|:----:|\n| 2026-03 | 完成 |\n| 2026-05 | 进行中 |\n下一段"
    display = clean_display_text(raw)
    assert display == "进度 截止日期 | 状态; 2026-03 | 完成; 2026-05 | 进行中 下一段"
    assert "---" not in display and clean_display_text(display) == display
    # A horizontal rule and a list are not tables.
    assert clean_display_text("a\n---\n- b\n- c") == "a --- - b - c"


def test_plain_text_is_cleaned_like_text_with_markup_around_it():
    """Text with nothing to clean but whitespace and bullets takes a short
    path (issue 17); it must read the same as when markup sits beside it."""
    from mnote.text import clean_display_text

    plain = "  First\u3000step\n\n\t\uf0b7 主镜  校准\u00a0done \x0b "
    assert clean_display_text(plain) == "First step • 主镜 校准 done"
    # The same words with a tag in front go the long way and read the same.
    assert clean_display_text("<b></b>" + plain) == clean_display_text(plain)
    # Cleaning a cleaned quote again changes nothing.
    assert clean_display_text(clean_display_text(plain)) == clean_display_text(plain)


def test_unreadable_and_fingerprint_count_letters_of_every_script():
    from mnote.text import is_unreadable

    assert not is_unreadable("½ ² 主镜 Ⅻ")  # digits and letters beyond ASCII count
    assert is_unreadable("___ --- ...")  # an underscore is not a letter
    assert fingerprint("mirror_2") == fingerprint("mirror 2") == fingerprint("MIRROR-2")
    assert fingerprint("主镜²") == fingerprint("主镜2")


def test_the_lexical_score_gives_the_phrase_bonus_only_with_every_term():
    from mnote.text import lexical_score

    assert lexical_score("The primary mirror is cleaned", "primary mirror") == 1.0
    assert lexical_score("primary, then the mirror", "primary mirror") == 0.9
    assert lexical_score("主镜校准 每晚", "主镜校准") == 1.0
    assert lexical_score("the primary_mirror", "primary mirror") == 1.0
    assert lexical_score("primary mirrors", "primary mirror") == 1.0  # a term is a word's start
    assert lexical_score("mirror only", "primary mirror") == 0.45

import os
import struct
import subprocess
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor

import pytest

from mnote.preview import sandbox
from mnote.preview.pdf import pages as pdf_pages
from mnote.preview.pdf.pages import (
    PdfBusy,
    PdfRejected,
    find_text,
    locate_text,
    pdf_info,
    render_page_png,
)
from mnote.preview.pdf.child import MAX_HEIGHT_PX, MAX_PAGE_PIXELS
from mnote.preview.pdf.matching import PageText
from tests.pdf_factory import line_baseline, make_pdf, pdf_bytes

REPORT = [
    ["Orbital Debris Report 2025", "Tracked objects larger than 10 cm exceeded 36,000 in 2025."],
    [
        "Collision risk",
        "The annual probability of a collision between two",
        "tracked objects grows with the flux of debris in",
        "low Earth orbit, and the risk of col-",
        "lision is highest between 700 and 900 km.",
    ],
    ["Debris by altitude", "Most objects orbit between 500 and 600 km."],
]


@pytest.fixture
def report(tmp_path):
    return make_pdf(tmp_path / "orbital.pdf", REPORT, title="Orbital Debris Report 2025")


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def ink(png: bytes, rect: list[float]) -> float:
    """The share of dark pixels inside ``rect`` (page fractions) of a PNG this
    module wrote (8-bit RGB, filter 0)."""
    width, height = png_size(png)
    data, pos = b"", 8
    while pos < len(png):
        length, kind = struct.unpack(">I", png[pos : pos + 4])[0], png[pos + 4 : pos + 8]
        if kind == b"IDAT":
            data += png[pos + 8 : pos + 8 + length]
        pos += 12 + length
    rows = zlib.decompress(data)
    x0, y0, x1, y1 = (round(v * s) for v, s in zip(rect, (width, height, width, height)))
    dark = total = 0
    for y in range(y0, y1 + 1):
        row = rows[y * (3 * width + 1) + 1 : (y + 1) * (3 * width + 1)]
        for x in range(x0, x1 + 1):
            total += 1
            dark += sum(row[3 * x : 3 * x + 3]) < 384
    return dark / total


# --- pages and images -----------------------------------------------------------


def test_it_reads_the_page_count_sizes_and_title(tmp_path):
    path = make_pdf(tmp_path / "a4.pdf", [["one"], ["two"], ["three"]], page_size=(595.28, 841.89), title="Survey")
    info = pdf_info(path)
    assert info.page_count == 3
    assert info.pages == [(595.28, 841.89)] * 3
    assert info.title == "Survey"


def test_it_gives_rotated_pages_their_displayed_size_and_no_title_when_there_is_none(tmp_path):
    info = pdf_info(make_pdf(tmp_path / "landscape.pdf", [["sideways"]], rotate=90))
    assert info.pages == [(792.0, 612.0)]
    assert info.title is None


def test_it_renders_page_2_as_a_png_of_the_requested_width(report):
    png = render_page_png(report, 2, width_px=1000)
    assert png_size(png) == (1000, round(792 * 1000 / 612))
    heading_line = [72 / 612, line_baseline(0) - 10 / 792, 200 / 612, line_baseline(0)]
    assert ink(png, heading_line) > 0.05  # the page's text is drawn, not a blank image


def test_it_caps_the_width_at_2000_px(report):
    assert png_size(render_page_png(report, 1, width_px=5000))[0] == 2000


def test_it_draws_a_very_tall_page_within_the_pixel_limits(tmp_path):
    width, height = png_size(render_page_png(make_pdf(tmp_path / "strip.pdf", [["x"]], page_size=(20, 14400)), 1))
    assert height <= MAX_HEIGHT_PX
    assert width * height <= MAX_PAGE_PIXELS


@pytest.mark.parametrize("page", [0, 4, 99])
def test_it_rejects_a_page_out_of_range(report, page):
    with pytest.raises(PdfRejected, match=f"no page {page}"):
        render_page_png(report, page)


def test_it_names_the_page_count_when_a_page_is_past_the_end(report):
    with pytest.raises(PdfRejected, match="this PDF has 3 pages"):
        render_page_png(report, 4)


def test_it_renders_pages_from_many_threads_at_once(report):
    jobs = [(page, width) for page in (1, 2, 3) for width in (300, 600, 900)]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        sizes = list(pool.map(lambda job: png_size(render_page_png(report, job[0], width_px=job[1])), jobs))
    assert [w for w, _ in sizes] == [width for _, width in jobs]


def test_it_reads_a_file_once_per_version(tmp_path, monkeypatch):
    calls = []
    run_child = pdf_pages._run_child
    monkeypatch.setattr(pdf_pages, "_run_child", lambda op, *args: calls.append(op) or run_child(op, *args))
    path = make_pdf(tmp_path / "notes.pdf", [["alpha"], ["beta"]])
    assert pdf_info(path).page_count == pdf_info(path).page_count == 2
    render_page_png(path, 1)
    render_page_png(path, 1)
    find_text(path, "alpha alpha alpha")
    find_text(path, "beta beta beta")
    assert calls == ["info", "render", "text"]

    make_pdf(path, [["alpha"], ["beta"], ["gamma"]])  # the file changes: read again
    assert pdf_info(path).page_count == 3


# --- finding the evidence text --------------------------------------------------


def test_it_finds_a_sentence_on_page_2_exactly(report):
    match = find_text(report, "The annual probability of a collision between two")
    assert (match.page, match.method, match.score) == (2, "exact", 1.0)
    assert match.matched_text == "The annual probability of a collision between two"
    [(x0, y0, x1, y1)] = match.rects
    assert 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1
    assert abs(x0 - 72 / 612) < 0.01  # starts at the left margin
    baseline = line_baseline(1)  # line 1 of the page (0 is the heading)
    assert y0 < baseline < y1 + 0.005
    assert y1 - y0 < 16 / 792  # one line tall
    assert ink(render_page_png(report, 2), match.rects[0]) > 0.1


def test_it_gives_one_rect_per_line_for_a_passage_over_lines(report):
    match = find_text(report, "a collision between two tracked objects grows with the flux")
    assert match.page == 2 and match.method == "exact"
    first, second = match.rects
    assert first[3] <= second[1]  # one below the other
    assert abs(second[0] - 72 / 612) < 0.01
    assert first[0] > 0.3  # the passage starts mid-line


def test_it_matches_across_a_heading_prefix_other_spacing_and_a_hyphenated_line_end(report):
    match = find_text(report, "Collision risk — the risk of   collision is highest between 700 and 900 km")
    assert match.page == 2
    assert match.score >= 0.6
    assert "collision is highest" in match.matched_text  # the hyphenated word is shown joined
    assert len(match.rects) == 2


def test_it_falls_back_to_a_fuzzy_match_for_a_reworded_passage(report):
    match = find_text(report, "The yearly probability of collisions between two tracked objects grows with the flux")
    assert match.page == 2
    assert match.method == "fuzzy"
    assert 0.6 <= match.score < 1
    assert "probability of a collision between two tracked objects grows with the flux" in match.matched_text
    assert len(match.rects) == 2


@pytest.mark.parametrize(
    "evidence",
    ["The reactor uses heavy water as a moderator in its primary circuit", "km", "", "   — "],
)
def test_it_finds_nothing_for_text_the_pdf_does_not_hold(report, evidence):
    assert find_text(report, evidence) is None


def test_it_prefers_the_hinted_page_when_a_passage_repeats(tmp_path):
    repeated = "Check the cooling loop before every launch window."
    path = make_pdf(tmp_path / "manual.pdf", [[repeated], ["Other things."], [repeated]])
    assert find_text(path, repeated).page == 1
    assert find_text(path, repeated, page_hint=3).page == 3


def test_it_finds_a_passage_across_a_page_break(tmp_path):
    path = make_pdf(
        tmp_path / "survey.pdf",
        [["Findings", "The survey ends with a warning about the"], ["growing number of small fragments in orbit."]],
    )
    match = find_text(path, "a warning about the growing number of small fragments in orbit")
    assert match.page == 2  # the page holding most of it
    assert match.method == "exact"
    assert match.matched_text == "growing number of small fragments in orbit"


def test_it_uses_the_query_to_choose_between_equally_good_places(tmp_path):
    path = make_pdf(
        tmp_path / "sensors.pdf",
        [
            ["The flux of debris in low orbit is measured by radar every single night."],
            ["Nothing."],
            ["The flux of debris in low orbit is measured by laser every single night."],
        ],
    )
    evidence = "The flux of debris in low orbit is measured by every single night"
    laser = find_text(path, evidence, query="laser")
    assert laser.page == 3
    # The highlight covers whole words, the inserted one included.
    assert laser.matched_text == "The flux of debris in low orbit is measured by laser every single night"
    assert find_text(path, evidence, query="radar").page == 1


def test_it_finds_text_on_a_rotated_page_where_it_is_drawn(tmp_path):
    for rotate in (90, 180, 270):
        path = make_pdf(tmp_path / f"turned-{rotate}.pdf", [["Upside down or sideways, still found."]], rotate=rotate)
        match = find_text(path, "Upside down or sideways, still found.")
        assert len(match.rects) == 1, rotate
        assert ink(render_page_png(path, 1, width_px=800), match.rects[0]) > 0.1, rotate


# --- the matching itself, on text layers in hand ---------------------------------


def test_it_matches_cjk_text_whatever_spaces_and_line_breaks_the_pdf_put_in():
    pages = [
        PageText("溶剂 N-甲基吡咯烷酮 的用量见第一节。"),
        PageText("第六节 吡 咯 烷 的 储 存\r\n吡咯烷应密封保存于阴凉\r\n处，远离火源和氧化剂。"),
    ]
    match = locate_text(pages, "吡咯烷的储存 — 吡咯烷应密封保存于阴凉处，远离火源", query="吡咯烷")
    assert (match.page, match.method) == (2, "exact")
    assert "".join(match.matched_text.split()) == "吡咯烷的储存吡咯烷应密封保存于阴凉处，远离火源"


def test_it_never_searches_for_a_bare_short_query():
    pages = [PageText("溶剂 N-甲基吡咯烷酮 的用量。"), PageText("吡咯烷应密封保存。")]
    assert locate_text(pages, "吡咯烷", query="吡咯烷") is None


def test_it_folds_case_width_ligatures_and_accents():
    pages = [PageText("Nothing here."), PageText("Die STRASSE: ﬁnal café pH值为７，Ａ级。")]
    match = locate_text(pages, "die Straße final cafe\u0301 PH值为7, a级")
    assert (match.page, match.method, match.score) == (2, "exact", 1.0)


def test_it_gives_no_rects_when_the_text_layer_has_no_boxes():
    match = locate_text([PageText("A passage without character boxes.")], "passage without character boxes")
    assert match.rects == []


def test_it_merges_character_boxes_into_one_rect_per_line():
    text = "abcd_efgh ijklmn"
    boxes = []
    for i, char in enumerate(text):
        line_y, x = (0.1, 0.1 + 0.02 * i) if i < 9 else (0.2, 0.1 + 0.02 * (i - 10))
        if char == " ":
            boxes += [float("nan")] * 4
        elif char == "_":  # below the line's band, yet part of the line
            boxes += [x, line_y + 0.012, x + 0.015, line_y + 0.014]
        else:
            boxes += [x, line_y, x + 0.015, line_y + 0.012]
    match = locate_text([PageText(text, boxes)], "abcd efgh ijklmn")
    assert match.rects == [[0.1, 0.1, 0.275, 0.114], [0.1, 0.2, 0.215, 0.212]]


# --- files that cannot be previewed ---------------------------------------------


def _broken(tmp_path, kind: str):
    path = tmp_path / f"{kind}.pdf"
    good = pdf_bytes(REPORT)
    path.write_bytes(
        {
            "empty": b"",
            "random": os.urandom(4096),
            "random_after_a_header": b"%PDF-1.7\n" + os.urandom(4096),
            "truncated": good[:200],
            "locked": pdf_bytes(REPORT, locked=True),
        }[kind]
    )
    return path


CALLS = {
    "pdf_info": pdf_info,
    "render_page_png": lambda path: render_page_png(path, 1),
    "find_text": lambda path: find_text(path, "The annual probability of a collision"),
}


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("empty", "The file is empty"),
        ("random", "not a PDF"),
        ("random_after_a_header", "not a valid PDF"),
        ("truncated", "not a valid PDF"),
        ("locked", "password-protected"),
    ],
)
def test_it_rejects_a_broken_or_locked_file_with_a_clear_message(tmp_path, kind, message, call):
    with pytest.raises(PdfRejected, match=message):
        CALLS[call](_broken(tmp_path, kind))


def test_it_reads_what_it_can_of_a_file_cut_in_half_or_rejects_it(tmp_path):
    path = tmp_path / "half.pdf"
    path.write_bytes(pdf_bytes(REPORT)[: len(pdf_bytes(REPORT)) // 2])
    for call in CALLS.values():
        try:
            call(path)
        except PdfRejected as e:
            assert str(e)


def test_it_rejects_a_missing_file(tmp_path):
    with pytest.raises(PdfRejected, match="missing"):
        pdf_info(tmp_path / "gone.pdf")


def test_it_stops_a_decompression_bomb_at_the_memory_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(pdf_pages, "CHILD_MEMORY_BYTES", 256 * 2**20)
    packer = zlib.compressobj(1)
    blank = b" " * (32 * 2**20)
    stream = b"".join([packer.compress(blank) for _ in range(16)] + [packer.flush()])  # 512 MB of spaces
    good = pdf_bytes([["placeholder"]])
    start, end = good.index(b"<< /Length "), good.index(b"endstream") + len(b"endstream")
    bomb = tmp_path / "bomb.pdf"
    bomb.write_bytes(
        good[:start]
        + b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream)
        + stream
        + b"\nendstream"
        + good[end:]
    )
    with pytest.raises(PdfRejected, match="more memory than the preview allows"):
        render_page_png(bomb, 1)
    assert png_size(render_page_png(make_pdf(tmp_path / "fine.pdf", [["fine"]]), 1, width_px=2000))[0] == 2000


def test_it_reports_a_reader_that_takes_too_long(report, monkeypatch):
    monkeypatch.setitem(pdf_pages.TIMEOUTS_S, "info", 0.001)
    with pytest.raises(PdfRejected, match="took too long"):
        pdf_info(report)


@pytest.mark.parametrize(("status", "message"), [(-11, "crashed"), (-6, "more memory"), (1, "failed")])
def test_it_reports_a_reader_that_dies(report, monkeypatch, status, message):
    monkeypatch.setattr(
        sandbox, "_run_measured", lambda command, fd, timeout: subprocess.CompletedProcess(command, status, b"", b"boom")
    )
    with pytest.raises(PdfRejected, match=message):
        pdf_info(report)


def test_it_says_busy_when_no_reader_is_free(report, monkeypatch):
    monkeypatch.setattr(pdf_pages, "_worker_slots", threading.Semaphore(0))
    monkeypatch.setitem(pdf_pages.TIMEOUTS_S, "info", 0.01)
    with pytest.raises(PdfBusy, match="busy"):
        pdf_info(report)

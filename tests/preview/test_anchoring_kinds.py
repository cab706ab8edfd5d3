"""Locating in every kind of preview: a highlight never starts or ends inside
a word, whichever kind of file and whichever path (text map or PDF text)
finds it; an HTML page's words outside its paragraphs are found too."""

import io

from mnote.preview.anchoring import find_passage
from mnote.preview.html_render import preview_html
from mnote.preview.pdf.pages import PageText, locate_text
from mnote.preview.text_map import build_text_map

# Rows of a sheet as the sheet renderer writes them: a block per row, cells apart.
SHEET = (
    '<table><tr data-block-index="0"><td>Port Arthur</td>\t<td>Jefferson County</td>\t<td>Texas</td></tr>'
    '<tr data-block-index="1"><td>Beaumont</td>\t<td>Jefferson County</td>\t<td>Texas</td>\t<td>Gulf coast refinery town</td></tr></table>'
)
PROSE = (
    '<p data-block-index="0">Run grub-install /dev/sda after replacing the disks. This will overwrite the MBR, '
    "so be careful not to overwrite the wrong location.</p>"
    '<p data-block-index="1">AppArmor 支持已经内置于 Debian 提供的标准内核中。因此，启用 AppArmor 只需执行命令。</p>'
)


def marked(html: str, evidence: str) -> str:
    anchor = find_passage(build_text_map(html), evidence)
    assert anchor is not None
    return anchor.as_json()["textQuote"]["exact"]


def test_a_close_match_in_a_sheet_row_starts_at_the_word_not_inside_it():
    # LightRAG's text of the row differs a little (no "Texas"), and the window starts inside "Beaumont".
    assert marked(SHEET, "aumont Jefferson County Gulf coast refinery town") == "Beaumont Jefferson County Texas Gulf coast refinery town"


def test_evidence_cut_inside_its_first_and_last_words_marks_those_words_whole():
    # A chunk cut at token boundaries: "rub-install" of "grub-install", "locat" of "location".
    quote = marked(PROSE, "rub-install /dev/sda after replacing the disks. This will overwrite the MBR, so be careful not to overwrite the wrong locat")
    assert quote.startswith("grub-install /dev/sda")
    assert quote.endswith("the wrong location")


def test_chinese_text_is_marked_where_the_evidence_starts_and_ends():
    # CJK text has no word edges: the marked characters are the cited ones.
    assert marked(PROSE, "已经内置于 Debian 提供的标准内核") == "已经内置于 Debian 提供的标准内核"


def test_a_pdf_text_match_cut_inside_words_covers_them_whole():
    pages = [
        PageText("Site 3 was dry. The stakes stood."),
        PageText("Site 7 showed a sinkhole that opened after the February storm surge; monitoring stakes were installed."),
    ]
    match = locate_text(pages, "howed a sinkhole that opened after the February storm sur")
    assert match.page == 2
    assert match.matched_text == "showed a sinkhole that opened after the February storm surge"


def test_the_words_of_an_html_paragraph_beside_a_list_it_holds_can_be_found():
    # DocBook's HTML (a manual's pages) puts a paragraph's words and its list in one div.
    page = (
        b"<html><body><h2>Boot loader</h2><div class='para'>Most of the time this error is caused by an updated "
        b"GRUB whose modules do not match the old core image.<ul><li>Reinstall GRUB on the right disk</li></ul></div></body></html>"
    )
    html = preview_html(io.BytesIO(page), None)["html"]
    quote = marked(html, "Most of the time this error is caused by an updated GRUB")
    assert quote == "Most of the time this error is caused by an updated GRUB"
    assert marked(html, "Reinstall GRUB on the right disk") == "Reinstall GRUB on the right disk"


def test_a_word_changed_near_the_end_of_close_text_is_still_marked_up_to_the_passage_end():
    html = (
        '<p data-block-index="0">Intro words. grub relies on /etc/kernel/postinst.d/zz-update-grub and /etc/kernel/postrm.d/zz-update-grub '
        "to call update-grub when kernels are installed or removed. Then other unrelated text follows on and on.</p>"
    )
    # Another extraction of the same sentence: one word garbled two words before its end.
    cited = "grub relies on /etc/kernel/postinst.d/zz-update-grub and /etc/kernel/postrm.d/zz-update-grub to call update-grub when kernels are"
    assert marked(html, cited + " nistalledd or removed") == cited + " installed or removed"
    # Evidence that runs on into other words than the text's is not stretched over the text that follows.
    assert marked(html, cited + " installed, and then a different end") == cited + " installed"


def test_a_short_header_of_a_sibling_file_is_not_taken_for_the_cited_one():
    html = '<pre data-block-index="0">"""\n    pygments.lexers._stata_builtins\n    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"""</pre>'
    assert find_passage(build_text_map(html), '"""\npygments.lexers._julia_builtins\n~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~') is None
    assert marked(html, "pygments.lexers._stata_builtin") == "pygments.lexers._stata_builtins"

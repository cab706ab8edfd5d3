"""Real files of each kind the preview shows, made with the libraries people
make them with (python-pptx, openpyxl, EbookLib, odfpy, Pillow), plus the
hand-written ones a library has no writer for (RTF as WordPad writes it)."""

from __future__ import annotations

import datetime
import io
from pathlib import Path

PASSAGE = "The primary mirror was recoated with aluminium in the vacuum chamber during March."


def png_bytes(size=(40, 30), colour=(200, 40, 40)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, format="PNG")
    return out.getvalue()


def make_pptx(path: Path) -> Path:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[0])
    slide.shapes.title.text = "Observatory quarterly review"
    slide.placeholders[1].text = "Telescope operations, first quarter"
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Mirror maintenance"
    frame = slide.placeholders[1].text_frame
    frame.text = PASSAGE
    point = frame.add_paragraph()
    point.text = "Reflectivity rose to 92 percent afterwards."
    point.level = 1
    slide.notes_slide.notes_text_frame.text = "Mention the cost overrun of the coating plant."
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(5), Inches(4), Inches(1)).table
    table.cell(0, 0).text = "Metric"
    table.cell(0, 1).text = "Value"
    table.cell(1, 0).text = "Seeing"
    table.cell(1, 1).text = "0.8 arcsec"
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Site photograph"
    slide.shapes.add_picture(io.BytesIO(png_bytes()), Inches(1), Inches(2))
    for n in range(4):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Filler slide {n}"
        slide.placeholders[1].text = f"Routine observing log entry number {n} with nothing special."
    deck.save(path)
    return path


def make_xlsx(path: Path, rows: int = 40) -> Path:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Item", "Cost", "Date"])
    sheet.append(["Mirror coating", 1200.5, datetime.date(2024, 3, 1)])
    sheet.append(["Vacuum pump", 830, datetime.date(2024, 3, 9)])
    for n in range(rows):
        sheet.append([f"Consumable {n}", n * 3])
    notes = book.create_sheet("Observing log")
    notes["A1"] = "Night"
    notes["B1"] = "Remark"
    notes.append([1, "Clouds after midnight"])
    notes.append([2, "Perfect seeing on the spectrograph run, 0.6 arcsec all night"])
    book.save(path)
    return path


def make_epub(path: Path, extra_chapter_html: str = "") -> Path:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("mnote-test-book")
    book.set_title("A Field Guide to Telescopes")
    book.set_language("en")
    book.add_author("Test Author")
    cover = epub.EpubItem(uid="img1", file_name="images/dome.png", media_type="image/png", content=png_bytes())
    book.add_item(cover)
    chapters = []
    texts = [
        ("Refractors", "<p>Refractors use lenses; chromatic aberration troubles cheap ones.</p>"),
        ("Reflectors", (f'<p>{PASSAGE}</p><p><img src="images/dome.png" alt="The dome"/></p>'
                        '<p>See <a href="chap_1.xhtml">the chapter on refractors</a>.</p>')),
        ("Mounts", "<p>An equatorial mount follows the sky with one motor.</p>" + extra_chapter_html),
    ]  # fmt: skip
    for n, (title, body) in enumerate(texts, start=1):
        chapter = epub.EpubHtml(title=title, file_name=f"chap_{n}.xhtml", lang="en")
        chapter.content = f"<h1>{title}</h1>{body}"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    epub.write_epub(str(path), book)
    return path


def make_odt(path: Path) -> Path:
    from odf.opendocument import OpenDocumentText
    from odf.style import ParagraphProperties, Style
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, List, ListItem, Note, NoteBody, NoteCitation, P

    doc = OpenDocumentText()
    centred = Style(name="Centred", family="paragraph")
    centred.addElement(ParagraphProperties(textalign="center"))
    doc.styles.addElement(centred)
    doc.text.addElement(H(outlinelevel=1, text="Observatory report"))
    doc.text.addElement(P(stylename=centred, text="Prepared for the board"))
    paragraph = P(text=PASSAGE)
    note = Note(noteclass="footnote")
    note.addElement(NoteCitation(text="1"))
    body = NoteBody()
    body.addElement(P(text="Aluminium, 100 nm thick."))
    note.addElement(body)
    paragraph.addElement(note)
    doc.text.addElement(paragraph)
    items = List()
    item = ListItem()
    item.addElement(P(text="Check the dome seals"))
    items.addElement(item)
    doc.text.addElement(items)
    table = Table()
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    row = TableRow()
    for value in ("Filter", "Band"):
        cell = TableCell()
        cell.addElement(P(text=value))
        row.addElement(cell)
    table.addElement(row)
    doc.text.addElement(table)
    doc.save(str(path))
    return path


# As WordPad writes it: font and colour tables, a generator, \'hh and \uN characters.
RTF = (
    r"{\rtf1\ansi\ansicpg1252\deff0\nouicompat{\fonttbl{\f0\fnil\fcharset0 Calibri;}}"
    r"{\colortbl ;\red255\green0\blue0;}{\*\generator Riched20 10.0.19041}\viewkind4\uc1 "
    "\n"
    r"\pard\sa200\sl276\slmult1\f0\fs22\lang9 Observatory caf\'e9 menu\par"
    "\n"
    r"\b " + PASSAGE + r"\b0\par"
    "\n"
    r"Price: 5 \u8364? per cup\par"
    "\n}"
)


def make_rtf(path: Path) -> Path:
    path.write_bytes(RTF.encode("ascii"))
    return path


CODE = '''"""Pointing model for the telescope mount."""

import math


def refraction(altitude_deg: float) -> float:
    """Atmospheric refraction in arc minutes (Bennett's formula)."""
    return 1 / math.tan(math.radians(altitude_deg + 7.31 / (altitude_deg + 4.4)))


def hour_angle(lst_hours: float, right_ascension_hours: float) -> float:
    # The hour angle grows westward as the sky turns.
    return (lst_hours - right_ascension_hours) % 24
'''


def make_code(path: Path, text: str = CODE) -> Path:
    path.write_text(text)
    return path


HTML = (
    """<!DOCTYPE html>
<html><head><title>Dome manual</title><script>document.title = "owned"</script>
<link rel="stylesheet" href="https://cdn.example.com/x.css"></head>
<body onload="alert(1)"><h1>Opening the dome</h1>
<p style="background:url(https://tracker.example.com/p.gif)">"""
    + PASSAGE
    + """</p>
<p><img src="https://tracker.example.com/pixel.png" alt="tracking pixel"> <a href="javascript:alert(2)">click</a>
<a href="https://example.com/manual">the maker's manual</a> <a href="#safety">safety</a></p>
<iframe src="https://evil.example.com/"></iframe><form action="https://evil.example.com/"><input name="q"></form>
<h2 id="safety">Safety</h2><p onclick="alert(3)">Never open the dome in rain.</p></body></html>
"""
)


def make_html(path: Path, text: str = HTML) -> Path:
    path.write_text(text)
    return path


def make_textpack(path: Path) -> Path:
    """A TextBundle as Bear and Ulysses export it: a zipped .textbundle folder."""
    import json
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(
            "Notes.textbundle/info.json", json.dumps({"version": 2, "type": "net.daringfireball.markdown"})
        )
        archive.writestr(
            "Notes.textbundle/text.md",
            f"# Dome notes\n\n{PASSAGE}\n\n![The dome](assets/dome.png)\n\n![remote](https://tracker.example.com/p.png)\n",
        )
        archive.writestr("Notes.textbundle/assets/dome.png", png_bytes())
    return path

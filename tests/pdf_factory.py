"""Small, valid PDFs written by hand for tests: one text line per string,
Helvetica (a standard font every reader has), no dependency on the PDF
library under test.

    make_pdf(tmp_path / "report.pdf", [["page 1, line 1", "line 2"], ["page 2"]])

Text is encoded as WinAnsi (Latin-1 and a few typographic signs); characters
outside it become "?", so CJK text cannot be written this way.
"""

from pathlib import Path

LETTER = (612.0, 792.0)
MARGIN = 72.0


def make_pdf(
    path: Path | str,
    pages: list[list[str]],
    *,
    title: str | None = None,
    page_size: tuple[float, float] = LETTER,
    font_size: float = 12.0,
    rotate: int = 0,
    locked: bool = False,
) -> Path:
    """Write a PDF with one page per item of ``pages`` and return its path.

    Lines start at the top-left margin (72 pt) and are ``1.5 × font_size``
    apart. ``rotate`` sets every page's /Rotate (0, 90, 180, 270). ``locked``
    adds a standard security handler whose user password is not empty, as a
    password-protected file has (the content itself is left in clear).
    """
    path = Path(path)
    path.write_bytes(
        pdf_bytes(pages, title=title, page_size=page_size, font_size=font_size, rotate=rotate, locked=locked)
    )
    return path


def line_baseline(line_index: int, *, page_size: tuple[float, float] = LETTER, font_size: float = 12.0) -> float:
    """Where line ``line_index`` of a page sits (its baseline), as a fraction
    of the page height from the top of the unrotated page."""
    return (MARGIN + line_index * 1.5 * font_size) / page_size[1]


def pdf_bytes(
    pages: list[list[str]],
    *,
    title: str | None = None,
    page_size: tuple[float, float] = LETTER,
    font_size: float = 12.0,
    rotate: int = 0,
    locked: bool = False,
) -> bytes:
    """The bytes ``make_pdf`` writes."""
    width, height = page_size
    objects: list[bytes] = []  # object n is objects[n - 1]

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in once the page tree exists
    tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    kids = []
    for lines in pages:
        leading = 1.5 * font_size
        ops = [f"BT /F1 {font_size:g} Tf {leading:g} TL {MARGIN:g} {height - MARGIN:g} Td".encode()]
        for i, line in enumerate(lines):
            ops.append((b"T* " if i else b"") + b"(" + _pdf_string(line) + b") Tj")
        ops.append(b"ET")
        stream = b"\n".join(ops)
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(
            add(
                f"<< /Type /Page /Parent {tree} 0 R /MediaBox [0 0 {width:g} {height:g}] /Rotate {rotate} "
                f"/Resources << /Font << /F1 {font} 0 R >> >> /Contents {content} 0 R >>".encode()
            )
        )
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {tree} 0 R >>".encode()
    objects[tree - 1] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode()
    info = add(b"<< /Title (" + _pdf_string(title) + b") >>") if title else None
    encrypt = None
    if locked:
        # Owner and user keys that no empty password validates.
        encrypt = add(
            b"<< /Filter /Standard /V 1 /R 2 /Length 40 /P -4 /O <" + b"ab" * 32 + b"> /U <" + b"cd" * 32 + b"> >>"
        )

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer = f"<< /Size {len(objects) + 1} /Root {catalog} 0 R".encode()
    if info:
        trailer += f" /Info {info} 0 R".encode()
    if encrypt:
        trailer += f" /Encrypt {encrypt} 0 R /ID [<{'0' * 32}> <{'0' * 32}>]".encode()
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252", errors="replace")
    return (
        raw.replace(b"\\", b"\\\\")
        .replace(b"(", b"\\(")
        .replace(b")", b"\\)")
        .replace(b"\r", b"\\r")
        .replace(b"\n", b"\\n")
    )

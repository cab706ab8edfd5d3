"""How the DOCX preview reads a package's parts: small members are read and
inflated in one go, and anything out of the ordinary (a damaged member, a
local header that names another file) is still refused with the message the
chunked reader gives; styles.xml is read without Word's latentStyles list."""

import zipfile

import pytest

from mnote.preview.docx_render import DocxRejected, render_docx
from tests.docx_factory import heading, make_docx, para

LATENT_STYLES = (
    '<w:latentStyles w:defLockedState="0" w:defUIPriority="99" w:count="2">'
    '<w:lsdException w:name="Normal" w:uiPriority="0" w:qFormat="1"/>'
    '<w:lsdException w:name="heading 1" w:uiPriority="9" w:qFormat="1"/>'
    "</w:latentStyles>"
)


def rewrite(path, change, compression=zipfile.ZIP_DEFLATED):
    """The package at ``path`` with ``change(name, data) -> data`` applied to each member."""
    with zipfile.ZipFile(path) as z:
        members = [(info.filename, z.read(info)) for info in z.infolist()]
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in members:
            z.writestr(name, change(name, data))
    return path


def test_headings_styled_after_a_latent_styles_block_are_headings(tmp_path):
    path = make_docx(tmp_path / "latent.docx", [heading("Scope"), para("Body text.")])

    def add_latent_styles(name, data):
        if name != "word/styles.xml":
            return data
        start = data.index(b"<w:style ")  # Word writes the block just before the first style
        return data[:start] + LATENT_STYLES.encode() + data[start:]

    rewrite(path, add_latent_styles)

    html = render_docx(path).html
    assert '<h1 data-heading-level="1"' in html and "Scope</h1>" in html
    assert "Body text." in html


def test_a_stored_package_renders_as_its_deflated_twin(tmp_path):
    deflated = make_docx(tmp_path / "deflated.docx", [heading("Scope"), para("Body text.")])
    stored = rewrite(make_docx(tmp_path / "stored.docx", [heading("Scope"), para("Body text.")]),
                     lambda name, data: data, zipfile.ZIP_STORED)  # fmt: skip

    assert render_docx(stored).html == render_docx(deflated).html


def _damaged(path, patch) -> str:
    data = bytearray(path.read_bytes())
    patch(data)
    path.write_bytes(bytes(data))
    with pytest.raises(DocxRejected) as refused:
        render_docx(path)
    return refused.value.message


def test_a_member_whose_local_header_names_another_file_is_refused_as_damaged(tmp_path):
    path = make_docx(tmp_path / "renamed.docx", [para("Body text.")])

    def rename_in_local_header(data):
        # The first mention is the member's local header; the directory at the end keeps the name.
        at = data.index(b"word/document.xml")
        data[at : at + 4] = b"WORD"

    assert "damaged" in _damaged(path, rename_in_local_header)


def test_a_member_with_corrupt_compressed_bytes_is_refused_as_damaged(tmp_path):
    path = make_docx(tmp_path / "corrupt.docx", [para(" ".join(str(n * 7919 % 10007) for n in range(600)))])

    def corrupt_document(data):
        at = data.index(b"word/document.xml") + len("word/document.xml") + 20
        for i in range(at, at + 40):
            data[i] ^= 0x5A

    assert "damaged" in _damaged(path, corrupt_document)

"""An image file: shown whole, fitting the frame, and at full size on a click
(no script). A citation of an image points at the file as a whole."""

from __future__ import annotations

from django.utils.translation import gettext as _
from lxml import etree
from lxml import html as lxml_html

from .docx.limits import PreviewRejected
from .renderers import IMAGE_TYPES, checked_image

MAX_IMAGE_BYTES = 50 * 1024 * 1024


def _read(fp) -> bytes:
    data = fp.read(MAX_IMAGE_BYTES + 1)
    if len(data) > MAX_IMAGE_BYTES:
        raise PreviewRejected(_("This image is too large to preview; open the original instead."))
    return data


def preview_image(fp, ctx) -> dict:
    name = ctx.path.name if ctx.path else "image"
    checked_image(name, _read(fp))  # a damaged or misnamed file says so here, not as a broken picture
    figure = etree.Element("figure", {"class": "image-zoom"})
    etree.SubElement(figure, "input", {"type": "checkbox", "id": "image-zoom", "aria-label": _("Show at full size")})
    label = etree.SubElement(figure, "label", {"for": "image-zoom", "title": _("Click to zoom")})
    etree.SubElement(label, "img", {"src": ctx.asset_url("file"), "alt": name})
    return {"html": lxml_html.tostring(figure, encoding="unicode"), "blocks": 0, "title": "", "warnings": []}


def load_asset(fp, part: str):
    if part != "file":
        raise KeyError(part)
    # The preview opens files by descriptor, so the name is the source's, not
    # the handle's: take the type the bytes declare, if it is one browsers show.
    data = _read(fp)
    for extension, (_content_type, magics) in IMAGE_TYPES.items():
        if data.startswith(magics):
            return checked_image(f"file.{extension}", data)
    return checked_image(str(getattr(fp, "name", "")), data)

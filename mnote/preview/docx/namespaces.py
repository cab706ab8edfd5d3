"""OOXML namespace URIs and Clark-notation tag names used by the renderer.

Strict OOXML files use other URIs for the same vocabulary; ``STRICT_TO_TRANSITIONAL``
maps them so the rest of the renderer only knows one set of names.
"""

import re

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
M = "http://schemas.openxmlformats.org/officeDocument/2006/math"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
WP = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
PIC = "http://schemas.openxmlformats.org/drawingml/2006/picture"
MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
V = "urn:schemas-microsoft-com:vml"
OFFICE = "urn:schemas-microsoft-com:office:office"
W14 = "http://schemas.microsoft.com/office/word/2010/wordml"
WPS = "http://schemas.microsoft.com/office/word/2010/wordprocessingShape"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
DC = "http://purl.org/dc/elements/1.1/"

STRICT_TO_TRANSITIONAL = {
    "http://purl.oclc.org/ooxml/wordprocessingml/main": W,
    "http://purl.oclc.org/ooxml/officeDocument/relationships": R,
    "http://purl.oclc.org/ooxml/officeDocument/math": M,
    "http://purl.oclc.org/ooxml/drawingml/main": A,
    "http://purl.oclc.org/ooxml/drawingml/wordprocessingDrawing": WP,
    "http://purl.oclc.org/ooxml/drawingml/picture": PIC,
    "http://purl.oclc.org/ooxml/drawingml/chart": "http://schemas.openxmlformats.org/drawingml/2006/chart",
    "http://purl.oclc.org/ooxml/drawingml/diagram": "http://schemas.openxmlformats.org/drawingml/2006/diagram",
}

# mc:Choice branches whose every required namespace is one of these are
# rendered; anything else (chartex, ink, newer Word extensions) falls back.
UNDERSTOOD_CHOICE_NAMESPACES = frozenset(
    {
        WPS,
        W14,
        M,
        V,
        OFFICE,
        "http://schemas.microsoft.com/office/word/2010/wordprocessingGroup",
        "http://schemas.microsoft.com/office/word/2010/wordprocessingCanvas",
        "http://schemas.microsoft.com/office/word/2012/wordml",
        "http://schemas.microsoft.com/office/drawing/2010/main",
        "http://schemas.microsoft.com/office/word/2010/wordprocessingDrawing",
        "urn:schemas-microsoft-com:office:word",
    }
)


def w(name: str) -> str:
    return f"{{{W}}}{name}"


def m(name: str) -> str:
    return f"{{{M}}}{name}"


W_VAL = w("val")
W_ID = w("id")
R_ID = f"{{{R}}}id"
R_EMBED = f"{{{R}}}embed"
R_LINK = f"{{{R}}}link"
W14_PARA_ID = f"{{{W14}}}paraId"
M_VAL = m("val")


# Strict namespaces are renamed where they are declared, before parsing: the
# rest of the renderer knows only the transitional names.
_STRICT_XMLNS = re.compile(rb"""(xmlns(?::[\w.-]+)?\s*=\s*["'])(http://purl\.oclc\.org/ooxml/[^"']+)(["'])""")
_STRICT_BYTES = {k.encode(): v.encode() for k, v in STRICT_TO_TRANSITIONAL.items()}


def _transitional_xmlns(match: re.Match) -> bytes:
    return match.group(1) + _STRICT_BYTES.get(match.group(2), match.group(2)) + match.group(3)


def strict_xmlns_to_transitional(data: bytes) -> bytes:
    """Rename Strict namespaces where they are declared, in the bytes (UTF-8 parts)."""
    return _STRICT_XMLNS.sub(_transitional_xmlns, data)


def strict_tree_to_transitional(root) -> None:
    """Rename Strict tags and attributes in a parsed tree (UTF-16 parts, whose bytes the regex cannot read)."""
    mapping = STRICT_TO_TRANSITIONAL
    for el in root.iter():
        tag = el.tag
        if not isinstance(tag, str):
            continue
        if tag[0] == "{":
            ns, _, local = tag[1:].partition("}")
            if ns in mapping:
                el.tag = f"{{{mapping[ns]}}}{local}"
        for key in list(el.attrib):
            if key[0] == "{":
                ns, _, local = key[1:].partition("}")
                if ns in mapping:
                    value = el.attrib.pop(key)
                    el.set(f"{{{mapping[ns]}}}{local}", value)

"""Why a file is not searchable, in one vocabulary for every page, the API
and the admin: damaged, encrypted, no text, unsupported variant, too large,
duplicate of *path* — what a user can do something about, never LightRAG's
banners or its input paths."""

import re

from django.utils.translation import gettext as _

from mnote.library.ingest import NO_TEXT_FOUND
from mnote.library.models import Source
from mnote.library.source_files import SourceUnavailable, open_source_file

DAMAGED, ENCRYPTED, NO_TEXT, UNSUPPORTED, TOO_LARGE, DUPLICATE, GAVE_UP = (
    "damaged", "encrypted", "no_text", "unsupported_variant", "too_large", "duplicate", "gave_up",
)
# Tried in this order, on the lower-cased message: the first that matches names it.
_REASON_MARKERS = (
    (ENCRYPTED, ("encrypted", "password", "encryption")),
    (TOO_LARGE, ("decompression budget", "too large", "too big", "text-size limit", "exceeds the", "size limit")),
    (NO_TEXT, ("no usable text", "empty content", "no content or only whitespace", "holds no text",
               NO_TEXT_FOUND.lower(), "found no text", "found nothing to show", "this file is empty.")),
    (UNSUPPORTED, ("legacy word 97-2003", "no relationship of type", "not a zip/ooxml", "rtf document saved with",
                   "does not support", "not valid utf-8", "unsupported", "cannot be parsed by")),
    (DAMAGED, ("damaged", "corrupt", "truncated", "not a zip file", "bad zip", "badzipfile", "is empty (0 bytes)",
               "malformed", "not what its name says", "could not be read")),
)
# A password-protected Office file is an OLE2 compound file holding this stream.
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")


def reason_code(message: str, source: Source | None = None) -> str:
    """The plain reason of a failure message (LightRAG's, or MNote's own):
    damaged, encrypted, no_text, unsupported_variant, too_large or gave_up.
    ``source``: to look inside the file where the message cannot tell (an
    encrypted Office file, which LightRAG calls a legacy .doc)."""
    # Never the file's name: "…-password_source.odt" says nothing of a password.
    text = _INPUT_NAME.sub("", message or "").lower()
    if text.startswith("gave up after"):
        return GAVE_UP
    for code, markers in _REASON_MARKERS:
        if any(marker in text for marker in markers):
            if code == UNSUPPORTED and "legacy word 97-2003" in text and source is not None and _office_encrypted(source):
                return ENCRYPTED
            return code
    return DAMAGED


def _office_encrypted(source: Source) -> bool:
    """Whether the file is a password-protected Office document (an OLE2
    file with an EncryptedPackage stream, whatever its suffix)."""
    try:
        with open_source_file(source) as handle:
            head = handle.read(1024 * 1024)
    except (SourceUnavailable, OSError):
        return False
    return head.startswith(_OLE_MAGIC) and _ENCRYPTED_PACKAGE in head


def source_reason_code(source: Source) -> str:
    """The plain reason code of a failed or duplicate source, or ""."""
    if source.status == Source.Status.DUPLICATE:
        return DUPLICATE
    if source.status != Source.Status.FAILED:
        return ""
    if source.failure_kind == Source.Failure.TRANSIENT or not source.last_error:
        return GAVE_UP
    return reason_code(source.last_error, source)


def retry_can_cure(source: Source) -> bool:
    """A retry cannot decrypt, repair or add text: only a file LightRAG gave
    up on (timeouts, a busy model service) is worth sending again as it is."""
    return source.status == Source.Status.FAILED and source.failure_kind != Source.Failure.PERMANENT


def plain_reason(source: Source) -> str:
    """Why a file is not searchable, in a sentence for users (translated):
    "" when nothing is wrong with it."""
    code = source_reason_code(source)
    if code == DUPLICATE:
        original = source.duplicate_of
        if original is None:
            return _("Duplicate: the same text is already in the library.")
        return _("Duplicate of %(path)s.") % {"path": original.library_path}
    return REASON_SENTENCES[code]() if code else ""


# LightRAG's banner rules, and the paths of its input copies (ours, in its input folder).
_BANNER_RULE = re.compile(r"^\s*[=\-]{5,}\s*$", re.MULTILINE)
_INPUT_NAME = re.compile(r"(?:[^\s'\"]*/)?mnote-[0-9a-f]{16}-[^\s'\"()]+")


def readable_message(source: Source) -> str:
    """LightRAG's own message about the file, for admins: without its banner
    rules, the file named by its library path instead of LightRAG's copy."""
    text = _BANNER_RULE.sub("", source.last_error or "")
    text = _INPUT_NAME.sub(source.library_path, text)
    return " ".join(text.split())


REASON_SENTENCES = {
    DAMAGED: lambda: _("Damaged: the file could not be read."),
    ENCRYPTED: lambda: _("Encrypted: the file is password-protected."),
    NO_TEXT: lambda: _("No text: the file holds no words to search."),
    UNSUPPORTED: lambda: _("Unsupported variant: this version of the format cannot be read."),
    TOO_LARGE: lambda: _("Too large: the file holds more text than the library takes in."),
    GAVE_UP: lambda: _("LightRAG failed on it several times; Retry failed sends it again."),
}

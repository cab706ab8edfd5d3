"""Opening a DOCX package without trusting it.

A DOCX is a ZIP archive of XML parts, and every size a ZIP declares can lie.
Before anything is decompressed the central directory is checked (entry
count, declared sizes, compression ratio, member names); members are then
read in bounded chunks against a budget, never extracted to disk, and XML is
parsed without DTDs, entities, network access or lxml's "huge tree" mode
(which also caps nesting at 256 levels). Relationship targets are resolved as
part names inside the package; a target that climbs out of it rejects the
file, and ``TargetMode="External"`` targets are never opened.

Everything a user may see goes through ``PreviewRejected`` (``limits.py``): its message says
what is wrong with the file in plain words.
"""

from __future__ import annotations

import posixpath
import re
import struct
import zipfile
import zlib
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote

from lxml import etree

from .limits import DEFAULT_LIMITS, MB, Limits, PreviewRejected, invalid, mb_text
from .namespaces import PKG_REL, strict_tree_to_transitional, strict_xmlns_to_transitional

_CHUNK = 1 * MB
# Members compressed to at most this are read whole (see ``_read_whole``).
_WHOLE_READ_MAX = 8 * MB
# A local file header: signature, version, flags, method, time, date, CRC,
# sizes (skipped), then the lengths of the name and the extra field.
_LOCAL_HEADER = struct.Struct("<4s2xH18xHH")
# A central-directory record is 46 bytes plus name, extra field and comment.
_MAX_DIRECTORY_RECORD = 46 + 3 * 1024


class Relationship(NamedTuple):  # a tuple: made by the hundred per document, cheaply
    id: str
    kind: str  # last segment of the relationship type: "image", "hyperlink", "footnotes", ...
    target: str  # as written (for external targets: the URL)
    external: bool
    part: str | None  # internal targets: the part name inside the package


def _sniff(head: bytes, suffix: str = ".docx") -> str | None:
    """Why a file that is not a ZIP cannot be a package, or None if it might be one."""
    if not head:
        return "the file is empty"
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return None
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        if suffix != ".docx":
            return "it is a legacy Office 97-2003 file or a password-protected one; save it again without a password"
        return (
            "it is a legacy Word 97-2003 (.doc) file or a password-protected document; "
            "open it in Word and save it as .docx without a password"
        )
    if head.startswith(b"{\\rtf"):
        return f"it is an RTF file with a {suffix} name"
    if head.startswith(b"%PDF"):
        return f"it is a PDF file with a {suffix} name"
    if head.lstrip().startswith(b"<"):
        return f"it is an XML or HTML file with a {suffix} name, not a ZIP package"
    return "it is not a ZIP package"


def _directory_size(fp, file_size: int, invalid=invalid) -> tuple[int, int]:
    """(entries, central directory bytes) from the end-of-central-directory
    record, read before ``zipfile`` builds an object per entry."""
    tail_len = min(file_size, 22 + 65_535)
    fp.seek(file_size - tail_len)
    tail = fp.read(tail_len)
    pos = tail.rfind(b"PK\x05\x06")
    if pos < 0 or len(tail) - pos < 22:
        raise invalid("the archive is damaged or truncated (its directory is missing)")
    entries, cd_size = struct.unpack("<HI", tail[pos + 10 : pos + 16])
    if entries == 0xFFFF or cd_size == 0xFFFFFFFF:
        # ZIP64: the real counts are in the ZIP64 record the locator points to.
        loc = pos - 20
        if loc >= 0 and tail[loc : loc + 4] == b"PK\x06\x07":
            (offset,) = struct.unpack("<Q", tail[loc + 8 : loc + 16])
            if offset + 56 <= file_size:
                fp.seek(offset)
                record = fp.read(56)
                if record[:4] == b"PK\x06\x06":
                    entries, cd_size = struct.unpack("<QQ", record[32:48])
    return entries, cd_size


def _safe_member_name(name: str) -> str | None:
    """The member name as a part name, or None if it points outside the package."""
    name = name.replace("\\", "/")
    if "\x00" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return None
    if ".." in name and ".." in name.split("/"):
        return None
    return name


def resolve_target(source_part: str, target: str) -> str | None:
    """A relationship target as a part name; None if it climbs out of the package."""
    if "%" in target or "#" in target or "\\" in target:
        target = unquote(target.split("#", 1)[0]).replace("\\", "/")
    return part_name(source_part, target)


def part_name(base_part: str, path: str) -> str | None:
    """A path (already unquoted) relative to a part, as a part name; None if
    it climbs out of the package (DOCX, EPUB and the other ZIP packages alike)."""
    if "\x00" in path:
        return None
    folder = posixpath.dirname(base_part)
    if path and not path.startswith("/") and "/." not in "/" + path and "//" not in path:
        # The common case, "media/image1.png": nothing to normalise.
        return f"{folder}/{path}" if folder else path
    path = path[1:] if path.startswith("/") else posixpath.join(folder, path)
    parts: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(segment)
    return "/".join(parts) or None


def _rels_part(part: str) -> str:
    folder, name = posixpath.split(part)
    return posixpath.join(folder, "_rels", name + ".rels")


class ZipPackage:
    """An opened OPC/ZIP package (DOCX, PPTX, XLSX, EPUB, ODT); use as a
    context manager. ``source`` is a path or an open binary file, which the
    package reads but does not close. Subclasses name what they hold in
    users' messages."""

    label = "package"  # "This file is not a valid <label>: ..."
    suffix = ".zip"
    writer = "an office application"  # "... which <writer> never writes"
    # Parts only ever read by ``iterparse`` (streamed), exempt from the
    # one-XML-part size limit that guards parts parsed whole.
    streamed_parts: tuple[str, ...] = ()

    def __init__(self, source, limits: Limits = DEFAULT_LIMITS):
        self.limits = limits
        self._read_total = 0
        self._rels_cache: dict[str, dict[str, Relationship]] = {}
        self._parser = etree.XMLParser(
            resolve_entities=False,
            no_network=True,
            huge_tree=False,
            load_dtd=False,
            dtd_validation=False,
            remove_comments=True,
            remove_pis=True,
        )
        self._owns_file = not hasattr(source, "read")
        if self._owns_file:
            self.path = Path(source)
            try:
                self._fp = open(self.path, "rb")
            except OSError as e:
                raise PreviewRejected(f"This file cannot be read ({e.strerror or e}).") from e
        else:
            # An open file (from ``open_source_file``) is read from its start
            # and left open for its owner.
            name = getattr(source, "name", "")
            self.path = Path(name if isinstance(name, str) else "")
            self._fp = source
        try:
            self._zip = self._open_zip()
        except BaseException:
            self.close_file()
            raise

    def invalid(self, reason: str) -> PreviewRejected:
        return PreviewRejected(f"This file is not a valid {self.label}: {reason}")

    def close_file(self) -> None:
        if self._owns_file:
            self._fp.close()

    def __enter__(self) -> DocxPackage:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._zip.close()
        self.close_file()

    # -- the ZIP directory ---------------------------------------------------

    def _open_zip(self) -> zipfile.ZipFile:
        limits = self.limits
        file_size = self._fp.seek(0, 2)
        self._fp.seek(0)
        reason = _sniff(self._fp.read(8), self.suffix)
        if reason:
            raise self.invalid(reason)
        entries, cd_size = _directory_size(self._fp, file_size, self.invalid)
        if entries > limits.max_entries or cd_size > limits.max_entries * _MAX_DIRECTORY_RECORD:
            raise PreviewRejected(
                f"This document is too large to preview (its archive lists {entries:,} files; "
                f"the limit is {limits.max_entries:,})."
            )
        self._fp.seek(0)
        try:
            archive = zipfile.ZipFile(self._fp)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, struct.error) as e:
            raise self.invalid("the archive is damaged or truncated") from e
        except NotImplementedError as e:  # "zip file version 24.8"
            raise self.invalid(f"its archive uses a ZIP feature {self.writer} does not write") from e
        try:
            self._check_directory(archive)
        except BaseException:
            archive.close()
            raise
        return archive

    def _check_directory(self, archive: zipfile.ZipFile) -> None:
        limits = self.limits
        infos = archive.infolist()
        if len(infos) > limits.max_entries:
            raise PreviewRejected(
                f"This document is too large to preview (its archive lists {len(infos):,} files; "
                f"the limit is {limits.max_entries:,})."
            )
        self._members: dict[str, zipfile.ZipInfo] = {}
        self._members_folded: dict[str, zipfile.ZipInfo] = {}
        total = 0
        for info in infos:
            filename = info.filename
            if not info.flag_bits & 0x800 and not filename.isascii():
                # UTF-8 names written without the UTF-8 flag (many EPUB tools):
                # zipfile decoded them as CP437.
                try:
                    filename = filename.encode("cp437").decode("utf-8")
                except UnicodeError:
                    pass
            name = _safe_member_name(filename)
            if name is None:
                raise self.invalid(f"it contains a file name that points outside the package ({info.filename[:80]!r})")
            if info.is_dir():
                continue
            folded = name.casefold()
            if folded in self._members_folded:
                raise self.invalid(f"its archive contains {name[:80]!r} twice")
            self._members[name] = info
            self._members_folded[folded] = info
            if info.flag_bits & 0x1:
                raise self.invalid("it is encrypted; save it again without a password")
            if info.file_size > limits.max_member_bytes:
                raise PreviewRejected(
                    f"This document is too large to preview ({name[:80]} is {mb_text(info.file_size)} "
                    f"uncompressed; the limit is {mb_text(limits.max_member_bytes)} per part)."
                )
            if info.file_size > limits.ratio_floor_bytes and info.file_size > limits.max_ratio * max(
                info.compress_size, 1
            ):
                ratio = info.file_size / max(info.compress_size, 1)
                raise self.invalid(
                    f'{name[:80]} would expand {ratio:,.0f} times when decompressed, like a "zip bomb" '
                    f"(the limit is {limits.max_ratio} times)"
                )
            if (
                info.file_size > limits.max_xml_part_bytes
                and name.lower().endswith((".xml", ".rels"))
                and not name.lower().startswith(self.streamed_parts)
            ):
                raise PreviewRejected(
                    f"This document is too large to preview ({name[:80]} is {mb_text(info.file_size)} of XML; "
                    f"the limit is {mb_text(limits.max_xml_part_bytes)})."
                )
            total += info.file_size
        if total > limits.max_total_bytes:
            raise PreviewRejected(
                f"This document is too large to preview ({mb_text(total)} uncompressed; "
                f"the limit is {mb_text(limits.max_total_bytes)})."
            )

    # -- members -------------------------------------------------------------

    def member(self, part: str) -> zipfile.ZipInfo | None:
        return self._members.get(part) or self._members_folded.get(part.casefold())

    def read(self, part: str) -> bytes | None:
        """The bytes of a part, read in bounded chunks; None if it is absent."""
        info = self.member(part)
        if info is None:
            return None
        limit = min(info.file_size, self.limits.max_member_bytes)
        if part.lower().endswith((".xml", ".rels")):
            limit = min(limit, self.limits.max_xml_part_bytes)
        data = self._read_whole(info, limit)
        if data is not None:
            return data
        chunks: list[bytes] = []
        size = 0
        try:
            with self._zip.open(info) as stream:
                while chunk := stream.read(_CHUNK):
                    size += len(chunk)
                    self._read_total += len(chunk)
                    if size > limit:
                        raise self.invalid(f"{part[:80]} is larger than its archive says")
                    if self._read_total > self.limits.max_total_bytes:
                        raise PreviewRejected(
                            "This document is too large to preview (more than "
                            f"{mb_text(self.limits.max_total_bytes)} uncompressed)."
                        )
                    chunks.append(chunk)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, struct.error) as e:
            raise self.invalid(f"the archive is damaged ({part[:80]} cannot be read)") from e
        except NotImplementedError as e:
            raise self.invalid(f"{part[:80]} uses a compression method {self.writer} does not write") from e
        except RuntimeError as e:  # zipfile's "File is encrypted"
            raise self.invalid(f"{part[:80]} cannot be read ({e})") from e
        return b"".join(chunks)

    def _read_whole(self, info: zipfile.ZipInfo, limit: int) -> bytes | None:
        """A small member read and inflated in one go, without ``zipfile``'s
        file object around it (most of a small part's read time); None when
        anything is out of the ordinary, so that ``read``'s chunked path reads
        it and says what is wrong exactly as it always did. The result is only
        returned when its length and CRC are what the directory says."""
        if (
            info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
            or info.flag_bits & 0x61  # encrypted, "compressed patch", strong encryption
            or info.compress_size > _WHOLE_READ_MAX
            or info.file_size > limit
            or self._read_total + info.file_size > self.limits.max_total_bytes
        ):
            return None
        try:
            self._fp.seek(info.header_offset)
            header = self._fp.read(_LOCAL_HEADER.size)
            if len(header) != _LOCAL_HEADER.size:
                return None
            signature, flags, name_length, extra_length = _LOCAL_HEADER.unpack(header)
            if signature != b"PK\x03\x04" or flags & 0x1:
                return None
            name = self._fp.read(name_length)
            expected = info.orig_filename
            # Both encodings keep ASCII as it is (and Python's cp437 codec is slow).
            encoding = "ascii" if expected.isascii() else "utf-8" if flags & 0x800 else "cp437"
            expected = expected.encode(encoding)
            if name != expected:
                return None  # zipfile refuses a name that differs from the directory's
            self._fp.seek(extra_length, 1)
            raw = self._fp.read(info.compress_size)
            if len(raw) != info.compress_size:
                return None
            if info.compress_type == zipfile.ZIP_STORED:
                data = raw
            else:
                inflater = zlib.decompressobj(-15)
                data = inflater.decompress(raw, limit + 1)
                if not inflater.eof:
                    return None
        except (zlib.error, OSError, UnicodeError, ValueError):
            return None
        if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
            return None
        self._read_total += len(data)
        return data

    def check_declarations(self) -> None:
        """Refuse the package, as a preview of it would, when one of its XML
        parts declares a DTD: read without rendering, from each part's head
        (where a DTD must stand), so a file the preview will never show is
        known before it is sent anywhere else."""
        for name in list(self._members):
            if not name.lower().endswith((".xml", ".rels")):
                continue
            stream = self.stream(name)
            if stream is None:
                continue
            try:
                if _has_doctype(stream.peek_head()):
                    raise self.invalid(f"{name[:80]} contains a document type declaration (DTD), which {self.writer} never writes")
            finally:
                stream.close()

    def stream(self, part: str) -> BoundedStream | None:
        """A part as a file-like stream for incremental parsing (a big sheet),
        held to the same limits as ``read``; None if it is absent."""
        info = self.member(part)
        if info is None:
            return None
        try:
            return BoundedStream(self, part, self._zip.open(info), min(info.file_size, self.limits.max_member_bytes))
        except (zipfile.BadZipFile, zlib.error, OSError, ValueError, NotImplementedError, RuntimeError) as e:
            raise self.invalid(f"the archive is damaged ({part[:80]} cannot be read)") from e

    def iterparse(self, part: str, tag: str):
        """(event, element) for each ``tag`` end of a part, streamed; the same
        parser guarantees as ``xml`` (no DTD, entities, network)."""
        stream = self.stream(part)
        if stream is None:
            return
        head = stream.peek_head()
        if _has_doctype(head):
            raise self.invalid(f"{part[:80]} contains a document type declaration (DTD), which {self.writer} never writes")
        try:
            yield from etree.iterparse(
                stream, events=("end",), tag=tag, resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False,
                remove_comments=True, remove_pis=True,
            )  # fmt: skip
        except etree.XMLSyntaxError as e:
            raise self.invalid(f"{part[:80]} is not well-formed XML") from e
        finally:
            stream.close()

    # -- XML -----------------------------------------------------------------

    def xml(self, part: str) -> etree._Element | None:
        data = self.read(part)
        if data is None:
            return None
        return self.parse_xml(data, part)

    def parse_xml(self, data: bytes, part: str) -> etree._Element:
        # A match is at least five bytes: a part shorter than that many blocks needs no count.
        blocks = len(_BLOCK_TAGS.findall(data)) if len(data) > 5 * self.limits.max_blocks else 0
        if blocks > self.limits.max_blocks:
            raise PreviewRejected(
                f"This document is too large to preview ({part[:80]} has {blocks:,} paragraphs and table cells; "
                f"the limit is {self.limits.max_blocks:,})."
            )
        if _has_doctype(data):
            raise self.invalid(f"{part[:80]} contains a document type declaration (DTD), which {self.writer} never writes")
        strict = b"purl.oclc.org/ooxml" in data
        if strict and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
            data = strict_xmlns_to_transitional(data)
            strict = False
        try:
            root = etree.fromstring(data, self._parser)
        except etree.XMLSyntaxError as e:
            if "depth" in str(e).lower():
                raise self.invalid(f"the XML in {part[:80]} is nested too deeply") from e
            raise self.invalid(f"{part[:80]} is not well-formed XML") from e
        if root.getroottree().docinfo.doctype:
            raise self.invalid(f"{part[:80]} contains a document type declaration (DTD), which {self.writer} never writes")
        if strict or any("purl.oclc.org/ooxml" in uri for uri in root.nsmap.values()):
            strict_tree_to_transitional(root)  # UTF-16 Strict parts, rarer still: renamed after parsing
        return root

    # -- relationships -------------------------------------------------------

    def relationships(self, source_part: str) -> dict[str, Relationship]:
        """Relationships of a part (``""`` for the package itself), by id."""
        if source_part in self._rels_cache:
            return self._rels_cache[source_part]
        rels_name = "_rels/.rels" if source_part == "" else _rels_part(source_part)
        root = self.xml(rels_name)
        found: dict[str, Relationship] = {}
        if root is not None:
            for rel in root.iter(f"{{{PKG_REL}}}Relationship"):
                rel_id = rel.get("Id")
                target = rel.get("Target") or ""
                if not rel_id or not target:
                    continue
                kind = (rel.get("Type") or "").rstrip("/").rsplit("/", 1)[-1]
                external = (rel.get("TargetMode") or "").lower() == "external"
                part = None
                if not external and kind != "hyperlink":
                    part = resolve_target(source_part, target)
                    if part is None:
                        raise self.invalid(f"it refers to a part outside the package ({target[:80]!r})")
                found[rel_id] = Relationship(rel_id, kind, target, external, part)
        self._rels_cache[source_part] = found
        return found

    def related_part(self, source_part: str, kind: str) -> str | None:
        for rel in self.relationships(source_part).values():
            if rel.kind == kind and rel.part:
                return rel.part
        return None

    def main_part(self) -> str:  # DOCX only; kept here for DocxPackage's callers
        """The main document part, found through the package relationships."""
        part = self.related_part("", "officeDocument")
        if part and self.member(part):
            return part
        if self.member("word/document.xml"):
            return "word/document.xml"
        raise self.invalid("it has no main document part")


# Counted on the bytes, before parsing: a regex scan costs milliseconds where
# building the tree would cost seconds. Word always writes the "w:" prefix.
_BLOCK_TAGS = re.compile(rb"<w:(?:p|tc)[\s>/]")

_DOCTYPE_MARKS = tuple("<!DOCTYPE".encode(codec) for codec in ("utf-8", "utf-16-le", "utf-16-be"))


def _has_doctype(data: bytes) -> bool:
    # Word never writes a DTD, so any mention is refused outright: no entity
    # declaration (billion laughs, external SYSTEM entities) reaches libxml2.
    return any(mark in data for mark in _DOCTYPE_MARKS)


class BoundedStream:
    """A member of the package read as a stream, counted against the
    package's byte budget as it goes."""

    def __init__(self, package: ZipPackage, part: str, raw, limit: int):
        self._package, self._part, self._raw, self._limit = package, part, raw, limit
        self._size = 0
        self._head = b""

    def peek_head(self, n: int = 64 * 1024) -> bytes:
        # A DTD must come before the root element, so the head shows it.
        self._head = self._read(n)
        return self._head

    def _read(self, n: int) -> bytes:
        package = self._package
        try:
            chunk = self._raw.read(n)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, struct.error) as e:
            raise package.invalid(f"the archive is damaged ({self._part[:80]} cannot be read)") from e
        self._size += len(chunk)
        package._read_total += len(chunk)
        if self._size > self._limit:
            raise package.invalid(f"{self._part[:80]} is larger than its archive says")
        if package._read_total > package.limits.max_total_bytes:
            raise PreviewRejected(f"This document is too large to preview (more than {mb_text(package.limits.max_total_bytes)} uncompressed).")
        return chunk

    def read(self, n: int = -1) -> bytes:
        if self._head:
            head, self._head = self._head, b""
            return head
        return self._read(_CHUNK if n is None or n < 0 else min(n, _CHUNK))

    def close(self) -> None:
        self._raw.close()


class DocxPackage(ZipPackage):
    label = "Word document"
    suffix = ".docx"
    writer = "Word"

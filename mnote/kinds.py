"""The one table of file kinds: which suffixes the library takes in, which
preview renders them, what a citation's ``resourceKind`` says, and whether
the workspace index reads their text.

Adding a kind is one renderer module under ``mnote/preview/`` and one
``_register(Kind(...))`` line here. This module imports nothing from the
project, so every stage (library, workspace, citations, preview) may use it.

    kind_of("slides/q3.pptx").name      # "pptx"
    kind_of("notes.log").workspace_text  # True
    SUPPORTED_EXTENSIONS                 # what LightRAG 1.5.7 accepts
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath


@dataclass(frozen=True)
class Kind:
    name: str  # resourceKind in locators, data-kind in the preview
    suffixes: tuple[str, ...]
    # "module:function" under mnote.preview, called with (file, PreviewContext);
    # "" means original only, on purpose (see the README's list).
    renderer: str = ""
    indexed: bool = True  # LightRAG 1.5.7 ingests it, so the library takes it in
    workspace_text: bool = False  # its body goes into MNote's light workspace index
    image: bool = False  # an image file: citations get the IMG- prefix
    # LightRAG 1.5.7 cannot read it (decodes it as UTF-8: fails, or indexes its
    # markup), so it is given the preview's text instead (mnote.library.derived_text).
    mnote_text: bool = False


KINDS: dict[str, Kind] = {}
_BY_SUFFIX: dict[str, Kind] = {}
OTHER = Kind("other", ())


def _register(kind: Kind) -> None:
    for suffix in kind.suffixes:
        if suffix in _BY_SUFFIX:
            raise ValueError(f"{suffix} is registered twice ({_BY_SUFFIX[suffix].name}, {kind.name})")
        _BY_SUFFIX[suffix] = kind
    KINDS[kind.name] = kind


_register(Kind("pdf", (".pdf",), "pdf:preview_pdf"))
_register(Kind("docx", (".docx",), "docx_render:preview_docx"))
_register(Kind("odt", (".odt",), "odt_render:preview_odt", mnote_text=True))
_register(Kind("markdown", (".md", ".mdx"), "text_render:preview_markdown", workspace_text=True))
_register(Kind("text", (".txt", ".log"), "text_render:preview_text", workspace_text=True))
_register(Kind("csv", (".csv",), "sheet_render:preview_csv", workspace_text=True))
_register(Kind("xlsx", (".xlsx",), "sheet_render:preview_xlsx"))
_register(Kind("pptx", (".pptx",), "pptx_render:preview_pptx"))
_register(Kind("epub", (".epub",), "epub_render:preview_epub", mnote_text=True))
_register(Kind("html", (".html", ".htm"), "html_render:preview_html", mnote_text=True))
_register(Kind("rtf", (".rtf",), "rtf_render:preview_rtf", mnote_text=True))
_register(
    Kind(
        "code",
        tuple(
            ".bat .c .conf .cpp .css .go .h .hpp .ini .java .js .json .less .php .properties .py .rb .scss .sh "
            ".sql .swift .tex .ts .xml .yaml .yml".split()
        ),
        "code_render:preview_code",
    )
)
# A TextBundle archive: its Markdown, and its pictures from inside it.
_register(Kind("textpack", (".textpack",), "textpack_render:preview_textpack"))
# Images are not ingested by LightRAG 1.5.7; a preview shows them should one be a source.
_register(
    Kind(
        "image",
        (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp"),
        "image_render:preview_image",
        indexed=False,
        image=True,
    )
)
_register(Kind("image-original", (".tif", ".tiff", ".heic"), indexed=False, image=True))

# As LightRAG 1.5.7 reports them (GET /documents/supported_file_types).
SUPPORTED_EXTENSIONS = frozenset(s for s, k in _BY_SUFFIX.items() if k.indexed)
WORKSPACE_TEXT_SUFFIXES = frozenset(s for s, k in _BY_SUFFIX.items() if k.workspace_text)
RESOURCE_KINDS = tuple(sorted(KINDS)) + (OTHER.name,)


@lru_cache(maxsize=2048)  # asked several times per citation of every search; pathlib is slow
def kind_of(name: str) -> Kind:
    """The kind of a file by its name's suffix (case-insensitive); OTHER if unknown."""
    return _BY_SUFFIX.get(PurePosixPath(name).suffix.lower(), OTHER)

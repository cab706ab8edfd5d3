"""The library's rows as tests need them: roots' sources in each state, the
Gamma manual LightRAG's recorded answers are about (with its sidecar), and
the files LightRAG would have written beside them."""

import hashlib
import shutil
from pathlib import Path

from django.contrib.auth.models import Group

from mnote.citations.models import Citation
from mnote.library.models import IndexedRoot, Source
from tests.lightrag_fakes import GAMMA_DOC
from tests.paths import MAPPER_FIXTURES


def install_sidecar(inputs: Path, lightrag_name: str, fixture: str) -> None:
    """The block sidecar LightRAG's parser leaves beside an input file."""
    folder = inputs / "__parsed__" / f"{lightrag_name}.parsed"
    folder.mkdir(parents=True)
    shutil.copy(MAPPER_FIXTURES / fixture, folder / f"{Path(lightrag_name).stem}.blocks.jsonl")


def restricted_root(name: str, path: str, *, group: str) -> IndexedRoot:
    """A root only the members of a new group (and admins) may see."""
    root = IndexedRoot.objects.create(name=name, path=path, visible_to_all=False)
    root.visible_to_groups.add(Group.objects.create(name=group))
    return root


def root_form(**fields) -> dict[str, str]:
    """The roots form's fields for a Papers root (the roots page's and the
    admin's), changed by ``fields``."""
    data = {
        "name": "Papers",
        "path": "papers",
        "recursive": "on",
        "exclude_patterns": "",
        "run_on_change": "on",
        "enabled": "on",
        "visible_to_all": "on",
    }
    data.update(fields)
    return data


def indexed_source(root, relative_path, doc_id=None, lightrag_name=None, **fields) -> Source:
    """A source LightRAG has indexed, under our naming scheme unless named."""
    lightrag_name = lightrag_name or f"mnote-0123456789abcdef-{relative_path}"
    return Source.objects.create(
        root=root,
        relative_path=relative_path,
        absolute_path=f"/library/{root.path}/{relative_path}",
        sha256="a" * 64,
        lightrag_name=lightrag_name,
        lightrag_doc_id=doc_id or f"doc-{lightrag_name}",
        status=Source.Status.INDEXED,
        **fields,
    )


def add_gamma(root, lightrag_dirs) -> Source:
    """The source LightRAG's recorded /query/data answer is about."""
    inputs, storage = lightrag_dirs
    install_sidecar(inputs, "gamma.docx", "server_gamma.blocks.jsonl")
    shutil.copy(MAPPER_FIXTURES / "sdk_kv_store_text_chunks.json", storage / "kv_store_text_chunks.json")
    return indexed_source(root, "gamma.docx", GAMMA_DOC, "gamma.docx")


def indexing_source(root, name, **fields) -> Source:
    """A source of a root on disk, sent to LightRAG and not yet listed as done."""
    source = Source(root=root, relative_path=name, absolute_path=str(root.absolute_path / name), sha256="0" * 64)
    source.lightrag_name = source.unique_lightrag_name()
    source.status = fields.pop("status", Source.Status.INDEXING)
    for key, value in fields.items():
        setattr(source, key, value)
    source.save()
    return source


# --- a cited paragraph in a Markdown note (the re-anchoring tests')

CARE_QUOTE = "Valve stems are lapped every spring by the night shift."
CARE_NOTES = (
    "# Pumps\n\nCheck the seals weekly and write down what you find.\n\n"
    "# Valves\n\nValve stems are lapped every spring by the night shift. The plant restarts after.\n\n"
    "# Filters\n\nReplace the intake filters when the pressure drop passes forty millibar.\n"
)


def cited_care_notes(library_dir: Path) -> tuple[Path, Source, Citation]:
    """notes/care.md written with ``CARE_NOTES``, indexed, and a permalink
    citing ``CARE_QUOTE`` under its Valves heading."""
    notes = library_dir / "notes"
    notes.mkdir()
    path = notes / "care.md"
    path.write_text(CARE_NOTES)
    root = IndexedRoot.objects.create(name="Notes", path="notes")
    source = Source.objects.create(root=root, relative_path="care.md", absolute_path=str(path), status="indexed",
                                   sha256=hashlib.sha256(CARE_NOTES.encode()).hexdigest(), lightrag_doc_id="doc-care")
    citation = Citation.objects.create(
        source=source, source_path="Notes/care.md", source_sha256=source.sha256, precision="paragraph",
        locator={"precision": "paragraph", "evidenceText": CARE_QUOTE, "headingPath": ["Valves"]},
        heading_path=["Valves"], display_quote=CARE_QUOTE,
    )
    return path, source, citation

"""The library's rows as tests need them: roots' sources in each state, the
Gamma manual LightRAG's recorded answers are about (with its sidecar), and
the files LightRAG would have written beside them."""

import shutil
from pathlib import Path

from django.contrib.auth.models import Group

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

import pytest
from django.contrib.auth.models import Group

from mnote.library.models import IndexedRoot
from mnote.library.sync import sync_root
from mnote.workspace.index import workspace_search

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


@pytest.fixture
def notes(library_dir, input_dir):
    (library_dir / "notes" / "2026").mkdir(parents=True)
    (library_dir / "notes" / "dome-checklist.md").write_text("# Dome\nClose the shutter when the wind exceeds 15 m/s.")
    (library_dir / "notes" / "2026" / "设备清单.txt").write_text("离心机每月校准一次。")
    root = IndexedRoot.objects.create(name="Notes", path="notes")
    sync_root(root)
    return root


def test_it_finds_words_inside_markdown_and_text_bodies(notes, member):
    [hit] = workspace_search(member, "shutter wind")
    assert hit.source.relative_path == "dome-checklist.md"
    assert "shutter" in hit.snippet and any(marked for _, marked in hit.marked)
    [zh] = workspace_search(member, "离心机")
    assert zh.source.relative_path == "2026/设备清单.txt"


def test_it_finds_files_by_name_and_follows_edits(notes, member, library_dir):
    assert [h.source.file_name for h in workspace_search(member, "checklist")] == ["dome-checklist.md"]
    path = library_dir / "notes" / "dome-checklist.md"
    path.write_text("# Dome\nOpen the dome only after sunset.")
    import os
    import time

    os.utime(path, (time.time() + 5, time.time() + 5))
    sync_root(notes)
    assert workspace_search(member, "shutter wind") == []
    assert len(workspace_search(member, "sunset")) == 1


def test_it_limits_to_the_scope_and_to_visible_roots(notes, member):
    assert workspace_search(member, "离心机", scope=["notes/2026"])
    assert not workspace_search(member, "离心机", scope=["notes/other"])
    # A scope is whole folders or files: "notes/202" is not "notes/2026".
    assert not workspace_search(member, "离心机", scope=["notes/202"])
    assert workspace_search(member, "离心机", scope=["notes/2026/设备清单.txt"])
    assert workspace_search(member, "离心机", scope=["notes"])
    notes.visible_to_all = False
    notes.save()
    notes.visible_to_groups.add(Group.objects.create(name="ops"))
    assert workspace_search(member, "离心机") == []

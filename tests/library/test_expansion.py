import os

import pytest

from mnote.library.expansion import PathRefused, expand_root, resolve_inside


@pytest.fixture
def base(tmp_path):
    base = tmp_path / "base"
    (base / "papers" / "2024" / "deep").mkdir(parents=True)
    (base / "papers" / "draft-private").mkdir()
    (base / "papers" / ".git").mkdir()
    (base / "papers" / "node_modules").mkdir()
    for name in ["intro.md", "2024/report.docx", "2024/deep/notes.txt", "draft-private/secret.md",
                 ".git/config.txt", "node_modules/x.js", "photo.heic", "tool.exe"]:
        (base / "papers" / name).write_text(name)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "stolen.md").write_text("not yours")
    os.symlink(outside / "stolen.md", base / "papers" / "escape.md")
    os.symlink(outside, base / "papers" / "escape-dir")
    return base


def test_it_takes_exactly_the_supported_files_and_marks_excluded_ones(base):
    found, refused = expand_root(base, "papers", recursive=True, exclude_patterns=["**/draft-private/**"])
    assert [(c.relative_path, c.excluded_by) for c in found] == [
        ("2024/deep/notes.txt", ""),
        ("2024/report.docx", ""),
        ("draft-private/secret.md", "**/draft-private/**"),
        ("intro.md", ""),
    ]
    assert refused == ["escape-dir", "escape.md"]


def test_it_stays_at_the_top_when_not_recursive(base):
    found, _ = expand_root(base, "papers", recursive=False, exclude_patterns=[])
    assert [c.relative_path for c in found] == ["intro.md"]


def test_it_accepts_a_single_file_as_a_root(base):
    found, _ = expand_root(base, "papers/2024/report.docx", recursive=True, exclude_patterns=[])
    # The root is the file itself: its path inside the root is empty.
    assert [(c.relative_path, c.absolute_path.name) for c in found] == [("", "report.docx")]


@pytest.mark.parametrize(
    "path, message",
    [
        ("../outside", "contains “..”"),
        ("/etc", "is absolute"),
        ("papers/escape-dir", "leads outside the library base directory"),
        ("nowhere", "does not exist"),
        ("", "Give a folder or file"),
    ],
)
def test_it_refuses_paths_that_leave_the_base_directory(base, path, message):
    with pytest.raises(PathRefused, match=message):
        resolve_inside(base, path)


def test_it_never_walks_into_lightrags_own_folders(base):
    inputs = base / "papers" / "lightrag-inputs"
    inputs.mkdir()
    (inputs / "mnote-0123456789abcdef-intro.md").write_text("our link's stand-in")
    found, _ = expand_root(base, "papers", recursive=True, exclude_patterns=[], skip_folders=(inputs,))
    assert not any(c.relative_path.startswith("lightrag-inputs") for c in found)

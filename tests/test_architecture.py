"""The house's layering, checked on every run of the suite (module sizes are a
report, `bench/module_sizes.py`: a module splits where it holds two ideas, not
at a line count)."""

import os
import subprocess
import sys

from importlinter.cli import lint_imports
from tests.paths import REPO_DIR as ROOT



def test_it_keeps_every_stage_importing_only_the_stages_below_it(monkeypatch):
    monkeypatch.chdir(ROOT)
    # 0 = every contract in .importlinter kept; the broken ones are printed.
    assert lint_imports(config_filename=str(ROOT / ".importlinter"), no_cache=True, no_logo=True) == 0


def test_it_breaks_the_contract_when_library_imports_a_higher_stage(tmp_path):
    """The check can fail: in a copy of the package where sync imports the
    workspace index again (the arrow the signal replaced), the layers break."""
    for path in (ROOT / "mnote").rglob("*.py"):
        target = tmp_path / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    sync = tmp_path / "mnote" / "library" / "sync.py"
    sync.write_text(sync.read_text() + "\nfrom mnote.search.workspace import refresh_workspace_index  # noqa\n")
    (tmp_path / ".importlinter").write_text((ROOT / ".importlinter").read_text())
    linted = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()", "--no-cache"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert linted.returncode == 1, linted.stdout + linted.stderr
    assert "mnote.library.sync -> mnote.search.workspace" in linted.stdout

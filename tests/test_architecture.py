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
    sync.write_text(sync.read_text() + "\nfrom mnote.workspace.index import refresh_workspace_index  # noqa\n")
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
    assert "mnote.library.sync -> mnote.workspace.index" in linted.stdout


def _import_circles(graph) -> list[list[str]]:
    """Every set of mnote's modules that import each other round a circle
    (the strongly connected components of the import graph with more than one
    module), each given as one of its shortest circles. Imports inside
    functions and under TYPE_CHECKING count: a circle a newcomer must hold
    in mind is one whichever way it is written."""
    modules = sorted(m for m in graph.modules if m.startswith("mnote"))
    imports = {m: sorted(d for d in graph.find_modules_directly_imported_by(m) if d.startswith("mnote")) for m in modules}
    # Tarjan's algorithm, without recursion (the graph has hundreds of modules).
    order, low, on_stack, stack, components = {}, {}, set(), [], []
    for start in modules:
        if start in order:
            continue
        work = [(start, iter(imports[start]))]
        order[start] = low[start] = len(order)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, pending = work[-1]
            for target in pending:
                if target not in order:
                    order[target] = low[target] = len(order)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(imports[target])))
                    break
                if target in on_stack:
                    low[module] = min(low[module], order[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == order[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    circles = []
    for component in sorted(components):
        first = component[0]
        back = min(
            (graph.find_shortest_chain(importer=target, imported=first) or () for target in imports[first] if target in component),
            key=len,
        )
        circles.append([first, *back])
    return circles


def _mnote_graph():
    import grimp

    sys.path.insert(0, str(ROOT))
    try:
        return grimp.build_graph("mnote", cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))


def test_no_modules_of_mnote_import_each_other_round_a_circle():
    circles = _import_circles(_mnote_graph())
    assert circles == [], "import circles:\n" + "\n".join(" -> ".join(circle) for circle in circles)


def test_the_circle_check_finds_a_circle_when_there_is_one():
    """The check can fail: the registry model importing the ingest (which
    imports the model) closes a circle, and it is named."""
    graph = _mnote_graph()
    graph.add_import(importer="mnote.library.models", imported="mnote.library.ingest")
    circles = _import_circles(graph)
    assert any({"mnote.library.models", "mnote.library.ingest"} <= set(circle) for circle in circles), circles

"""The benchmarks stand on their own: no module under ``bench/`` imports the tests (the tests
import ``bench``, never the other way round), and none edits ``sys.path`` (each benchmark runs
as ``python -m bench.NAME`` from the repository root). Read from the source (its syntax
tree), so that a new import or path edit anywhere in ``bench/`` fails here."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def modules() -> dict[str, ast.Module]:
    return {
        path.relative_to(ROOT).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(BENCH.rglob("*.py"))
    }


def imports_tests(tree: ast.Module) -> list[int]:
    """The lines of ``import tests...`` and ``from tests... import ...``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(name == "tests" or name.startswith("tests.") for name in names):
            lines.append(node.lineno)
    return sorted(lines)


def edits_sys_path(tree: ast.Module) -> list[int]:
    """The lines that reach ``sys.path`` (``sys.path.insert``, ``sys.path[:0] = ...``)."""
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    )


def test_no_benchmark_imports_the_tests() -> None:
    found = {name: lines for name, tree in modules().items() if (lines := imports_tests(tree))}
    assert found == {}, f"bench/ imports tests (move what it needs to bench/): {found}"


def test_no_benchmark_edits_sys_path() -> None:
    found = {name: lines for name, tree in modules().items() if (lines := edits_sys_path(tree))}
    assert found == {}, f"bench/ edits sys.path (run it as python -m bench.NAME): {found}"


def test_the_rules_see_what_they_forbid() -> None:
    source = (
        "import tests.support.servers\n"
        "from tests.support import waits\n"
        "import sys\n"
        "sys.path.insert(0, '.')\n"
        "def f():\n"
        "    from tests import conftest\n"
        "import testsuite\n"
        "from bench import net\n"
    )
    tree = ast.parse(source)
    assert imports_tests(tree) == [1, 2, 6]
    assert edits_sys_path(tree) == [4]


def test_a_benchmark_runs_as_a_module() -> None:
    """``python -m bench.NAME --help`` from the repository root, with nothing on the path but
    the repository (the hostile benchmark, which once imported the tests' fixture site)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.hostile_bench", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: python -m bench.hostile_bench" in done.stdout


def test_every_smoke_test_module_carries_the_bench_marker() -> None:
    """`python -m pytest` leaves the smoke tests out by their marker (``-m 'not bench'`` in
    the addopts) and CI runs them in a step of their own (``-m bench``): a smoke module
    without ``pytestmark = pytest.mark.bench`` would run in both, or be dropped from the step."""
    unmarked = []
    for path in sorted((ROOT / "tests" / "bench").glob("test_*_smoke.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        marks = [
            ast.unparse(node.value)
            for node in tree.body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
        ]
        if "pytest.mark.bench" not in marks:
            unmarked.append(path.name)
    assert unmarked == []

"""Imports go one way: the tests never import ``bench``; the benchmarks import of the tests
only the servers and sites both share (:mod:`tests.servers`, :mod:`tests.sites`), never the
tests' support, fixtures or test modules; and no benchmark edits ``sys.path`` (each runs as
``python -m bench.NAME`` from the repository root). Read from the source (its syntax tree),
so that a new import or path edit anywhere in ``bench/`` or ``tests/`` fails here."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
TESTS = ROOT / "tests"
SHARED = ("tests.servers", "tests.sites")
"""What the benchmarks may import of the tests."""


def modules(folder: Path = BENCH) -> dict[str, ast.Module]:
    return {
        path.relative_to(ROOT).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(folder.rglob("*.py"))
    }


def imports_of(tree: ast.Module, package: str, allowed: tuple[str, ...] = ()) -> list[int]:
    """The lines importing ``package`` or a module of it (``import package...``, ``from
    package... import ...``), but for the modules of ``allowed`` packages."""

    def inside(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        if any(
            inside(name, package) and not any(inside(name, a) for a in allowed) for name in names
        ):
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


def test_imports_go_one_way() -> None:
    found = {
        name: lines
        for name, tree in modules().items()
        if (lines := imports_of(tree, "tests", SHARED))
    }
    assert found == {}, f"bench/ imports the tests (move what it needs to {SHARED}): {found}"
    found = {
        name: lines for name, tree in modules(TESTS).items() if (lines := imports_of(tree, "bench"))
    }
    assert found == {}, f"tests/ imports bench (run the benchmark as a command): {found}"


def test_no_benchmark_edits_sys_path() -> None:
    found = {name: lines for name, tree in modules().items() if (lines := edits_sys_path(tree))}
    assert found == {}, f"bench/ edits sys.path (run it as python -m bench.NAME): {found}"


def test_the_rules_see_what_they_forbid() -> None:
    source = (
        "import tests.servers.session\n"
        "from tests.support import waits\n"
        "import sys\n"
        "sys.path.insert(0, '.')\n"
        "def f():\n"
        "    from tests import conftest\n"
        "import testsuite\n"
        "from bench import net\n"
    )
    tree = ast.parse(source)
    assert imports_of(tree, "tests", SHARED) == [2, 6]
    assert imports_of(tree, "tests") == [1, 2, 6]
    assert imports_of(tree, "bench") == [8]
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
    """The smoke tests are selected (``-m bench``) or left out (``-m 'not bench'``) by their
    marker: a smoke module without ``pytestmark = pytest.mark.bench`` would run with
    ``-m 'not bench'``, which promises the suite without the benchmarks, and be missing from
    ``-m bench``."""
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

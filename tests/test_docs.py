"""The README stays short and keeps the two commands ``.ci/run`` reads from it; the
documentation site's command-line reference (``docs/gen_cli.py``) covers every command, action
and option of ``fptrack``; the configuration page names every setting; nothing links to files
outside the repository; the site builds with every warning an error."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import get_type_hints

from admin.commands import COMMANDS, build_parser
from matcher.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def gen_cli() -> ModuleType:
    """``docs/gen_cli.py``, loaded from its file as MkDocs loads a hook."""
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move sections to docs/"


def test_readme_lines_3_and_4_are_the_two_commands() -> None:
    """The lines ``.ci/run`` runs (``sed -n 3p`` and ``4p``), as its ``case`` requires."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# fptrack"
    assert lines[1] == ""
    assert lines[2].startswith("    pip install -e . && fptrack scan ")
    assert lines[3] == "    pip install -e '.[test]' && python -m pytest"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "sed -n 3p README.md" in ci and "sed -n 4p README.md" in ci


def test_readme_scan_command_is_the_real_parser() -> None:
    """Line 3's ``fptrack scan`` arguments parse (so a renamed option fails here first)."""
    line = README.read_text(encoding="utf-8").splitlines()[2]
    scan = line.split("&&", 1)[1].split()
    assert scan[:2] == ["fptrack", "scan"]
    args = build_parser(["scan"]).parse_args(scan[1:])
    assert args.works == "samples/works" and args.json == "scan.json"


def test_cli_reference_lists_every_command_action_and_option() -> None:
    gen = gen_cli()
    parser = build_parser()
    page = gen.reference(parser)
    headings = set(re.findall(r"^#{2,} `fptrack ([a-z -]+)`$", page, flags=re.MULTILINE))
    assert {name for name in COMMANDS} <= headings
    for path, sub in gen.walk(parser):
        assert " ".join(path) in headings, path
        usage = page.split(f"`fptrack {' '.join(path)}`\n", 1)[1].split("\n#", 1)[0]
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            for option in action.option_strings:
                assert f"`{option}" in usage or f", {option}" in usage, (path, option)
    assert headings == {" ".join(path) for path, _ in gen.walk(parser)}


def test_cli_reference_is_built_by_the_hook() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "- docs/gen_cli.py" in config
    assert "cli-reference.md" in config
    assert not (ROOT / "docs" / "cli-reference.md").exists(), "generated at build time only"


def test_help_text_becomes_literal_markdown() -> None:
    escape = gen_cli()._escape
    assert escape("NAME@<its host>  a|b *x* [y]") == ("NAME@&lt;its host&gt; a\\|b \\*x\\* \\[y\\]")


def test_configuration_page_names_every_setting() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    names = [
        f"FPTRACK_{f.name.upper()}"
        for f in dataclasses.fields(Settings)
        if f.name not in ("policy", "explicit")
    ]
    policy = get_type_hints(Settings)["policy"]
    names += [f"FPTRACK_POLICY_{f.name.upper()}" for f in dataclasses.fields(policy)]
    assert len(names) > 40
    missing = [name for name in names if f"`{name}`" not in page]
    assert not missing, f"docs/configuration.md lacks {missing}"


def test_nothing_links_outside_the_repository() -> None:
    """No README, page, deployment file or module refers to ``../shared/``: the design is
    ``docs/design.md``."""
    prose = [README, ROOT / "mkdocs.yml", ROOT / "pyproject.toml"]
    folders = ("docs", "deploy", "bench", "samples", "fingerprint", "matcher", "crawler", "admin")
    for folder in folders:
        prose += [
            p for p in (ROOT / folder).rglob("*") if p.suffix in {".md", ".py", ".yml", ".conf"}
        ]
    stale = re.compile(r"\.\./shared/|shared/design\.md")
    bad = [
        str(path.relative_to(ROOT))
        for path in prose
        if path.is_file() and stale.search(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not bad, f"these refer to shared/ outside the repository: {bad}"


def test_table_cells_read_the_same_on_the_site() -> None:
    """A pipe escaped for GitHub inside a table's code span shows as a pipe on the site."""
    spec = importlib.util.spec_from_file_location("gfm", ROOT / "docs" / "gfm_tables.py")
    assert spec is not None and spec.loader is not None
    gfm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gfm)
    page = "| `a \\| b` | c \\| d |\n```\n| `x \\| y` |\n```\ntext `p \\| q`"
    assert gfm.on_page_markdown(page) == (
        "| `a | b` | c \\| d |\n```\n| `x \\| y` |\n```\ntext `p \\| q`"
    )


def test_the_documentation_site_builds_with_every_warning_an_error(tmp_path: Path) -> None:
    """``mkdocs build --strict`` (broken links and anchors are warnings, so errors here), in a
    process of its own as a reader builds it."""
    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-4000:]
    assert (site / "index.html").is_file() and (site / "cli" / "index.html").is_file()

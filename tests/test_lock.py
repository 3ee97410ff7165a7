"""The lock (``constraints.txt``) covers ``pyproject.toml``: every dependency of the project
and of its extras is pinned, within the range the project asks for, and the installs that
should use the lock do."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)")


def pins() -> dict[str, Version]:
    text = (ROOT / "constraints.txt").read_text(encoding="utf-8")
    found = (PIN.match(line) for line in text.splitlines())
    return {canonicalize_name(m.group(1)): Version(m.group(2)) for m in found if m}


def requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    listed = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        listed += extra
    return [Requirement(r) for r in listed]


def test_every_dependency_is_pinned_within_its_range() -> None:
    locked = pins()
    assert len(locked) > 50
    for requirement in requirements():
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement} is not in constraints.txt: refresh it"
        assert requirement.specifier.contains(locked[name], prereleases=True), (
            f"{requirement}: constraints.txt pins {locked[name]}: refresh it"
        )


def test_the_linter_is_pinned() -> None:
    [ruff] = [r for r in requirements() if r.name == "ruff"]
    assert str(ruff.specifier).startswith("=="), ruff


def test_the_image_and_the_one_machine_deployment_install_from_the_lock() -> None:
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    assert "COPY pyproject.toml README.md constraints.txt" in dockerfile
    assert "pip install --no-cache-dir -c constraints.txt ." in dockerfile
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install -c constraints.txt -e '.[local]'" in readme

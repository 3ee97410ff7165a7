"""What the generators of fingerprint's data modules share (``bench/make_t2s_table.py``,
``bench/make_reference_frequencies.py``): the module's docstring, and writing it in one step."""

from __future__ import annotations

import os
import tempfile
import textwrap
from pathlib import Path


def docstring(summary: str, about: str) -> list[str]:
    """The lines of a generated module's docstring: its one-line summary, then ``about``
    (where it came from, how to make it again) filled to the line length."""
    return [f'"""{summary}', "", textwrap.fill(about, width=96, break_on_hyphens=False), '"""']


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` in one step, so that a concurrent import never sees half a module."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".py")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)

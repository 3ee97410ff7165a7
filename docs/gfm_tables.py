"""MkDocs hook: table cells written for GitHub read the same on the site.

GitHub's tables need a pipe inside a code span escaped (`` `a \\| b` ``) and show it as ``|``;
Python-Markdown already ignores pipes inside code spans and would show the backslash. So
inside the code spans of table rows, ``\\|`` becomes ``|`` before the page is converted.
"""

from __future__ import annotations

import re
from typing import Any

CODE_SPAN = re.compile(r"`[^`\n]*`")


def unescape_row(line: str) -> str:
    """``line`` with ``\\|`` inside its code spans made ``|``, if it is a table row."""
    if not line.lstrip().startswith("|"):
        return line
    return CODE_SPAN.sub(lambda m: m.group(0).replace("\\|", "|"), line)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    fence = False
    lines = []
    for line in markdown.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        lines.append(line if fence else unescape_row(line))
    return "\n".join(lines)

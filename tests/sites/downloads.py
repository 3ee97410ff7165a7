"""A site folder offering one whole-book download: a ZIP of GBK chapter files."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from pathlib import Path


def book_site(folder: Path, chapters: Sequence[str]) -> int:
    """Write ``index.html`` linking ``down/book.zip`` (全本下载), a ZIP of one GBK file per
    chapter (``第N章`` then its text) into ``folder``; the part size that reads it one chapter
    a part (``FPTRACK_DOWNLOAD_PART_CHARS``)."""
    (folder / "down").mkdir(parents=True, exist_ok=True)
    body = io.BytesIO()
    with zipfile.ZipFile(body, "w") as archive:
        for n, text in enumerate(chapters, 1):
            archive.writestr(f"{n}.txt", f"第{n}章\n{text}".encode("gbk", "replace"))
    (folder / "down" / "book.zip").write_bytes(body.getvalue())
    (folder / "index.html").write_text(
        '<html><body><p><a href="down/book.zip">全本下载</a></p></body></html>', encoding="utf-8"
    )
    return max(map(len, chapters)) + 20

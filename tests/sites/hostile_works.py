"""A works folder built to break a reader: the bad-works corpus of the hostile-input suite.

:func:`build` writes, into an empty folder, the sample works (``samples/works``) each in
another shape a rights holder's files come in, and the files a works folder must survive,
and returns the :class:`WorkCase` of each with its outcome:

- ``work``: registered, and matched where the sample site copies it: UTF-8; GBK and Big5
  (Taiwan forms) with no declaration; GB18030; UTF-8 with a byte-order mark; UTF-8 with a
  stray NUL byte; UTF-8 with two corrupt bytes; a name that is not UTF-8; a name with spaces,
  a tab and a leading ``-``;
- ``error``: reported in one line naming the file, nothing else lost: empty, binary, 50 MB
  (GBK, 25 million characters: over the work length limit), links to ``/dev/zero``, to
  ``/proc/self/environ`` and to nothing, a FIFO, a folder 1,200 levels deep, a zip bomb
  (100 MiB of spaces in one member), a zip member lying about its size, zip members with
  ``../`` and absolute names.

Each error case's ``expect`` is a fragment of its error line.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import opencc

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples" / "works"
DEEP_LEVELS = 1200
BIG_CHARS = 25_000_000
WORK, ERROR = "work", "error"


@dataclass(frozen=True)
class WorkCase:
    """One file (or archive member) of the corpus and its outcome."""

    name: str
    trick: str
    outcome: str  # WORK or ERROR
    work: str = ""  # the work's name in the scan's JSON, for WORK
    expect: str = ""  # a fragment of the error line, for ERROR


def _sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def build(folder: Path) -> list[WorkCase]:
    """Write the corpus into ``folder`` (created, or empty); its cases."""
    folder.mkdir(parents=True, exist_ok=True)
    cases: list[WorkCase] = []

    def work(name: str, data: bytes, trick: str, shown: str | None = None) -> None:
        (folder / os.fsdecode(name.encode("utf-8", "surrogateescape"))).write_bytes(data)
        cases.append(WorkCase(shown or name, trick, WORK, work=shown or name))

    def error(name: str, trick: str, expect: str) -> None:
        cases.append(WorkCase(name, trick, ERROR, expect=expect))

    work("lighthouse.txt", _sample("lighthouse.txt").encode(), "UTF-8")
    work("river-town.txt", _sample("river-town.txt").encode("gbk"), "GBK, undeclared")
    to_big5 = opencc.OpenCC("s2tw").convert
    work("tea-history.txt", to_big5(_sample("tea-history.txt")).encode("big5"),
         "Big5 in Taiwan forms, undeclared")  # fmt: skip
    work("sanguo-01.txt", _sample("sanguo-01.txt").encode("gb18030"), "GB18030")
    work("star-voyage.txt", b"\xef\xbb\xbf" + _sample("star-voyage.txt").encode(),
         "UTF-8 with a byte-order mark")  # fmt: skip
    chef = _sample("chef-diary.txt")
    work("chef-diary.txt", (chef[:300] + "\x00" + chef[300:]).encode(), "a NUL byte inside")
    brewing = _sample("tea-brewing.txt").encode()
    work("tea-brewing.txt", brewing[:500] + b"\xff\xfe" + brewing[500:],
         "two corrupt bytes inside UTF-8")  # fmt: skip
    gbk_name = os.fsdecode("灯塔副本.txt".encode("gbk"))
    (folder / gbk_name).write_bytes(_sample("lighthouse.txt")[:600].encode())
    shown = "灯塔副本.txt".encode("gbk").decode("utf-8", "replace")
    cases.append(WorkCase(shown, "a file name in GBK bytes", WORK, work=shown))
    work("-rf \t copy.txt", _sample("river-town.txt")[:600].encode(),
         "a name with a leading -, spaces and a tab")  # fmt: skip

    (folder / "empty.txt").write_bytes(b"")
    error("empty.txt", "an empty file", "0 content characters")
    (folder / "binary.txt").write_bytes(bytes(range(256)) * 64)
    error("binary.txt", "binary bytes", "binary data")
    big = ("雨夜渡口老船夫把灯挂在桅杆上" * (BIG_CHARS // 14 + 1))[:BIG_CHARS]
    (folder / "huge.txt").write_bytes(big.encode("gbk"))
    error("huge.txt", "50 MB of GBK: 25 million characters", "huge.txt")
    (folder / "zero.txt").symlink_to("/dev/zero")
    error("zero.txt", "a link to /dev/zero", "not a regular file")
    (folder / "environ.txt").symlink_to("/proc/self/environ")
    error("environ.txt", "a link to /proc/self/environ", "a file of the system")
    (folder / "dangling.txt").symlink_to(folder / "gone.txt")
    error("dangling.txt", "a link to nothing", "a symbolic link to nothing")
    os.mkfifo(folder / "pipe.txt")
    error("pipe.txt", "a FIFO", "not a regular file")

    level = str(folder / "deep")
    for _ in range(DEEP_LEVELS):  # one by one: os.makedirs recurses
        os.mkdir(level)
        level += "/d"
    os.mkdir(level)
    Path(level, "buried.txt").write_bytes(_sample("lighthouse.txt").encode())
    error("deep/", f"a folder {DEEP_LEVELS:,} levels deep", "levels")

    with zipfile.ZipFile(folder / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("spaces.txt", b" " * (100 << 20))
    error("bomb.zip/spaces.txt", "a zip member of 100 MiB of spaces", "over the --max-bytes")
    payload = "雨夜渡口".encode() * 6_000_000  # 72 MB, over the 64 MiB limit
    with zipfile.ZipFile(folder / "liar.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("liar.txt", payload)
    data = (folder / "liar.zip").read_bytes()
    declared = len(payload).to_bytes(4, "little")
    (folder / "liar.zip").write_bytes(data.replace(declared, (1000).to_bytes(4, "little")))
    error("liar.zip/liar.txt", "a zip member declaring 1,000 bytes, holding 72 MB", "liar.txt")
    with zipfile.ZipFile(folder / "climb.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("../escape.txt", _sample("lighthouse.txt"))
        z.writestr("/etc/absolute.txt", _sample("lighthouse.txt"))
    error("climb.zip/../escape.txt", "a zip member named ../", "climbing name")
    error("climb.zip//etc/absolute.txt", "a zip member with an absolute name", "climbing name")
    return cases


def remove(folder: Path) -> None:
    """Delete a corpus folder (its deep folder one level at a time: rmtree recurses)."""
    deep = folder / "deep"
    if deep.exists():
        levels = [str(deep)]
        while os.path.isdir(levels[-1] + "/d"):
            levels.append(levels[-1] + "/d")
        for level in reversed(levels):
            for name in os.listdir(level):
                if not os.path.isdir(os.path.join(level, name)):
                    os.remove(os.path.join(level, name))
            os.rmdir(level)
    for entry in folder.iterdir():
        entry.unlink()
    folder.rmdir()

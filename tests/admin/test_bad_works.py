"""Works folders and archives built to break a reader: odd names, deep folders, links to
devices, FIFOs, climbing and lying zip members. Each is reported in one line and never
stops the others; nothing is opened that could block or never end."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from admin.reading import MAX_DEPTH, iter_work_files, printable

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "samples" / "works" / "lighthouse.txt").read_bytes()


def read(*paths: Path, max_bytes: int = 64 * 1024 * 1024) -> tuple[dict[str, str], list[str]]:
    works, errors = {}, []
    for work in iter_work_files(list(paths), max_bytes):
        if work.error:
            errors.append(work.error)
        else:
            works[work.name] = work.text
    return works, errors


def test_a_name_that_is_not_utf8_is_read_and_shown_printable(tmp_path: Path) -> None:
    folder = tmp_path / "works"
    folder.mkdir()
    name = os.fsdecode("灯塔.txt".encode("gbk"))
    (folder / name).write_bytes(TEXT)
    [work] = list(iter_work_files([folder]))
    assert not work.error and work.text.strip()
    assert work.name == printable(name) and "\ufffd" in work.name
    assert work.name.encode("utf-8") and work.source.encode("utf-8")  # no lone surrogates


def test_folders_deeper_than_the_limit_are_reported_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "works"
    levels = [str(folder)]
    for _ in range(1200):  # made one by one: pathlib's and os's makedirs recurse
        levels.append(levels[-1] + "/d")
    for level in levels:
        os.mkdir(level)
    try:
        Path(levels[-1], "buried.txt").write_bytes(TEXT)
        (folder / "d" / "shallow.txt").write_bytes(TEXT)
        works, errors = read(folder)
        assert list(works) == ["d/shallow.txt"]
        assert len(errors) == 1 and f"deeper than {MAX_DEPTH} levels" in errors[0]
    finally:  # removed one by one too (shutil.rmtree recurses)
        os.remove(Path(levels[-1], "buried.txt"))
        for level in reversed(levels[1:]):
            for name in os.listdir(level):
                os.remove(os.path.join(level, name))
            os.rmdir(level)


def test_links_to_nothing_or_devices_and_fifos_are_reported_unopened(tmp_path: Path) -> None:
    folder = tmp_path / "works"
    folder.mkdir()
    (folder / "real.txt").write_bytes(TEXT)
    (folder / "dangling.txt").symlink_to(tmp_path / "gone.txt")
    (folder / "zero.txt").symlink_to("/dev/zero")
    os.mkfifo(folder / "pipe.txt")
    (folder / "fifo.zip").symlink_to(folder / "pipe.txt")
    works, errors = read(folder)
    assert list(works) == ["real.txt"]
    assert sorted(e.split(" is ", 1)[1] for e in errors) == [
        "a symbolic link to nothing",
        "not a regular file (a FIFO, device or socket)",
        "not a regular file (a FIFO, device or socket)",
        "not a regular file (a FIFO, device or socket)",
    ]
    _, given = read(folder / "zero.txt")  # named on the command line: the same
    assert "not a regular file" in given[0]


def test_zip_members_that_climb_or_exceed_the_limit_are_refused_by_name(tmp_path: Path) -> None:
    archive = tmp_path / "books.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("good.txt", TEXT)
        z.writestr("../escape.txt", TEXT)
        z.writestr("/etc/abs.txt", TEXT)
        z.writestr("bomb.txt", b"\0" * (3 * 1024 * 1024))
    works, errors = read(archive, max_bytes=1024 * 1024)
    assert list(works) == ["books.zip/good.txt"]
    assert len(errors) == 3
    assert sum("absolute or climbing name" in e for e in errors) == 2
    [bomb] = [e for e in errors if "bomb.txt" in e]
    assert bomb.startswith(f"{archive}/bomb.txt is over the --max-bytes limit")


def test_a_zip_member_lying_about_its_size_is_bounded_and_named(tmp_path: Path) -> None:
    archive = tmp_path / "liar.zip"
    payload = "雨夜渡口".encode() * 200_000  # 2.4 MB
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("liar.txt", payload)
    data = bytearray(archive.read_bytes())
    declared = len(payload).to_bytes(4, "little")
    small = (1000).to_bytes(4, "little")
    assert data.count(declared) == 2  # local header and central directory
    archive.write_bytes(bytes(data).replace(declared, small))
    works, errors = read(archive, max_bytes=1024 * 1024)
    assert works == {} and len(errors) == 1
    assert errors[0].startswith(f"{archive}/liar.txt: ")


def test_files_that_are_not_works_are_named_as_paths_are_shown(tmp_path: Path) -> None:
    """Files of other kinds, in the folder or in a zip archive, are skipped and named to the
    listener, each as messages name files: the path given joined with the file's."""
    folder = tmp_path / "works"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_bytes(TEXT)
    (folder / "sub" / "cover.bin").write_bytes(b"\x00\x01")
    with zipfile.ZipFile(folder / "more.zip", "w") as z:
        z.writestr("b.txt", TEXT)
        z.writestr("notes.bin", b"\x00")
    named: list[str] = []
    works = list(iter_work_files([folder], ignored=named.append))
    assert [w.name for w in works] == ["a.txt", "more.zip/b.txt"]
    assert [w.shown for w in works] == [f"{folder}/a.txt", f"{folder}/more.zip/b.txt"]
    assert named == [f"{folder}/sub/cover.bin", f"{folder}/more.zip/notes.bin"]

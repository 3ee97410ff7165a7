"""WARC records of an HTTP exchange, and the two archives that keep them (files on disk, and
GridFS on the test MongoDB server)."""

from __future__ import annotations

import gzip
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pymongo.database import Database

from matcher.evidence.archive import (
    ArchiveError,
    DirectoryArchive,
    Exchange,
    GridFSArchive,
    prune,
    sha256_hex,
    verify,
    warc_bytes,
)

BODY = "<html><body><p>雨夜渡口，老船夫把灯挂在桅杆上。</p></body></html>".encode("gbk")
EXCHANGE = Exchange(
    url="http://pirate.test/book/1.html?p=2",
    status=200,
    reason="OK",
    response_headers=(
        ("Content-Type", "text/html; charset=gbk"),
        ("Content-Encoding", "gzip"),
        ("Content-Length", "40"),
        ("Server", "nginx"),
    ),
    body=BODY,
    fetched_at=datetime(2026, 11, 27, 4, 5, 6, 789000, tzinfo=UTC),
    request_headers=(("User-Agent", "fptrack/0.1"), ("Accept-Encoding", "gzip")),
)


def test_an_exchange_is_a_response_and_a_request_record() -> None:
    data = warc_bytes(EXCHANGE)
    assert gzip.decompress(data).startswith(b"WARC/1.1\r\n")
    response, request = verify(data, sha256_hex(data))
    assert (response.kind, request.kind) == ("response", "request")
    assert response.url == request.url == EXCHANGE.url
    assert response.date == "2026-11-27T04:05:06.789000Z"
    assert response.payload == BODY  # the bytes as fetched, never decoded
    text = gzip.decompress(data).decode("latin-1")
    assert "WARC-Payload-Digest: sha1:" in text and "WARC-Concurrent-To: <urn:uuid:" in text
    assert "GET /book/1.html?p=2 HTTP/1.1" in text and "Host: pirate.test" in text
    assert "X-Original-Content-Encoding: gzip" in text and "Content-Length: 40" not in text


def test_a_damaged_or_misnamed_file_does_not_verify() -> None:
    data = warc_bytes(EXCHANGE)
    with pytest.raises(ArchiveError, match="SHA-256"):
        verify(data, "0" * 64)
    raw = gzip.decompress(data)
    tampered = gzip.compress(raw.replace("雨夜".encode("gbk"), "晴天".encode("gbk")))
    with pytest.raises(ArchiveError, match="does not validate"):
        verify(tampered)


def test_a_damaged_member_of_a_concatenated_file_fails_it() -> None:
    """``fptrack scan --warc`` writes WARC files one after the other (one gzip member per
    record): a flipped byte in any member fails the whole file, where warcio alone would
    write the member's inflate error to stderr and read on, one record fewer."""
    other = warc_bytes(replace(EXCHANGE, url="http://pirate.test/book/2.html"))
    data = warc_bytes(EXCHANGE) + other
    assert len(verify(data)) == 4
    for at in (len(data) - len(other) // 2, len(data) - 20, 100):
        damaged = bytearray(data)
        damaged[at] ^= 0x01
        with pytest.raises(ArchiveError, match="does not validate"):
            verify(bytes(damaged))
    with pytest.raises(ArchiveError, match="gzip"):
        verify(data[:-7])  # cut off inside the last member


@pytest.fixture(params=["directory", "gridfs"])
def archive(request: pytest.FixtureRequest, tmp_path: Path) -> DirectoryArchive | GridFSArchive:
    if request.param == "directory":
        return DirectoryArchive(tmp_path / "archive")
    mongo_db: Database = request.getfixturevalue("mongo_db")
    return GridFSArchive(mongo_db)


def test_archives_keep_each_file_once_under_its_hash(
    archive: DirectoryArchive | GridFSArchive,
) -> None:
    data = warc_bytes(EXCHANGE)
    key = archive.put(data)
    assert key == sha256_hex(data) and archive.put(data) == key
    assert archive.has(key) and archive.get(key) == data
    verify(archive.get(key), key)
    missing = "f" * 64
    assert not archive.has(missing)
    with pytest.raises(ArchiveError, match="no WARC file"):
        archive.get(missing)
    with pytest.raises(ArchiveError, match="not a SHA-256"):
        archive.get("../../etc/passwd")


def test_pruning_deletes_old_files_nothing_refers_to(
    archive: DirectoryArchive | GridFSArchive,
) -> None:
    kept, old, other = (
        archive.put(warc_bytes(replace(EXCHANGE, url=f"http://pirate.test/{n}.html")))
        for n in range(3)
    )
    asked: list[str] = []

    def refs() -> set[str]:
        asked.append("refs")
        return {kept}

    earlier = datetime.now(UTC) - timedelta(hours=1)
    assert prune(archive, refs, earlier) == 0  # every file is younger than the limit
    assert all(archive.has(s) for s in (kept, old, other))
    later = datetime.now(UTC) + timedelta(seconds=5)
    assert prune(archive, refs, later) == 2 and asked == ["refs", "refs"]
    assert archive.has(kept) and not archive.has(old) and not archive.has(other)
    assert prune(archive, refs, later) == 0


class CountingArchive(DirectoryArchive):
    """A folder archive that counts the files handed to it."""

    puts = 0

    def put(self, data: bytes) -> str:
        self.puts += 1
        return super().put(data)


def test_the_parts_of_a_download_are_archived_once(mongo_db: Database, tmp_path: Path) -> None:
    from matcher.pages import CrawledPage
    from matcher.store import Store
    from matcher.worker.ingest import Ingest

    store = Store(mongo_db)
    archive = CountingArchive(tmp_path)
    ingest = Ingest(store, lambda page_id: None, archive=archive)
    url = "http://pirate.test/down/book.zip"
    parts = [
        CrawledPage(url=u, site="pirate", title="", text=f"第{n}部分", exchange=EXCHANGE)
        for n, u in enumerate((url, url + "#part2", url + "#part3"), 1)
    ]
    ingest.pages(parts)
    refs = {store.pages.page_by_url(p.url)["archive"]["sha256"] for p in parts}
    assert len(refs) == 1 and archive.puts == 1
    ingest.page(replace(parts[0], text="又一次", exchange=replace(EXCHANGE, status=203)))
    assert archive.puts == 2  # another exchange: archived

"""The evidence archive: a page's HTTP exchange as fetched, kept as WARC records.

A :class:`Exchange` is what the crawler saw: the request (method, URL, headers), the
response (status, headers, body before any charset decoding) and the fetch time.
:func:`warc_bytes` writes it as one gzipped WARC file (ISO 28500, WARC/1.1, through
``warcio``) of two records, the ``response`` (with its ``WARC-Payload-Digest`` and
``WARC-Block-Digest``) and the ``request`` (``WARC-Concurrent-To`` the response), each
member gzipped on its own as web archives do. The file's SHA-256 (:func:`sha256_hex`) is
its name in an :class:`Archive`: content-addressed, so an exchange stored twice is stored
once, and a record never changes once written. The body is the one Scrapy hands over:
after the ``Content-Encoding`` was undone, so that header is moved to
``X-Original-Content-Encoding`` and ``Content-Length`` is the body's.

Two archives behind one interface: :class:`DirectoryArchive` (files on disk, written to a
temporary name and renamed: never seen half-written) and :class:`GridFSArchive` (MongoDB
GridFS, bucket ``archive``, sharded on :data:`SHARD_KEYS`). :func:`verify` reads a WARC
file back and checks its SHA-256 and every record's digests. :func:`prune` deletes the
files superseded by a page's later exchange that no match refers to.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import tempfile
import zlib
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Protocol
from urllib.parse import urlsplit

from pymongo import ASCENDING, IndexModel
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from matcher.settings import spec_error

Headers = Sequence[tuple[str, str]]
RENDERED_FIELD = "Fptrack-Rendered"
"""A named field of a rendered page's response record (WARC 1.1 allows fields of one's
own): ``chromium; body is the DOM after the page's scripts ran``."""
RENDERED_VALUE = "chromium; body is the DOM after the page's scripts ran"
_DROPPED = frozenset({"content-encoding", "content-length", "transfer-encoding"})

BUCKET = "archive"
"""The GridFS bucket of :class:`GridFSArchive`: collections ``archive.files`` (one document
per WARC file, ``_id`` its SHA-256) and ``archive.chunks`` (its bytes, in chunks)."""
FILES, CHUNKS = f"{BUCKET}.files", f"{BUCKET}.chunks"
INDEXES: dict[str, list[IndexModel]] = {
    FILES: [
        IndexModel(
            [("filename", ASCENDING), ("uploadDate", ASCENDING)], name="filename_1_uploadDate_1"
        )
    ],
    CHUNKS: [
        IndexModel([("files_id", ASCENDING), ("n", ASCENDING)], unique=True, name="files_id_1_n_1")
    ],
}
"""GridFS's own indexes, under the names GridFS gives them (it creates them on its first
write when they are missing), declared for :data:`matcher.store.INDEXES`."""
SHARD_KEYS: dict[str, dict[str, int]] = {
    FILES: {"_id": ASCENDING},
    CHUNKS: {"files_id": ASCENDING, "n": ASCENDING},
}
"""The shard keys MongoDB documents for a GridFS bucket ("Sharding GridFS"): ``chunks`` on
``{files_id: 1, n: 1}``, ``files`` on ``_id``; both are a file's SHA-256 here, uniform, so
ranged keys spread evenly. GridFS's writes are inserts, and its deletes name the file by
``_id`` (``files``) or delete every chunk of it (``chunks``): all full-key or multi-document."""


class ArchiveError(Exception):
    """A WARC file is missing, or fails its hash or a record's digest."""


@dataclass(frozen=True)
class Exchange:
    """One HTTP request and its response, as the crawler fetched them."""

    url: str
    status: int
    response_headers: Headers
    body: bytes
    fetched_at: datetime
    method: str = "GET"
    request_headers: Headers = field(default_factory=tuple)
    reason: str = ""
    rendered: bool = False
    """The body is the DOM a browser built from the document (its scripts run), not the
    document's own bytes: the response record then says so (:data:`RENDERED_FIELD`)."""


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data``, in hex: a WARC file's name in an archive."""
    return hashlib.sha256(data).hexdigest()


def warc_bytes(exchange: Exchange) -> bytes:
    """``exchange`` as a gzipped WARC file: its response record, then its request record."""
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=True, warc_version="1.1")
    when = exchange.fetched_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    headers = [(k, v) for k, v in exchange.response_headers if k.lower() not in _DROPPED]
    headers += [
        ("X-Original-Content-Encoding", v)
        for k, v in exchange.response_headers
        if k.lower() == "content-encoding"
    ]
    headers.append(("Content-Length", str(len(exchange.body))))
    status = f"{exchange.status} {exchange.reason}".strip()
    warc_headers = {"WARC-Date": when}
    if exchange.rendered:
        warc_headers[RENDERED_FIELD] = RENDERED_VALUE
    response = writer.create_warc_record(
        exchange.url,
        "response",
        payload=io.BytesIO(exchange.body),
        length=len(exchange.body),
        http_headers=StatusAndHeaders(status, headers, protocol="HTTP/1.1"),
        warc_headers_dict=warc_headers,
    )
    parts = urlsplit(exchange.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request_headers = list(exchange.request_headers)
    if not any(k.lower() == "host" for k, _ in request_headers):
        request_headers.insert(0, ("Host", parts.netloc))
    request = writer.create_warc_record(
        exchange.url,
        "request",
        payload=io.BytesIO(b""),
        length=0,
        http_headers=StatusAndHeaders(
            f"{exchange.method} {target} HTTP/1.1",
            request_headers,
            protocol="HTTP/1.1",
            is_http_request=True,
        ),
        warc_headers_dict={
            "WARC-Date": when,
            "WARC-Concurrent-To": response.rec_headers.get_header("WARC-Record-ID"),
        },
    )
    writer.write_record(response)
    writer.write_record(request)
    return out.getvalue()


@dataclass(frozen=True)
class Record:
    """What :func:`verify` read from one WARC record."""

    kind: str
    url: str
    date: str
    payload: bytes


def verify(data: bytes, sha256: str | None = None) -> list[Record]:
    """The records of a WARC file, after checking its SHA-256 (when given), that every
    gzip member is whole (its CRC and length), and every record's block and payload
    digests; :class:`ArchiveError` if any fails."""
    if sha256 is not None and sha256_hex(data) != sha256:
        raise ArchiveError(f"the WARC file's SHA-256 is not {sha256}")
    _check_gzip(data)
    records = []
    try:
        for record in ArchiveIterator(io.BytesIO(data), check_digests="raise"):
            payload = record.content_stream().read()
            records.append(
                Record(
                    record.rec_type,
                    record.rec_headers.get_header("WARC-Target-URI") or "",
                    record.rec_headers.get_header("WARC-Date") or "",
                    payload,
                )
            )
    except Exception as exc:  # warcio raises several kinds on a damaged file
        said = str(exc).split(", first line:")[0]  # not the damaged bytes it read
        said = " ".join("".join(c if c.isprintable() else " " for c in said).split())
        raise ArchiveError(f"the WARC file does not validate: {said[:160]}") from exc
    if not records:
        raise ArchiveError("the WARC file holds no record")
    return records


def _check_gzip(data: bytes) -> None:
    """:class:`ArchiveError` unless every gzip member of ``data`` (when gzipped) inflates and
    matches its CRC and length: ``warcio`` writes a member that fails to inflate to stderr
    and reads on, so a damaged member of a file of several (``fptrack scan --warc``) would
    lose its records silently rather than fail."""
    if data[:2] != b"\x1f\x8b":
        return
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as members:
            while members.read(1 << 20):
                pass
    except (OSError, EOFError, zlib.error) as exc:
        raise ArchiveError(f"the WARC file does not validate: gzip: {exc}") from None


class Archive(Protocol):
    """Where WARC files live, by their SHA-256."""

    def put(self, data: bytes) -> str:
        """Store ``data`` (once, whatever the number of calls); its SHA-256."""
        ...

    def get(self, sha256: str) -> bytes:
        """The WARC file of that SHA-256; :class:`ArchiveError` when there is none."""
        ...

    def has(self, sha256: str) -> bool: ...

    def stored_before(self, when: datetime) -> Iterator[str]:
        """The SHA-256 of every file stored before ``when``."""
        ...

    def delete(self, sha256: str) -> None:
        """Remove that file (nothing if there is none)."""
        ...


def _checked(sha256: str) -> str:
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ArchiveError(f"not a SHA-256: {sha256[:80]!r}")
    return sha256


class DirectoryArchive:
    """WARC files under a folder, as ``ab/<sha256>.warc.gz``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, sha256: str) -> Path:
        sha256 = _checked(sha256)
        return self.root / sha256[:2] / f"{sha256}.warc.gz"

    def put(self, data: bytes) -> str:
        sha256 = sha256_hex(data)
        path = self._path(sha256)
        if path.exists():
            return sha256
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return sha256

    def get(self, sha256: str) -> bytes:
        try:
            return self._path(sha256).read_bytes()
        except FileNotFoundError:
            raise ArchiveError(f"no WARC file {sha256} in {self.root}") from None

    def has(self, sha256: str) -> bool:
        return self._path(sha256).exists()

    def stored_before(self, when: datetime) -> Iterator[str]:
        limit = when.timestamp()
        for path in self.root.glob("??/*.warc.gz"):
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime < limit:
                    yield path.name.removesuffix(".warc.gz")

    def delete(self, sha256: str) -> None:
        self._path(sha256).unlink(missing_ok=True)


class GridFSArchive:
    """WARC files in MongoDB GridFS (bucket ``archive``), each under its SHA-256."""

    def __init__(self, db: object) -> None:
        import gridfs

        self._fs = gridfs.GridFS(db, collection=BUCKET)

    def put(self, data: bytes) -> str:
        import gridfs.errors

        sha256 = sha256_hex(data)
        if not self._fs.exists(sha256):
            # another process may store the same exchange first
            with contextlib.suppress(gridfs.errors.FileExists):
                self._fs.put(data, _id=sha256, filename=f"{sha256}.warc.gz")
        return sha256

    def get(self, sha256: str) -> bytes:
        import gridfs.errors

        try:
            return self._fs.get(_checked(sha256)).read()
        except gridfs.errors.NoFile:
            raise ArchiveError(f"no WARC file {sha256} in GridFS") from None

    def has(self, sha256: str) -> bool:
        return bool(self._fs.exists(_checked(sha256)))

    def stored_before(self, when: datetime) -> Iterator[str]:
        for grid_out in self._fs.find({"uploadDate": {"$lt": when}}):
            yield str(grid_out._id)

    def delete(self, sha256: str) -> None:
        self._fs.delete(_checked(sha256))


def open_archive(spec: str, db: object) -> Archive | None:
    """The archive a deployment's ``FPTRACK_ARCHIVE`` names: ``gridfs`` (GridFS in its
    MongoDB database ``db``), ``none``, or the absolute path of a folder."""
    if spec_error(spec):
        raise ArchiveError(spec_error(spec))
    if spec == "gridfs":
        return GridFSArchive(db)
    return None if spec == "none" else DirectoryArchive(Path(spec))


def bundle(archive: Archive, sha256s: Sequence[str], out: BinaryIO) -> None:
    """The WARC files ``sha256s`` of ``archive`` written one after the other to ``out``:
    gzipped WARC files concatenate into one WARC file."""
    for sha256 in sha256s:
        out.write(archive.get(sha256))


def prune(archive: Archive, kept: Callable[[], Collection[str]], before: datetime) -> int:
    """Delete the files of ``archive`` stored before ``before`` whose SHA-256 is not among
    ``kept()`` (those a page or a match refers to, asked for after the files are listed);
    how many were deleted.

    ``before`` leaves alone the files a crawl has just stored and not yet referred to."""
    listed = list(archive.stored_before(before))
    refs = kept()
    unused = [sha256 for sha256 in listed if sha256 not in refs]
    for sha256 in unused:
        archive.delete(sha256)
    return len(unused)

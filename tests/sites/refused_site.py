"""The refused site of the hostile benchmark's ``refused-named`` case and of the scan tests:
downloads a crawl must refuse (a zip bomb, a ZIP of 5,001 members, ZIPs nested three deep, a
member failing its CRC-32) and a page its robots.txt forbids, beside a page copying a text.
"""

from __future__ import annotations

import io
import zipfile

from tests.servers.fixture_site import Resource, page

BOMB_BYTES = 1 << 30
COPY_PAGE = "/copy.html"
FORBIDDEN_PAGE = "/ev/secret.html"
REFUSED = {
    "/down/bomb.zip": ("download_refused", "a zip bomb"),
    "/down/members.zip": ("download_refused", "more than 5,000 members"),
    "/down/nested.zip": ("download_refused", "nested more than 2 deep"),
    "/down/crc.zip": ("download_refused", "Bad CRC-32"),
    FORBIDDEN_PAGE: ("robots", "robots.txt forbids"),
}
"""Path -> the reason it is not crawled for, and words its why must hold."""


def zip_of(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A ZIP archive of ``files`` (name -> data), made by :mod:`zipfile`."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


def zip_bomb(size: int = BOMB_BYTES) -> bytes:
    """A ZIP of one text member of ``size`` zero bytes (deflated: about 1,000 to 1)."""
    out = io.BytesIO()
    block = bytes(1 << 20)
    with (
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive,
        archive.open("bomb.txt", "w", force_zip64=True) as member,
    ):
        for _ in range(size // len(block)):
            member.write(block)
    return out.getvalue()


def bad_crc_zip(text: str) -> bytes:
    """A ZIP of one stored text member with a byte of its data changed: its CRC-32 fails."""
    name = "1.txt"
    body = bytearray(zip_of({name: text.encode()}, zipfile.ZIP_STORED))
    at = 30 + len(name) + 10  # in the member's data, after its local header
    body[at] ^= 0xFF
    return bytes(body)


def refused_site(text: str, bomb_bytes: int = BOMB_BYTES) -> dict[str, Resource]:
    """The site of ``refused-named``: ``/`` links a copy of ``text`` and every path of
    :data:`REFUSED` (the zip bomb unpacking to ``bomb_bytes``); robots.txt forbids
    :data:`FORBIDDEN_PAGE` (a copy too)."""
    zipped = "application/zip"
    chapter = "".join(f"<p>{line}</p>" for line in text.splitlines() if line.strip())
    links = "".join(f'<a href="{path}">{path}</a> ' for path in [COPY_PAGE, *REFUSED])
    nested = zip_of({"a.zip": zip_of({"b.zip": zip_of({"c.txt": text.encode()})})})
    return {
        "/robots.txt": (
            200,
            {"Content-Type": "text/plain"},
            f"User-agent: *\nDisallow: {FORBIDDEN_PAGE}\n".encode(),
        ),
        "/": page(f"<html><body><h1>全本下载</h1>{links}</body></html>"),
        COPY_PAGE: page(f"<html><body><h1>第一章</h1><div>{chapter}</div></body></html>"),
        FORBIDDEN_PAGE: page(f"<html><body><div>{chapter}</div></body></html>"),
        "/down/bomb.zip": (200, {"Content-Type": zipped}, zip_bomb(bomb_bytes)),
        "/down/members.zip": (
            200,
            {"Content-Type": zipped},
            zip_of({f"{n}.txt": b"x" for n in range(5_001)}),
        ),
        "/down/nested.zip": (200, {"Content-Type": zipped}, nested),
        "/down/crc.zip": (200, {"Content-Type": zipped}, bad_crc_zip(text)),
    }

"""Whole-book downloads (:mod:`crawler.downloads`): archives made by the libraries' own
writers (zipfile, ebooklib, py7zr), read in reading order within bounds; bombs and other
archives past a bound refused with the reason; and a real scan of a site that offers its
book as TXT, ZIP, EPUB and 7z downloads (one under a lying name), each matched to the work."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import py7zr
import pytest
from ebooklib import epub

from admin.cli import main
from crawler.downloads import (
    MAX_MEMBERS,
    MAX_NESTING,
    Book,
    Chapter,
    DownloadRefused,
    book_parts,
    kind_of,
    read_book,
)
from crawler.run import crawl_in_process
from matcher.sites.site_config import SiteConfig
from tests.servers.fixture_site import FixtureSite, Resource, page
from tests.sites.refused_site import zip_of
from tests.support.crawl import RecordingIngest

WORKS = Path(__file__).resolve().parents[2] / "samples" / "works"
CHAPTERS = ["lighthouse.txt", "river-town.txt", "tea-history.txt", "star-voyage.txt"]
"""The sample book: four chapters, each one of the sample works' text."""


def chapters() -> list[tuple[str, str]]:
    return [
        (f"第{n}章 {name.split('.')[0]}", (WORKS / name).read_text(encoding="utf-8").strip())
        for n, name in enumerate(CHAPTERS, 1)
    ]


def whole_text() -> str:
    return "\n".join(f"{title}\n{text}" for title, text in chapters())


def book_downloads(archive: str, archive_type: str, text_type: str) -> dict[str, Resource]:
    """A site's downloads of the book: the chapters zipped at ``archive``, the whole text in
    GBK at ``/down/full.txt`` and a zip bomb at ``/down/bomb.zip``, with those types."""
    return {
        archive: (200, {"Content-Type": archive_type}, zip_of(chapter_files())),
        "/down/full.txt": (
            200,
            {"Content-Type": text_type},
            ("四季杂记\n" + whole_text()).encode("gbk"),
        ),
        "/down/bomb.zip": (
            200,
            {"Content-Type": "application/zip"},
            zip_of({"b.txt": bytes(20 << 20)}),
        ),
    }


def seven_zip_of(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with py7zr.SevenZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(data, name)
    return out.getvalue()


def epub_of(tmp_path: Path, remote: str) -> bytes:
    """The sample book as an EPUB: a script and a remote image in every chapter, its spine
    in chapter order though its files are named in another."""
    book = epub.EpubBook()
    book.set_identifier("fptrack-test-book")
    book.set_title("四季杂记")
    book.set_language("zh")
    items = []
    for n, (title, text) in enumerate(chapters(), 1):
        item = epub.EpubHtml(title=title, file_name=f"z{5 - n}.xhtml", lang="zh")
        paragraphs = "".join(f"<p>{line}</p>" for line in text.split("\n") if line.strip())
        item.content = (
            f"<html><head><title>{title}</title><script>document.write('脚本里的字')</script>"
            f"</head><body><h1>{title}</h1><img src='{remote}/tracker{n}.png'/>{paragraphs}"
            "</body></html>"
        )
        book.add_item(item)
        items.append(item)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    path = tmp_path / "book.epub"
    epub.write_epub(str(path), book)
    return path.read_bytes()


def chapter_files(encoding: str = "gbk") -> dict[str, bytes]:
    """One text file per chapter, named so that name order is not chapter order
    (``10`` before ``2``)."""
    names = ["1.txt", "2.txt", "3.txt", "10.txt"]
    return {
        f"book/{name}": f"{title}\n{text}".encode(encoding)
        for name, (title, text) in zip(names, chapters(), strict=True)
    }


def test_a_zip_of_gbk_chapters_is_read_in_natural_order() -> None:
    book = read_book(zip_of(chapter_files()))
    assert book.kind == "zip"
    assert [c.title for c in book.chapters] == [title for title, _ in chapters()]
    assert [c.text for c in book.chapters] == [text for _, text in chapters()]


def test_an_epub_is_read_in_spine_order_without_its_scripts_and_fetches_nothing(
    tmp_path: Path,
) -> None:
    with FixtureSite({"/": page("<p>远程资源</p>")}) as remote:
        body = epub_of(tmp_path, remote.url("").rstrip("/"))
        book = read_book(body)
        assert remote.requested() == []
    assert kind_of(body) == "epub" and book.title == "四季杂记"
    texts = [c.text for c in book.chapters]
    assert len(texts) == len(CHAPTERS)
    for (title, text), chapter in zip(chapters(), book.chapters, strict=True):
        assert title in chapter.text or chapter.title == title
        last = text.split("\n")[-1]  # (HTML text comes with its spaces normalised)
        assert " ".join(last.split()) in " ".join(chapter.text.split())
    assert not any("脚本里的字" in t for t in texts)


def test_a_7z_archive_and_a_zip_inside_a_zip_are_read() -> None:
    book = read_book(seven_zip_of(chapter_files("utf-8")))
    assert book.kind == "7z" and [c.title for c in book.chapters] == [t for t, _ in chapters()]
    nested = zip_of({"inner.zip": zip_of(chapter_files()), "readme.jpg": b"\xff\xd8"})
    assert [c.title for c in read_book(nested).chapters] == [t for t, _ in chapters()]


def test_one_text_member_is_cut_at_its_chapter_headings_and_grouped_in_parts() -> None:
    book = read_book(zip_of({"全本.txt": ("四季杂记\n" + whole_text()).encode("gb18030")}))
    assert [c.title for c in book.chapters] == ["", *(t for t, _ in chapters())]
    longest = max(len(text) for _, text in chapters())
    parts = book_parts(book, longest + 20)
    assert len(parts) >= len(CHAPTERS)
    assert all(len(p.text) <= longest + 20 for p in parts)
    joined = "\n".join(p.text for p in parts)
    for title, text in chapters():
        assert title in joined and text in joined
    # a chapter longer than a part is cut at its line ends
    cut = book_parts(Book("txt", "", (Chapter("第1章", "甲" * 50 + "\n" + "乙" * 50),)), 60)
    assert [(p.title, p.text) for p in cut] == [
        ("第1章", "第1章\n" + "甲" * 50),
        ("第1章", "第1章\n" + "乙" * 50),
    ]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (zip_of({"bomb.txt": b"\x00" * (20 * 1024 * 1024)}), "a zip bomb"),
        (zip_of({f"{n}.txt": b"x" for n in range(MAX_MEMBERS + 1)}), "more than 5,000 members"),
        (
            zip_of({"a.zip": zip_of({"b.zip": zip_of({"c.txt": "正文".encode()})})}),
            f"nested more than {MAX_NESTING} deep",
        ),
        (zip_of({"../../etc/passwd.txt": "第一章".encode(), "/abs.txt": b"x"}), "no text in it"),
        (b"PK\x03\x04" + b"\x00" * 60, "not a readable ZIP archive"),
        (b"7z\xbc\xaf\x27\x1c" + b"\x00" * 60, "not a readable 7z archive"),
        (b"<html><body>not an archive</body></html>", "not a ZIP, EPUB or 7z archive"),
    ],
    ids=["bomb", "members", "nesting", "climbing-names", "damaged-zip", "damaged-7z", "html"],
)
def test_an_archive_past_a_bound_is_refused_with_the_reason(body: bytes, reason: str) -> None:
    with pytest.raises(DownloadRefused, match=reason) as refused:
        read_book(body)
    assert "\n" not in str(refused.value)


def test_a_scan_matches_every_download_of_the_book(tmp_path: Path, capsys, caplog) -> None:
    """A site offering its book in every form: 全本下载 as TXT (GBK, long enough to be read
    in parts), a ZIP of chapter files, an EPUB, a 7z archive, and a ZIP served under a
    ``.txt`` name; and a bomb. Each download is matched to the work; the bomb is not read."""
    works = tmp_path / "works"
    works.mkdir()
    (works / "book.txt").write_text(whole_text(), encoding="utf-8")
    site = tmp_path / "site"
    (site / "down").mkdir(parents=True)
    links = {
        "TXT下载": "down/book-full.txt",
        "ZIP下载": "down/book.zip",
        "EPUB下载": "down/book.epub",
        "7z下载": "down/book.7z",
        "全本下载": "down/mirror.txt",
        "备用下载": "down/bomb.zip",
    }
    index = "".join(f'<p><a href="{href}">{label}</a></p>' for label, href in links.items())
    (site / "index.html").write_text(
        f"<html><head><title>四季杂记</title></head><body>{index}</body></html>",
        encoding="utf-8",
    )
    (site / "down" / "book-full.txt").write_bytes(("四季杂记\n" + whole_text()).encode("gbk"))
    (site / "down" / "book.zip").write_bytes(zip_of(chapter_files()))
    (site / "down" / "book.epub").write_bytes(epub_of(tmp_path, "http://127.0.0.1:9"))
    (site / "down" / "book.7z").write_bytes(seven_zip_of(chapter_files("utf-8")))
    (site / "down" / "mirror.txt").write_bytes(zip_of(chapter_files()))  # a lying name
    (site / "down" / "bomb.zip").write_bytes(zip_of({"b.txt": b"\x00" * (20 * 1024 * 1024)}))
    out = tmp_path / "scan.json"
    status = main(["scan", "--works", str(works), "--site-dir", str(site), "--json", str(out)])
    err = capsys.readouterr().err
    assert status == 0, err
    result = json.loads(out.read_text(encoding="utf-8"))
    matched = {m["url"].split("/down/", 1)[-1] for m in result["matches"] if "/down/" in m["url"]}
    assert {"book.zip", "book.epub", "book.7z", "mirror.txt"} <= matched
    assert any(u.startswith("book-full.txt") for u in matched)
    assert not any(u.startswith("bomb.zip") for u in matched)
    assert {m["work"] for m in result["matches"]} == {"book.txt"}
    [not_read] = result["not_crawled"].values()
    assert not_read == {"download_refused": 1}
    assert "not crawled: 1 download_refused" in err
    [why] = [r.getMessage() for r in caplog.records if "not read" in r.getMessage()]
    assert "/down/bomb.zip not read: member 'b.txt' unpacks" in why and "a zip bomb" in why


def test_a_long_download_is_stored_as_one_page_per_part(
    ingest: RecordingIngest, test_overrides: dict[str, Any]
) -> None:
    """A download longer than ``FPTRACK_DOWNLOAD_PART_CHARS`` is one page per part: the
    first under the download's URL, the next under ``#part2`` ...; each within the limit,
    together the whole book. A plain-text download the same; a bomb is refused, counted."""
    limit = max(len(text) for _, text in chapters()) + 100
    index = (
        '<p><a href="/down/book.zip">ZIP下载</a> <a href="/down/full.txt">TXT下载</a>'
        ' <a href="/down/bomb.zip">备用下载</a></p>'
    )
    resources = {
        "/": page(f"<html><body>{index}</body></html>"),
        **book_downloads("/down/book.zip", "application/octet-stream", "text/plain"),
    }
    with FixtureSite(resources) as site:
        config = SiteConfig.from_dict({"name": "books", "start_urls": [site.url("/")]})
        overrides = {**test_overrides, "FPTRACK_DOWNLOAD_PART_CHARS": limit}
        stats = crawl_in_process([config], overrides, timeout=60)["books"]
    pages = ingest.by_url()
    for path in ("/down/book.zip", "/down/full.txt"):
        base = site.url(path)
        urls = sorted((u for u in pages if u.startswith(base)), key=len)
        assert len(urls) >= len(CHAPTERS), urls
        assert urls == [base] + [f"{base}#part{n}" for n in range(2, len(urls) + 1)]
        texts = [pages[u]["text"] for u in urls]
        assert all(len(t) <= limit for t in texts)
        joined = "\n".join(texts)
        for title, text in chapters():
            assert title in joined and text in joined
        # the parts of one download are one exchange, archived once
        assert len({repr(pages[u]["exchange"]) for u in urls}) == 1
    assert stats["fptrack/download_refused"] == 1
    assert stats["fptrack/download_parts"] == len(pages) - 2
    assert site.url("/down/bomb.zip") not in pages


def test_a_download_fetched_outside_a_crawl_is_read_as_the_crawl_reads_it() -> None:
    """What a takedown's recheck of a download's URL reads (:func:`crawler.one_page.
    fetch_page`): the whole book, every chapter, from an archive whatever its name, and
    all of a plain text; a bomb answers why it was not read."""
    from crawler.one_page import fetch_page
    from matcher.outbound import Policy

    policy = Policy(10.0, 10 << 20, allow_private=True)
    resources = book_downloads("/down/book.txt", "application/zip", "text/plain; charset=gbk")
    with FixtureSite(resources) as site:
        book = fetch_page(site.url("/down/book.txt"), policy)
        full = fetch_page(site.url("/down/full.txt"), policy)
        bomb = fetch_page(site.url("/down/bomb.zip"), policy)
    for fetched in (book, full):
        assert fetched.status == 200 and fetched.error == ""
        for title, text in chapters():
            assert text in fetched.text, title
    assert bomb.text == "" and "download not read" in bomb.error and "zip bomb" in bomb.error

"""Reader processes: a page read in another process, a reader that overruns or dies replaced
and the page read the quick way instead, never lost."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from crawler import reader_pool
from crawler.reader_pool import BIG_PAGE_BYTES, FAILED, TIMEOUT, ReaderPool
from crawler.reading import ReadJob, read_page

CHAPTER = "雨夜渡口，老船夫把灯挂在桅杆上，等待最后一位客人。江面上的雾越来越浓。" * 12


def job(body: str, **kw: Any) -> ReadJob:
    return ReadJob(body.encode("gbk"), "text/html", "http://novels.test/b/1.html", **kw)


def chapter(extra: str = "") -> str:
    return (
        "<html><head><title>第一章</title></head><body><div class='nav'><a href='/'>首页</a>"
        f"</div><div id='c'><p>{CHAPTER}</p></div><a href='2.html'>下一页</a>{extra}</body></html>"
    )


@pytest.fixture
def pool() -> ReaderPool:
    readers = ReaderPool(1)
    yield readers
    readers.close()


def test_a_page_is_read_in_a_reader_process_as_in_this_one(pool: ReaderPool) -> None:
    wanted = job(chapter(), next_page_texts=("下一页",), max_links=10)
    reading, problem = pool.read(wanted, 30)
    assert problem == "" and reading == read_page(wanted)
    assert reading.encoding == "gb18030" and reading.method == "trafilatura"
    assert reading.next_url == "http://novels.test/b/2.html"
    assert reading.links == ("http://novels.test/", "http://novels.test/b/2.html")
    assert pool.submit(wanted, 30).result(30) == (reading, "")


def test_a_reader_over_its_time_is_replaced_and_the_page_read_the_quick_way(
    pool: ReaderPool,
) -> None:
    slow = job(chapter("<div><p>·</p></div>" * 20000))
    reading, problem = pool.read(slow, 0.05)
    assert problem == TIMEOUT and reading.method == "densest"
    assert CHAPTER in reading.text
    reading, problem = pool.read(job(chapter()), 30)  # a new reader takes the next page
    assert problem == "" and reading.method == "trafilatura"


def test_a_reader_that_dies_mid_page_is_replaced(pool: ReaderPool) -> None:
    pool.read(job(chapter()), 30)  # the reader is running
    reader = pool._readers[0]
    proc = reader._proc
    assert proc is not None
    killer = threading.Timer(0.2, proc.kill)
    killer.start()
    reading, problem = pool.read(job(chapter("<div><p>·</p></div>" * 20000)), 60)
    killer.join()
    # FAILED, not TIMEOUT: the death was noticed, not the page's 60 s waited out.
    assert problem == FAILED and CHAPTER in reading.text
    assert pool.read(job(chapter()), 30)[1] == ""
    assert reader._proc is not None and reader._proc.pid != proc.pid


def big_chapter() -> ReadJob:
    """A chapter in more than :data:`BIG_PAGE_BYTES` of paragraphs: a second or more to read."""
    filler = "<div><p>·</p></div>" * (BIG_PAGE_BYTES // 20 + 20_000)
    return job(chapter(filler))


def test_a_big_page_whose_reader_dies_is_read_by_another_reader_not_by_the_crawl(
    pool: ReaderPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big page's reader killed mid-page: the page is read the quick way by a reader
    started afresh, never in the crawl's own process (reading it there costs the crawl the
    page's memory for good)."""
    pool.read(job(chapter()), 30)  # the reader is running
    proc = pool._readers[0]._proc
    assert proc is not None

    def in_this_process(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a big page read in the crawl's process")

    monkeypatch.setattr(reader_pool, "read_page", in_this_process)
    killer = threading.Timer(0.3, proc.kill)
    killer.start()
    reading, problem = pool.read(big_chapter(), 60)
    killer.join()
    assert problem == FAILED and reading.method == "densest" and CHAPTER in reading.text
    assert pool._readers[0]._proc is not None and pool._readers[0]._proc.pid != proc.pid


def test_a_big_page_no_reader_reads_in_time_is_given_up_with_the_reason(
    pool: ReaderPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither the full reading nor the quick one within their time: the big page is given
    up, the reason said, and not read in the crawl's process."""
    monkeypatch.setattr(reader_pool, "read_page", lambda *a, **kw: pytest.fail("read here"))
    reading, problem = pool.read(big_chapter(), 0.01)
    assert problem == TIMEOUT and reading.text == ""
    assert "no reading within 0.01 s" in reading.undecodable
    assert "not read the quick way either" in reading.undecodable


def test_undecodable_bodies_are_named() -> None:
    png = ReadJob(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, "text/html", "http://x/")
    assert read_page(png).undecodable

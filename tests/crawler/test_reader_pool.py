"""Reader processes: a page read in another process, a reader that overruns or dies replaced
and the page read the quick way instead, never lost."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from crawler.reader_pool import FAILED, TIMEOUT, ReaderPool
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


def test_undecodable_bodies_are_named() -> None:
    png = ReadJob(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, "text/html", "http://x/")
    assert read_page(png).undecodable

"""The HTML report's parts: what is marked as copied, page labels, times, the policy."""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import UTC, datetime

from admin.report import html_report as report_html
from admin.report.html_report import passage, render, served_folders, when

WORK = (
    "第一章\n\n　　鹰嘴岛离大陆有四十多海里，岛上没有树。\n\n"
    "　　每天傍晚，太阳刚刚挨着海平线，他就拎着工具箱上塔。\n"
)
PAGE = (
    "书海阁 首页\n鹰嘴岛离大陆有四十多海里，岛上没有树。\n"
    "请访问 www.shuhaige-example.com 阅读最新章节\n"
    "每天傍晚，太阳刚刚挨着海平线，他就拎着工具箱上塔。\n京ICP备00000000号"
)


def span(text: str, first: str, last: str) -> tuple[int, int]:
    return text.index(first), text.index(last) + len(last)


def test_copied_lines_are_marked_and_ad_lines_inside_a_passage_are_not() -> None:
    c, d = span(PAGE, "鹰嘴岛", "上塔。")
    a, b = span(WORK, "鹰嘴岛", "上塔。")
    shown = passage(PAGE, c, d, WORK[a:b])
    paragraphs = re.findall(r"<p>(.*?)</p>", shown)
    assert "<mark>鹰嘴岛离大陆有四十多海里，岛上没有树。</mark>" in paragraphs
    assert "请访问 www.shuhaige-example.com 阅读最新章节" in paragraphs  # inside, unmarked
    assert any(p.startswith("<mark>每天傍晚") for p in paragraphs)
    assert "书海阁 首页" in paragraphs  # context, unmarked


def test_both_sides_have_the_same_paragraph_layout() -> None:
    """Blank lines and full-width indentation of the work do not show: one line, one <p>."""
    a, b = span(WORK, "鹰嘴岛", "上塔。")
    c, d = span(PAGE, "鹰嘴岛", "上塔。")
    work_side = re.findall(r"<p>(.*?)</p>", passage(WORK, a, b, PAGE[c:d]))
    page_side = re.findall(r"<p>(.*?)</p>", passage(PAGE, c, d, WORK[a:b]))
    marked = [p for p in work_side if "<mark>" in p]
    assert marked == [p for p in page_side if "<mark>" in p]
    assert all(p.strip() and not p.startswith(("\u3000", " ")) for p in work_side)


def test_traditional_script_copies_are_marked() -> None:
    work = "茶叶的历史很长，从神农尝百草说起。"
    page = "茶葉的歷史很長，從神農嘗百草說起。"
    assert "<mark>" in passage(page, 0, len(page), work)


def test_pages_of_a_served_folder_are_file_paths_and_other_pages_links() -> None:
    label = served_folders({"http://127.0.0.1:40001/": "samples/site"})
    assert label("http://127.0.0.1:40001/book/1.html") == ("samples/site/book/1.html", None)
    assert label("https://pirate.example/1") == ("https://pirate.example/1",) * 2
    assert label("javascript:alert(1)") == ("javascript:alert(1)", None)


def test_times_carry_their_zone() -> None:
    assert when(datetime(2026, 11, 24, 9, 30, tzinfo=UTC)) == "2026-11-24 09:30:00 UTC"
    assert when(datetime(2026, 11, 24, 9, 30)) == "2026-11-24 09:30:00 UTC"  # stored UTC


def test_hostile_text_is_escaped_and_only_the_sorting_script_may_run() -> None:
    match = {
        "site": "<b>s</b>",
        "url": "javascript:alert(1)",
        "work_title": "<script>alert(2)</script>",
        "score": 1.0,
        "containment_work": 1.0,
        "evidence": [{"work_span": [0, 5], "page_span": [0, 5], "text": "x"}],
    }
    page = render([match], lambda m: ("<img src=x onerror=alert(3)>", "<img src=x>"))
    assert "<script>alert" not in page and "<img" not in page and "href='javascript" not in page
    digest = base64.b64encode(hashlib.sha256(report_html.SORT_SCRIPT.encode()).digest())
    assert f"script-src 'sha256-{digest.decode()}'" in page and "default-src 'none'" in page


def test_a_site_is_named_by_the_url_it_was_crawled_from() -> None:
    """``fptrack scan``'s sites are named ``scanN-host-port`` in the store; the report names
    each by the URL scanned (linked), escaped, and a site it was not given by its name."""
    matches = [
        {"site": "scan1-pirate.example", "url": "https://pirate.example/1.html",
         "work_title": "w", "score": 0.9, "containment_work": 0.9, "evidence": []},
        {"site": "other", "url": "https://other.example/2.html",
         "work_title": "w", "score": 0.8, "containment_work": 0.8, "evidence": []},
    ]  # fmt: skip
    urls = {"scan1-pirate.example": "https://pirate.example/?q=<b>"}
    page = render(matches, lambda m: ("", ""), site_urls=urls)
    by_site = page.split("id='by-site'")[1].split("</table>")[0]
    assert "scan1-pirate.example" not in page
    assert "href='https://pirate.example/?q=&lt;b&gt;'" in by_site
    assert ">https://pirate.example/?q=&lt;b&gt;</a>" in by_site and "<b>" not in by_site
    assert "<td>other</td>" in by_site
    table = page.split("id='match-table'")[1].split("</table>")[0]
    assert table.count(">https://pirate.example/?q=&lt;b&gt;</a>") == 1


def test_a_match_names_the_other_editions_that_explain_its_page() -> None:
    """A match of one edition among several: the report's facts name the siblings (titles
    and sources escaped), a tie marked; the CSV row names them too, the tied apart."""
    from admin.report import row

    siblings = [
        {"work_title": "<i>初版</i>", "work_source": "a.txt", "tie": True},
        {"work_title": "青禾版", "work_source": "c.txt", "tie": False},
    ]
    match = {
        "site": "s", "url": "https://p.example/1", "work_title": "修订版", "score": 1.0,
        "containment_work": 1.0, "evidence": [], "siblings": siblings,
    }  # fmt: skip
    page = render([match], lambda m: ("", ""))
    facts = page.split("other editions that explain the page</th><td>")[1].split("</td>")[0]
    assert facts == "&lt;i&gt;初版&lt;/i&gt; (a.txt) <b>tie</b>, 青禾版 (c.txt)"
    assert (row(match)["siblings"], row(match)["tied"]) == ("<i>初版</i>; 青禾版", "<i>初版</i>")
    alone = render([{**match, "siblings": []}], lambda m: ("", ""))
    assert "other editions" not in alone and row({**match, "siblings": []})["siblings"] == ""

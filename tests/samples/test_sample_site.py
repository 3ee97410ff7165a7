"""The sample pirate site of ``samples/site/``: up to date, decodable, reachable, edited as told.

The generator ``samples/make_site.py`` is loaded from its file (``samples`` is not a
package). Each test checks the committed pages themselves, so a hand edit of the site or a
drifted generator fails here.
"""

from __future__ import annotations

import difflib
import html
import importlib.util
import re
import sys
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType
from urllib.robotparser import RobotFileParser

import opencc
import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
SITE = SAMPLES / "site"
WORKS = SAMPLES / "works"
PAGES = sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html"))
_CHARSET = re.compile(rb"""<meta[^>]*charset=["']?([\w-]+)""", re.IGNORECASE)


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_site", SAMPLES / "make_site.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being built
    spec.loader.exec_module(module)
    return module


make_site = _load_generator()


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append((self._href, "".join(self._text).strip()))
            self._href = None


def declared_charset(data: bytes) -> str:
    match = _CHARSET.search(data)
    assert match, "no <meta charset>"
    return match.group(1).decode("ascii")


def page_html(path: str) -> str:
    data = (SITE / path).read_bytes()
    return data.decode(declared_charset(data))


def links(path: str) -> list[tuple[str, str]]:
    """(site-relative target, link text) of every ``<a href>`` on a page."""
    parser = _Links()
    parser.feed(page_html(path))
    base = Path(path).parent
    return [(normalise((base / href).as_posix()), text) for href, text in parser.links]


def normalise(path: str) -> str:
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def text_lines(fragment: str) -> list[str]:
    """Visible lines of an HTML fragment: ``<br>`` and paragraph tags break, others vanish."""
    fragment = re.sub(r"(?is)<(script|style)\b.*?</\1>", "", fragment)
    fragment = re.sub(r"(?i)<br\s*/?>|</?p\b[^>]*>|</?div\b[^>]*>|</?h\d>", "\n", fragment)
    fragment = html.unescape(re.sub(r"<[^>]+>", "", fragment))
    return [line.strip() for line in fragment.splitlines() if line.strip()]


def content(path: str) -> list[str]:
    """The lines of a chapter page's ``<div id="content">``."""
    page = page_html(path)
    start = page.index('<div id="content">')
    return text_lines(page[start + len('<div id="content">') : page.index("</div>", start)])


def heading(path: str) -> str:
    return html.unescape(re.search(r"<h1>(.*?)</h1>", page_html(path)).group(1))


def work(name: str) -> list[str]:
    """Title and paragraphs of a work."""
    text = (WORKS / name).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def grams(text: str, n: int = 10) -> set[str]:
    chars = "".join(ch for ch in text if ch.isalnum())
    return {chars[i : i + n] for i in range(len(chars) - n + 1)}


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    make_site.build_site(out)
    return out


def test_committed_site_equals_a_fresh_build(fresh: Path) -> None:
    def tree(root: Path) -> dict[str, bytes]:
        files = (p for p in root.rglob("*") if p.is_file())
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in files}

    built, committed = tree(fresh), tree(SITE)
    assert sorted(built) == sorted(committed)
    stale = [path for path in built if built[path] != committed[path]]
    assert not stale, f"run `python samples/make_site.py`: {stale} differ"


@pytest.mark.parametrize("path", PAGES)
def test_page_decodes_with_its_declared_charset(path: str) -> None:
    data = (SITE / path).read_bytes()
    charset = declared_charset(data)
    text = data.decode(charset)  # strict
    assert "书海阁" in text or "書海閣" in text
    if charset != "utf-8":
        with pytest.raises(UnicodeDecodeError):
            data.decode("utf-8")


def test_charsets_are_the_ones_asked_for() -> None:
    charsets = {path: declared_charset((SITE / path).read_bytes()) for path in PAGES}
    assert charsets.pop("tw/book/1023/1.html") == "big5"
    assert charsets.pop("book/1025/1.html") == "gbk"
    assert set(charsets.values()) == {"utf-8"}


def test_every_page_is_within_three_clicks_of_the_index() -> None:
    clicks = {"index.html": 0}
    queue = deque(["index.html"])
    while queue:
        path = queue.popleft()
        for target, _ in links(path):
            assert (SITE / target).is_file(), f"{path} links to missing {target}"
            if target not in clicks:
                clicks[target] = clicks[path] + 1
                queue.append(target)
    assert sorted(clicks) == PAGES
    assert max(clicks.values()) <= 3


def test_robots_txt_allows_everything() -> None:
    robots = RobotFileParser()
    robots.parse((SITE / "robots.txt").read_text(encoding="ascii").splitlines())
    assert all(robots.can_fetch("*", f"http://127.0.0.1:8000/{path}") for path in PAGES)


def test_ground_truth_table_lists_every_file() -> None:
    readme = (SITE / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([^`]+)` \|", readme, re.MULTILINE)
    files = sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*") if p.is_file())
    assert sorted([*rows, "README.md"]) == files
    assert len(rows) == len(set(rows))


def test_exact_copy() -> None:
    lighthouse = work("lighthouse.txt")
    assert heading("book/1021/1.html") == lighthouse[0]
    assert content("book/1021/1.html") == lighthouse[1:]


def test_homophone_page_keeps_pinyin_initials() -> None:
    pypinyin = pytest.importorskip("pypinyin")

    def initials(text: str) -> list[str]:
        return pypinyin.lazy_pinyin(text, style=pypinyin.Style.FIRST_LETTER, errors=list)

    original, edited = work("river-town.txt")[1:], content("book/1022/1.html")
    assert heading("book/1022/1.html") == work("river-town.txt")[0]
    assert [len(p) for p in edited] == [len(p) for p in original]
    changed = 0
    for before, after in zip(original, edited, strict=True):
        assert initials(before) == initials(after)
        for old, new in zip(before, after, strict=True):
            if old != new:
                changed += 1
                # 的, 地 and 得 all read "de" as particles; pypinyin reads 地 alone as "di".
                same = pypinyin.lazy_pinyin(old) == pypinyin.lazy_pinyin(new)
                assert same or {old, new} <= {"的", "地", "得"}, (old, new)
    assert 0.05 <= changed / sum(map(len, original)) <= 0.12


def test_traditional_page_converts_back() -> None:
    original = work("tea-history.txt")
    traditional = content("tw/book/1023/1.html")
    assert len(traditional) == len(original) - 1
    joined = "\n".join(traditional)
    unchanged = sum(a == b for a, b in zip(joined, "\n".join(original[1:]), strict=False))
    assert unchanged / len(joined) < 0.85  # genuinely Traditional
    back = opencc.OpenCC("t2s").convert(joined)
    ratio = difflib.SequenceMatcher(None, back, "\n".join(original[1:]), autojunk=False).ratio()
    assert ratio >= 0.98
    assert opencc.OpenCC("t2s").convert(heading("tw/book/1023/1.html")) == original[0]


def test_split_chapter_joins_back_without_its_ads() -> None:
    first, second = "book/1024/9.html", "book/1024/9_2.html"
    next_links = [target for target, text in links(first) if text == "下一页"]
    prev_links = [target for target, text in links(second) if text == "上一页"]
    assert next_links == [second]
    assert prev_links == [first]
    page = page_html(first)
    assert page.index(">下一页</a>") > page.index('<div id="content">')
    one, two = content(first), content(second)
    assert one[-1] == make_site.CONTINUE_LINE
    ads = {*make_site.AD_LINES, make_site.CONTINUE_LINE}
    assert any(line in ads for line in one[:-1]) and any(line in ads for line in two)
    star = work("star-voyage.txt")
    assert [line for line in one + two if line not in ads] == star[1:]
    assert 0.3 <= sum(map(len, [x for x in one if x not in ads])) / sum(map(len, star)) <= 0.7


def test_diary_page_drops_and_shuffles_paragraphs() -> None:
    diary = work("chef-diary.txt")
    body = diary[1:]
    page = content("book/1025/1.html")
    entries = [(body[i], body[i + 1]) for i in range(0, len(body), 2)]
    kept = [(page[i], page[i + 1]) for i in range(0, len(page), 2)]
    assert set(kept) <= set(entries) and len(set(kept)) == len(kept)
    assert 0.25 <= 1 - len(page) / len(body) <= 0.35
    assert kept != sorted(kept, key=entries.index)


def test_news_page_carries_a_middle_excerpt() -> None:
    brewing = work("tea-brewing.txt")
    lines = text_lines(page_html("news/5501.html"))
    quoted = [i for i, p in enumerate(brewing) if p in lines]
    assert quoted == list(range(quoted[0], quoted[-1] + 1)), "a contiguous run"
    assert quoted[0] > 1 and quoted[-1] < len(brewing) - 1, "from the middle"
    share = sum(len(brewing[i]) for i in quoted) / sum(map(len, brewing))
    assert 0.35 <= share <= 0.45
    others = [line for line in lines if line not in brewing]
    assert sum(map(len, others)) >= 400, "surrounded by unrelated text"


def test_two_works_on_one_page() -> None:
    sanguo, lighthouse = work("sanguo-01.txt"), work("lighthouse.txt")
    page = content("book/1026/1.html")
    assert page[: len(sanguo)] == sanguo
    tail = [p for p in lighthouse if p in page]
    assert tail == lighthouse[-len(tail) :]
    assert 0.2 <= sum(map(len, tail)) / sum(map(len, lighthouse)) <= 0.3


def test_unrelated_pages_share_no_text_with_the_works() -> None:
    # Work bodies only: list pages and breadcrumbs name works by their titles.
    works = set().union(*(grams("".join(work(p.name)[1:])) for p in WORKS.glob("*.txt")))
    unrelated = [
        p.path for p in make_site.build_pages() if p.expected in {"not a copy", "no match"}
    ]
    assert len([p for p in unrelated if p.split("/")[0] in {"news", "tech", "travel", "life"}]) >= 6
    for path in unrelated:
        assert not grams("".join(text_lines(page_html(path)))) & works, path
    texts = ("WEATHER", "SPORTS", "TECH", "TRAVEL", "RECIPE", "GARDEN")
    for text in (getattr(make_site, name) for name in texts):
        assert 400 <= len("".join(text.split())) <= 1000


def test_malformed_page_still_carries_its_text() -> None:
    page = page_html("life/6602.html")
    assert page.count("<p>") > page.count("</p>") and "</html>" not in page
    assert "</span>" in page and "<span" not in page
    lines = text_lines(page)
    garden = [line.strip() for line in make_site.GARDEN.splitlines() if line.strip()]
    assert all(paragraph in lines for paragraph in garden)

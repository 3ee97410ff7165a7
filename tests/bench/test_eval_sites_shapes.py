"""The sites of ``bench/eval_sites.py`` have the features the benchmark claims for them.

Built at the quick sizes from synthetic text (no download), then checked from their HTML
alone: links resolve, depths, DocBook/Sphinx navigation and one reading order through the
documentation site, copies at the depth claimed, split chapters and threads whose parts
link each other with 下一页 / 上一页, the two ways novel sites link chapters, works that
share the text they are said to share, and editions made and copied as claimed.
"""

from __future__ import annotations

import posixpath
import re
from collections import deque

import pytest

from tests.sites.edition_shape import DIFFER, GROUP_SIZES, EditionShape, editions_shape, sentences
from tests.sites.english import synthetic_sections
from tests.sites.eval_corpus import synthetic_texts
from tests.sites.site_shapes import (
    QUICK_SIZES,
    Page,
    Shape,
    SiteBuild,
    forward_shapes,
    links,
    reverse_shape,
)
from tests.sites.textconv import han_share

MAX_DEPTH = 6


@pytest.fixture(scope="module")
def shapes() -> dict[str, Shape]:
    texts = synthetic_texts(160)
    built = forward_shapes(texts, synthetic_sections(), QUICK_SIZES, 0)
    built += [reverse_shape(texts, QUICK_SIZES, 0), editions_shape(texts, QUICK_SIZES, 0, True)]
    return {s.name: s for s in built}


def sites(shapes: dict[str, Shape]) -> list[SiteBuild]:
    return [site for shape in shapes.values() for site in shape.sites]


def targets(page: Page) -> list[tuple[str, str]]:
    """(label, site path) of every link of ``page``."""
    base = posixpath.dirname(page.path)
    return [(label, posixpath.normpath(posixpath.join(base, href))) for label, href in
            links(page.html)]  # fmt: skip


def target(page: Page, label: str) -> str | None:
    return next((t for lab, t in targets(page) if lab == label), None)


def depths(site: SiteBuild) -> dict[str, int]:
    """Fewest clicks from index.html to every page it leads to."""
    found = {"index.html": 0}
    queue = deque(["index.html"])
    while queue:
        path = queue.popleft()
        for _, t in targets(site.page(path)):
            if t not in found:
                found[t] = found[path] + 1
                queue.append(t)
    return found


def test_every_link_leads_to_a_page_of_its_site_within_six_clicks(shapes) -> None:
    for site in sites(shapes):
        assert len({p.path for p in site.pages}) == len(site.pages), site.name
        for page in site.pages:
            for label, path in targets(page):
                assert site.page(path), f"{site.name}/{page.path}: {label} -> {path} is missing"
        reached = depths(site)
        assert set(reached) == {p.path for p in site.pages}, site.name
        assert max(reached.values()) <= MAX_DEPTH, site.name


def test_every_doc_page_has_navigation_to_its_neighbours(shapes) -> None:
    (site,) = shapes["docs"].sites
    order = ["index.html"]
    while nxt := target(site.page(order[-1]), "下一页"):
        order.append(nxt)
    assert sorted(order) == sorted(p.path for p in site.pages)  # one reading order, all pages
    for i, path in enumerate(order):
        labels = [label for label, _ in targets(site.page(path))]
        assert "起始页" in labels, path
        if i:
            assert target(site.page(path), "上一页") == order[i - 1], path
            assert "上一级" in labels, path


def test_doc_copies_sit_at_the_depth_claimed_behind_hubs(shapes) -> None:
    (site,) = shapes["docs"].sites
    reached = depths(site)
    copies = [p for p in site.pages if p.works]
    assert copies and all(p.kind == "copy" and p.depth in (3, 4) for p in copies)
    assert {p.depth for p in copies} == {3, 4}
    for page in copies:
        assert reached[page.path] == page.depth, page.path
        hub = target(page, "上一级")
        assert site.page(hub).kind == "hub" and reached[hub] == page.depth - 1
    sections = [re.search(r"<section>(.*)</section>", p.html, re.S) for p in site.pages]
    english = [m for m in sections if m and han_share(m.group(1)) < 0.05]
    assert len(english) >= 5  # the English manual's pages


def test_split_parts_link_each_other_with_next_and_previous_page(shapes) -> None:
    checked = set()
    for site in sites(shapes):
        for page in site.pages:
            if not page.parts or page.parts in checked:
                continue
            checked.add(page.parts)
            for a, b in zip(page.parts, page.parts[1:], strict=False):
                assert target(site.page(a), "下一页") == b, (site.name, a)
                assert target(site.page(b), "上一页") == a, (site.name, b)
            for part in page.parts:  # every part carries the copied text
                assert site.page(part).works == page.works, (site.name, part)
    kinds = {(site.name, len(p.parts)) for site in sites(shapes) for p in site.pages if p.parts}
    assert {("novel-chapters", 2), ("novel-chapters", 3), ("novel-pages", 3)} <= kinds
    assert ("docs", 2) in kinds and ("forum", 2) in kinds


def test_novel_parts_are_marked_and_named_like_the_field(shapes) -> None:
    for site in shapes["novel"].sites:
        split = [p for p in site.pages if p.parts]
        assert split
        for page in split:
            k, n = page.parts.index(page.path) + 1, len(page.parts)
            title = re.search(r"<h1>([^<]*)</h1>", page.html).group(1)
            marker = f"（{k}/{n}）" if site.name == "novel-chapters" else f"第{k}页"
            assert title.endswith(marker), title
            stem = page.parts[0].removesuffix(".html")
            assert page.path == (page.parts[0] if k == 1 else f"{stem}_{k}.html")


def test_novel_sites_link_chapters_with_chapter_or_page_links(shapes) -> None:
    by_name = {s.name: s for s in shapes["novel"].sites}
    for page in by_name["novel-chapters"].pages:
        if page.kind == "chapter" and not page.parts:
            labels = {label for label, _ in targets(page)}
            assert {"上一章", "下一章"} <= labels and "下一页" not in labels, page.path
    for page in by_name["novel-pages"].pages:
        if page.kind == "chapter":
            labels = {label for label, _ in targets(page)}
            assert "上一章" not in labels and labels & {"上一页", "下一页"}, page.path


def test_novel_works_are_a_whole_book_and_separate_chapters(shapes) -> None:
    works = shapes["novel"].works
    whole = works["novel/book-a.txt"]
    chapters_a, chapters_b, _ = QUICK_SIZES.novel_chapters
    assert len(re.findall(r"^第[一二三四五六七八九十百千零]+章 ", whole, re.M)) == chapters_a
    assert len([w for w in works if w.startswith("novel/book-b/")]) == chapters_b
    site = shapes["novel"].sites[0]
    assert {w for p in site.pages for w in p.works} == set(works)


def test_forum_copies_are_posts_among_chatter(shapes) -> None:
    (site,) = shapes["forum"].sites
    copies = [p for p in site.pages if p.works]
    assert copies
    for page in copies:
        assert page.path.startswith("thread-")
        assert page.html.count('class="t_f"') >= 2, page.path  # the copy and other posts
    split = [p for p in copies if p.parts]
    assert {p.path.split("-")[2] for p in split} == {"1", "2"}  # pages 1 and 2 of a thread


def test_related_works_share_the_text_claimed_and_pages_copy_one(shapes) -> None:
    shape = shapes["related"]
    lines = {w: {x for x in t.splitlines() if len(x) >= 20} for w, t in shape.works.items()}
    assert shape.related
    for work, others in shape.related.items():
        for other in others:
            assert lines[work] & lines[other], (work, other)
    (site,) = shape.sites
    for page in site.pages:  # no page copies two works that share text
        assert set(page.works) <= set(shape.works)
        for work in page.works:
            assert not set(shape.related.get(work, ())) & set(page.works), page.path


def test_reverse_novel_is_one_work_in_chapter_pages(shapes) -> None:
    shape = shapes["reverse"]
    ((name, text),) = shape.works.items()
    (site,) = shape.sites
    chapters = [p for p in site.pages if p.works]
    assert len(chapters) == QUICK_SIZES.reverse_chapters
    assert all(p.works == (name,) and not p.parts for p in chapters)
    assert len(re.findall(r"^第\d+章 ", text, re.M)) == QUICK_SIZES.reverse_chapters


def test_editions_differ_as_claimed_and_each_is_copied_three_ways(shapes) -> None:
    """Groups of 2 to 5 editions: each other edition differs from the first as its kind
    says (reworded sentences, dropped paragraphs, another publisher's front matter and
    headings) by a share within DIFFER; every edition is copied whole, by a chapter and by
    an excerpt, each copy page holding text of its edition."""
    shape = shapes["editions"]
    assert isinstance(shape, EditionShape)
    groups: dict[str, list[str]] = {}
    for name, first in shape.group_of.items():
        groups.setdefault(first, []).append(name)
    sizes = sorted(len(g) for g in groups.values())
    assert sizes == sorted(list(GROUP_SIZES) * QUICK_SIZES.edition_groups)
    for first, names in groups.items():
        base = shape.works[first].split("\n")
        for name in names:
            kind, share = shape.made[name]
            lines = shape.works[name].split("\n")
            if name == first:
                assert kind == "first"
                continue
            assert DIFFER[0] <= share <= DIFFER[1]
            assert set(shape.related[name]) == set(names) - {name}
            if kind == "abridged":  # paragraphs dropped, nothing else
                kept = iter(base)
                assert all(any(x == y for y in kept) for x in lines) and len(lines) < len(base)
            elif kind == "revised":  # as many paragraphs, some sentences other
                assert len(lines) == len(base) and lines != base
                old = {s for x in base for s in sentences(x)}
                assert any(s not in old for x in lines for s in sentences(x))
            else:  # another publisher's: its front matter, 第N回 headings
                assert kind == "publisher" and lines[0] != base[0]
                assert any(re.match(r"第.+回 ", x) for x in lines)
                assert not any(re.match(r"第.+章 ", x) for x in lines)
    (site,) = shape.sites
    hows: dict[str, list[str]] = {}
    for path, copy in shape.copies.items():
        page = site.page(path)
        assert page is not None and page.works == (copy.edition,)
        hows.setdefault(copy.edition, []).append(copy.how)
        assert copy.size == len(groups[copy.group])
    assert all(sorted(h) == ["chapter", "excerpt", "whole"] for h in hows.values())
    assert set(hows) == set(shape.works)
    fillers = [p for p in site.pages if p.kind == "document" and not p.works]
    assert len(fillers) == QUICK_SIZES.edition_fillers

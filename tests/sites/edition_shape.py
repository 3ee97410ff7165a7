"""The ``editions`` shape of the site benchmark: catalogues of editions and the pages that
copy them.

Rights holders register several editions of one work, sharing most of their text. Here,
:data:`GROUP_SIZES` groups sizes (``Sizes.edition_groups`` groups of each), each from a novel
drawn from the corpus (:func:`tests.sites.site_text.draw_novel`, ``第N章`` headings). Its first
edition is the novel as drawn; each other is made from it one way, dealt in turn
(:data:`KINDS`), differing from it by a share ``r`` of its text drawn uniformly in
:data:`DIFFER`:

- ``revised``: sentences reworded (each replaced by a sentence of the pool's own text) over
  ``r`` of the characters;
- ``abridged``: paragraphs dropped, ``r`` of the characters;
- ``publisher``: another publisher's: its own front matter (title page, publisher's note),
  chapter headings ``第N回`` with other titles, other punctuation, and sentences reworded
  over ``r / 2`` of the characters.

Every edition is copied on a document-library site (:func:`tests.sites.site_shapes.library_pages`)
three ways: ``whole``, one ``chapter`` (with its heading) and an ``excerpt`` (35% of the
edition, from a line start, inside unrelated text); the copies are edited as pirates edit
(:data:`tests.sites.site_text.EDITS`, dealt in turn: exact, ad lines, Traditional script,
homophones, typos, all combined). Beside them, chapters of unregistered novels
(``Sizes.edition_fillers`` pages). The shape draws from a pool of its own, so the other
shapes are unchanged.

Scoring (:func:`score`, strict): a copy is *found* when the scan reports it with an
edition of its group, *attributed* when the best-scored of those entries is the edition
copied, or names it in ``tied`` (an edition explaining the page as well), and no other way:
an edition with nearly the text of another (a near twin, in the scan's ``duplicates``) is
indexed as any edition, so it is named itself; a *false pair* is an entry of a copy with a
work outside its group, or any entry of an unrelated page. Figures per group size.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.sites.eval_corpus import make_sites
from tests.sites.site_shapes import Shape, SiteBuild, Sizes, library_pages, short_title
from tests.sites.site_text import EDITS, Chapter, Editor, TextPool, chapter_heading, draw_novel

GROUP_SIZES = (2, 3, 4, 5)
KINDS = ("revised", "abridged", "publisher")
DIFFER = (0.001, 0.2)
"""The share of an edition's text that differs from the first edition: 0.1% to 20%."""
COPIES = ("whole", "chapter", "excerpt")
CHAPTER_CHARS = (1500, 3000)
QUICK_CHAPTER_CHARS = (900, 1500)
MATERIAL_PIECE = 3000
PUBLISHERS = ("东方文艺出版社", "长河书局", "青禾出版社", "北辰文化", "南山书社")
_SENTENCE = re.compile(r"[^。！？；!?;]+[。！？；!?;]?")


@dataclass(frozen=True)
class Copy:
    """A page copying one edition: its group (the first edition's name), the group's size,
    the edition, how much of it (``whole``, ``chapter``, ``excerpt``) and the edit."""

    group: str
    size: int
    edition: str
    how: str
    edit: str


@dataclass
class EditionShape(Shape):
    """The ``editions`` shape: :class:`Shape` with each copy page's :class:`Copy` (by path),
    each edition's group, and each edition's kind and share of text changed."""

    copies: dict[str, Copy] = field(default_factory=dict)
    group_of: dict[str, str] = field(default_factory=dict)
    made: dict[str, tuple[str, float]] = field(default_factory=dict)


def sentences(line: str) -> list[str]:
    """``line`` cut after each 。！？；(and their ASCII forms).

    >>> sentences("他来了。她走了！好")
    ['他来了。', '她走了！', '好']
    """
    return _SENTENCE.findall(line)


def reworded(
    chapters: Sequence[Chapter], share: float, rng: random.Random, material: Iterable[str]
) -> list[Chapter]:
    """``chapters`` with sentences replaced by those of ``material`` (the pool's text) until
    ``share`` of the body characters changed."""
    cut = [[sentences(line) for line in c.lines] for c in chapters]
    spots = [(i, j, k) for i, c in enumerate(cut) for j, line in enumerate(c)
             for k in range(len(line))]  # fmt: skip
    rng.shuffle(spots)
    target = share * sum(len(line) for c in chapters for line in c.lines)
    fresh = iter(material)
    changed = 0
    for i, j, k in spots:
        if changed >= target:
            break
        old = cut[i][j][k]
        new = next(fresh)
        cut[i][j][k] = new
        changed += max(len(old), len(new))
    return [
        Chapter(c.heading, tuple("".join(line) for line in lines))
        for c, lines in zip(chapters, cut, strict=True)
    ]


def abridged(chapters: Sequence[Chapter], share: float, rng: random.Random) -> list[Chapter]:
    """``chapters`` without paragraphs (lines) chosen at random until ``share`` of the body
    characters are gone; every chapter keeps its first line."""
    spots = [(i, j) for i, c in enumerate(chapters) for j in range(1, len(c.lines))]
    rng.shuffle(spots)
    target = share * sum(len(line) for c in chapters for line in c.lines)
    dropped: set[tuple[int, int]] = set()
    gone = 0
    for i, j in spots:
        if gone >= target:
            break
        dropped.add((i, j))
        gone += len(chapters[i].lines[j])
    return [
        Chapter(c.heading, tuple(x for j, x in enumerate(c.lines) if (i, j) not in dropped))
        for i, c in enumerate(chapters)
    ]


def publishers(
    chapters: Sequence[Chapter], share: float, rng: random.Random, material: Iterable[str]
) -> list[Chapter]:
    """Another publisher's edition of ``chapters``: headings ``第N回`` with titles of
    ``material``, other punctuation, sentences reworded over ``share / 2``."""
    fresh = iter(material)
    out = []
    for n, c in enumerate(reworded(chapters, share / 2, rng, fresh), 1):
        title = chapter_heading(n, [next(fresh)]).split(" ", 1)[1]
        lines = tuple(line.replace("，", ",").replace("“", "「").replace("”", "」")
                      for line in c.lines)  # fmt: skip
        out.append(Chapter(f"第{n}回 {title}", lines))
    return out


def edition_text(front: Sequence[str], chapters: Sequence[Chapter]) -> str:
    """An edition as its rights holder registers it: front matter, then every chapter."""
    return "\n".join([*front, *(c.text for c in chapters)])


def _material(pool: TextPool, chars: int) -> list[str]:
    """Sentences of unused pool text (pieces of at most :data:`MATERIAL_PIECE` characters
    until ``chars``), each of 8 characters or more."""
    out: list[str] = []
    while sum(map(len, out)) < chars:
        lines = pool.take(min(max(chars, 400), MATERIAL_PIECE), min_han=0.4)
        out += [s for line in lines for s in sentences(line) if len(s.strip()) >= 8]
    return out


def _group(
    pool: TextPool, rng: random.Random, g: int, size: int, chapters: int, lengths: tuple[int, int]
) -> tuple[dict[str, str], dict[str, list[Chapter]], dict[str, tuple[str, float]]]:
    """One group of ``size`` editions: texts, chapters and (kind, share) by name."""
    base = draw_novel(pool, [rng.randint(*lengths) for _ in range(chapters)])
    title = short_title([base[0].lines[0]], 8)
    author = rng.choice(("江南烟雨", "北风", "云中客", "孤舟", "南山客", "无名氏"))
    front = [title, f"作者：{author}"]
    body = sum(len(line) for c in base for line in c.lines)
    names = [f"editions/g{g}-{size}/edition-{e}.txt" for e in range(1, size + 1)]
    texts = {names[0]: edition_text(front, base)}
    chapters_of = {names[0]: list(base)}
    made = {names[0]: ("first", 0.0)}
    for e, name in enumerate(names[1:]):
        kind = KINDS[(g + e) % len(KINDS)]
        share = round(rng.uniform(*DIFFER), 4)
        need = int(share * body * 1.5) + 400
        if kind == "revised":
            made_chapters = reworded(base, share, rng, _material(pool, need))
            made_front = front
        elif kind == "abridged":
            made_chapters = abridged(base, share, rng)
            made_front = front
        else:
            house = PUBLISHERS[(g + e) % len(PUBLISHERS)]
            note = pool.take(rng.randint(150, 300), min_han=0.4)
            material = _material(pool, need + 40 * len(base) + 400)  # titles too
            made_chapters = publishers(base, share, rng, material)
            made_front = [f"{title}（{house}版）", f"著者：{author}", house, "出版说明", *note]
        texts[name] = edition_text(made_front, made_chapters)
        chapters_of[name] = made_chapters
        made[name] = (kind, share)
    return texts, chapters_of, made


def editions_shape(
    texts: Sequence[str], sizes: Sizes, seed: int, quick: bool = False
) -> EditionShape:
    """The catalogue of editions and the library site copying them (see the module doc)."""
    pool = TextPool(texts, seed, "editions")
    editor = Editor.for_pool(pool, seed, "editions")
    rng = random.Random(f"{seed}:editions")
    lengths = QUICK_CHAPTER_CHARS if quick else CHAPTER_CHARS
    works: dict[str, str] = {}
    group_of: dict[str, str] = {}
    made: dict[str, tuple[str, float]] = {}
    docs: list[tuple[str, list[str], tuple[str, ...], str]] = []
    copies: list[Copy] = []
    g = 0
    for size in GROUP_SIZES:
        for _ in range(sizes.edition_groups):
            g += 1
            group, chapters_of, kinds = _group(pool, rng, g, size, sizes.edition_chapters, lengths)
            first = next(iter(group))
            works |= group
            made |= kinds
            group_of |= {name: first for name in group}
            for name, text in group.items():
                chapters = chapters_of[name]
                for how in COPIES:
                    edit = EDITS[len(copies) % len(EDITS)]
                    if how == "whole":
                        lines = text.split("\n")
                    else:
                        chapter = rng.choice(chapters)
                        lines = [chapter.heading, *chapter.lines]
                        if how == "excerpt":
                            host = pool.take(rng.randint(600, 1200), min_han=0.3)
                            lines = editor.excerpt(text.split("\n"), host)
                    lines = editor.edit(lines, edit)
                    copies.append(Copy(first, size, name, how, edit))
                    docs.append((short_title(lines), lines, (name,), f"{how}, {edit}"))
    for _ in range(sizes.edition_fillers):
        lines = pool.take(rng.randint(*lengths), min_han=0.3)
        heading = chapter_heading(rng.randint(1, 300), lines)
        docs.append((short_title([heading]), [heading, *lines], (), "unregistered novel"))
    order = list(range(len(docs)))
    rng.shuffle(order)
    site = make_sites(random.Random(f"{seed}:editions-chrome"), 1)[0]
    shuffled = [docs[i] for i in order]
    pages = library_pages(shuffled, site)
    paths = [p.path for p in pages if p.kind == "document"]
    by_path = {}
    for path, i in zip(paths, order, strict=True):
        if i < len(copies):
            by_path[path] = copies[i]
    related = {n: tuple(m for m in works if group_of[m] == group_of[n] and m != n) for n in works}
    return EditionShape(
        "editions", works, [SiteBuild("editions", pages)], related, by_path, group_of, made
    )


def score(shape: EditionShape, scan: dict[str, Any], base: str) -> dict[str, Any]:
    """The shape's figures from the scan's JSON (its entries' ``url`` under ``base``): per
    group size and in all, ``copies``, ``found``, ``attributed`` (the best-scored entry of
    its group is the edition copied, or names it in ``tied``), ``tied`` (attributed by a
    named tie), ``near_missed`` (not attributed, though the edition copied is a near twin of
    the work or of a tied one, the scan's ``duplicates``: a diagnostic, no credit),
    ``false_pairs``, and the copies not found or not attributed with what was reported."""
    site = shape.sites[0]
    entries = scan["matches"]
    twin_of = {d["work"]: d["same_text_as"] for d in scan.get("duplicates", [])}
    twin_of |= {d["same_text_as"]: d["work"] for d in scan.get("duplicates", [])}
    reported: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        reported.setdefault(e["url"].removeprefix(base), []).append(e)
    rows: dict[str, dict[str, Any]] = {}

    def row(name: str) -> dict[str, Any]:
        return rows.setdefault(name, {k: 0 for k in (
            "copies", "found", "attributed", "tied", "near_missed", "false_pairs",
            "unrelated_pages",
        )})  # fmt: skip

    wrong = []
    for page in site.pages:
        if page.kind != "document":
            continue
        got = reported.get(page.path, [])
        copy = shape.copies.get(page.path)
        if copy is None:
            for r in (row("all"),):
                r["unrelated_pages"] += 1
                r["false_pairs"] += len(got)
            wrong += [{"url": page.path, "expected": None, "reported": _brief(got)}] if got else []
            continue
        mine = [e for e in got if shape.group_of.get(e["work"]) == copy.group]
        best = max(mine, key=lambda e: e["score"], default=None)
        tied = best is not None and copy.edition in best.get("tied", [])
        named = {best["work"], *best.get("tied", [])} if best is not None else set()
        right = best is not None and (best["work"] == copy.edition or tied)
        for r in (row(str(copy.size)), row("all")):
            r["copies"] += 1
            r["found"] += best is not None
            r["attributed"] += right
            r["tied"] += right and best["work"] != copy.edition and tied
            r["near_missed"] += not right and twin_of.get(copy.edition) in named
            r["false_pairs"] += len(got) - len(mine)
        if not right or len(got) != len(mine):
            wrong.append({
                "url": page.path, "expected": copy.edition, "how": f"{copy.how}, {copy.edit}",
                "kind": shape.made[copy.edition], "reported": _brief(got),
            })  # fmt: skip
    for r in rows.values():
        r["recall"] = r["found"] / r["copies"] if r["copies"] else 1.0
        r["attribution"] = r["attributed"] / r["copies"] if r["copies"] else 1.0
    sizes = {k: rows[k] for k in sorted((k for k in rows if k != "all"), key=int)}
    return {"per_size": sizes, "all": rows["all"], "wrong": wrong}


def _brief(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    keys = ("work", "score", "tied", "siblings", "twins")
    return [{k: e.get(k) for k in keys} for e in entries]

"""What looking for a page's assets costs beside reading it (issue 38's cost target: a page
with none of the hiding techniques pays at most 10% more extraction CPU than today).

For each kind of page, the CPU (this process, one core) of :func:`crawler.reading.read_page`
(decoding, extraction, links: what a reader process spends on it today) and of what
:mod:`crawler.asset_fetch` adds before it in the crawl: :func:`crawler.page_assets.may_need`
(one search of the bytes) and, when it finds a marker, the page decoded and looked at
(:func:`crawler.asset_fetch._needs_of`). Pages: a 笔趣阁-style chapter with no marker at
all, the same with the site's stylesheet ``<link>`` and its logo ``<img>`` in the header
(most real pages: looked at, nothing but the stylesheet to fetch, once per crawl), and a
chapter of :mod:`tests.sites.hiding_images` (its content images found).

    python -m bench.asset_bench [--pages 200]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from crawler.asset_fetch import _needs_of
from crawler.page_assets import may_need
from crawler.reading import ReadJob, read_page
from tests.sites.hiding_shape import chapter_page

COMMON = (
    "的一是了不在有人这中大为上个我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说"
)


def _chapters(count: int, rng: random.Random) -> list[str]:
    """``count`` chapters of 1,500-3,000 characters in paragraphs of 60-200 (the cost of
    reading a page is in its size and structure, not in what its words mean)."""
    out = []
    for _ in range(count):
        lines, size = [], rng.randint(1500, 3000)
        while size > 0:
            length = rng.randint(60, 200)
            lines.append("".join(rng.choice(COMMON) for _ in range(length)) + "。")
            size -= length
        out.append("\n".join(lines))
    return out


def _cpu(function: Callable[[], object], repeat: int) -> float:
    started = time.process_time()
    for _ in range(repeat):
        function()
    return (time.process_time() - started) / repeat


def measure(pages: int, seed: int = 38) -> dict[str, dict[str, float]]:
    """Per kind of page: ms of CPU per page to read it, and to look for its assets."""
    rng = random.Random(seed)
    texts = _chapters(pages, rng)

    def body(text: str) -> str:
        return "<br /><br />".join(f"&nbsp;&nbsp;&nbsp;&nbsp;{x}" for x in text.split("\n"))

    kinds: dict[str, list[bytes]] = {
        "plain, no marker": [
            chapter_page(f"第{n}章", body(t)).encode() for n, t in enumerate(texts)
        ],
        "stylesheet link and logo": [
            chapter_page(f"第{n}章", body(t), head='<link rel="stylesheet" href="/css/style.css">')
            .replace('<div class="header">', '<div class="header"><img src="/logo.png">', 1)
            .encode()
            for n, t in enumerate(texts)
        ],
    }
    from tests.sites.hiding_images import disguise

    kinds["chapter as images"] = [
        disguise(f"第{n}章", t, rng).html.encode()
        for n, t in enumerate(texts[: max(pages // 10, 2)])
    ]
    out = {}
    url = "http://biquge.test/book/1/1.html"
    for kind, bodies in kinds.items():
        read = sum(
            _cpu(lambda b=b: read_page(ReadJob(b, "text/html; charset=utf-8", url)), 1)
            for b in bodies
        )
        look = sum(
            _cpu(
                lambda b=b: may_need(b) and _needs_of(b, "text/html; charset=utf-8", url, ""),
                1,
            )
            for b in bodies
        )
        out[kind] = {
            "pages": len(bodies),
            "read_ms": 1000 * read / len(bodies),
            "assets_ms": 1000 * look / len(bodies),
            "share": look / read if read else 0.0,
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=200, help="pages of each kind (200)")
    args = parser.parse_args(argv)
    for kind, figures in measure(args.pages).items():
        print(
            f"{kind:26} {figures['pages']:4d} pages  read {figures['read_ms']:7.2f} ms/page"
            f"  assets {figures['assets_ms']:6.3f} ms/page  (+{100 * figures['share']:.1f}%)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

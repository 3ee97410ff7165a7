"""What reading copies that hide costs, beside a plain page: the pipeline benchmark's
``--hiding-costs`` part.

Each cost is measured by the benchmark that studies it, run as its users run it (``python -m
bench.NAME ... --json OUT``, in a process of its own, its quick sizes), and its per-page
figures are gathered here beside the bare crawl's CPU a page of the same pipeline run:

- ``css``: :mod:`bench.visible_bench`, the page reader's CPU a page with the page's CSS
  cascade and the detection of pages built by script against the reader without them, on
  plain, styled and CSS-hidden pages (a plain page's extra cost: target at most 10%);
- ``render``: :mod:`bench.render_bench`, seconds a page crawled through Chromium against the
  same pages served as HTML (``--chromium``);
- ``ocr``: :mod:`bench.ocr_bench`, CPU seconds an image read by the default engine;
- ``fonts``: :mod:`bench.webfont_bench`, seconds to decode an obfuscating web font by glyph
  shape, and to read it again from the cache.

A part that cannot run here (no Chromium, an engine missing) is reported with its reason,
never left out silently.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("css", "render", "ocr", "fonts")
PLAIN_EXTRA = 0.10
"""A plain page's extraction CPU with the cascade may cost at most this much more."""
TIMEOUT_S = 900


def _run(name: str, args: Sequence[str], folder: Path) -> dict[str, Any]:
    """``python -m bench.NAME ARGS --json OUT``: what it wrote, or ``{"error": ...}``."""
    out = folder / f"{name}.json"
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{name}", *args, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0 or not out.is_file():
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"bench.{name} exited {done.returncode}: {tail}"}
    return json.loads(out.read_text(encoding="utf-8"))


def css(folder: Path, chromium: str) -> dict[str, Any]:
    found = _run("visible_bench", ["--runs", "3"], folder)
    if "error" in found:
        return found
    sets = found["sets"]
    plain = sets["plain"]
    return {
        "ms_per_page": {name: row["ms_per_page_visible"] for name, row in sets.items()},
        "ms_per_page_without": {name: row["ms_per_page_current"] for name, row in sets.items()},
        "plain_ratio": plain["ratio"],
        "plain_met": plain["ratio"] <= 1 + PLAIN_EXTRA,
    }


def render(folder: Path, chromium: str) -> dict[str, Any]:
    if not Path(chromium).is_file():
        return {"error": f"no browser at {chromium} (--chromium)"}
    args = ["--quick", "--chromium", chromium, "--synthetic", "40:5"]  # 40 pages
    found = _run("render_bench", args, folder)
    if "error" in found:
        return found
    summary = found["summary"]
    return {
        "pages": found["pages_with_text"],
        "rendered_over_plain": summary["ratio_rendered_over_plain_s_per_page"],
        "auto_over_plain": summary.get("ratio_auto_over_plain_s_per_page"),
    }


def ocr(folder: Path, chromium: str) -> dict[str, Any]:
    args = ["--quick", "--engines", "rapidocr", "--synthetic", "20:3"]
    found = _run("ocr_bench", args, folder)
    if "error" in found:
        return found
    engine = found["engines"]["rapidocr"]
    if "error" in engine:
        return {"error": f"rapidocr: {engine['error']}"}
    return {
        "images": found["images"],
        "cpu_s_per_image": engine["cpu_s_per_image"]["median"],
        "peak_mb": engine["peak_mb"],
    }


def fonts(folder: Path, chromium: str) -> dict[str, Any]:
    args = ["--quick", "--typefaces", "droid", "--chapters", "1"]
    found = _run("webfont_bench", args, folder)
    if "error" in found:
        return found
    pairs = found["pairs"]
    return {
        "fonts": len(pairs),
        "decode_s": statistics.median(p["decode_s"]["median"] for p in pairs),
        "cached_s": statistics.median(p["cached_s"]["median"] for p in pairs),
    }


MEASURES: dict[str, Callable[[Path, str], dict[str, Any]]] = {
    "css": css,
    "render": render,
    "ocr": ocr,
    "fonts": fonts,
}


def measure(parts: Sequence[str], chromium: str, say: Callable[[str], None]) -> dict[str, Any]:
    """The ``parts`` asked for (of :data:`PARTS`), each measured in a folder of its own."""
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="fptrack-hiding-costs-") as tmp:
        for part in parts:
            say(f"hiding costs: {part} ...")
            folder = Path(tmp) / part
            folder.mkdir()
            found[part] = MEASURES[part](folder, chromium)
    return found


def report(found: dict[str, Any], bare_ms: float) -> list[str]:
    """The report's lines, each cost beside the bare crawl's CPU a page (``bare_ms``)."""
    lines = [f"  costs of copies that hide (the bare crawl: {bare_ms:.1f} ms of CPU a page):"]
    for part, row in found.items():
        if "error" in row:
            lines.append(f"    {part:<8} not measured: {row['error']}")
        elif part == "css":
            ms = row["ms_per_page"]
            verdict = "PASS" if row["plain_met"] else "MISS"
            lines.append(
                f"    css      plain page {row['ms_per_page_without']['plain']:.2f} -> "
                f"{ms['plain']:.2f} ms ({row['plain_ratio']:.3f}x, target <= "
                f"{1 + PLAIN_EXTRA:.2f}: {verdict}); styled {ms['styled']:.2f} ms, "
                f"CSS-hidden {ms['hidden']:.2f} ms"
            )
        elif part == "render":
            lines.append(
                f"    render   a page through Chromium {row['rendered_over_plain']:.1f}x a plain "
                f"page's seconds ({row['pages']} pages)"
            )
        elif part == "ocr":
            cpu_ms = 1000 * row["cpu_s_per_image"]
            lines.append(
                f"    ocr      {row['cpu_s_per_image']:.2f} CPU-s an image "
                f"({cpu_ms / max(bare_ms, 1e-9):.0f}x a page's bare crawl), peak "
                f"{row['peak_mb']:.0f} MB"
            )
        elif part == "fonts":
            lines.append(
                f"    fonts    {row['decode_s']:.2f} s to decode a font, {row['cached_s']:.3f} s "
                f"from the cache ({row['fonts']} fonts)"
            )
    return lines

"""Obfuscating web fonts read by glyph shape: accuracy and time per font, per typeface pair.

Each chapter (the sample works, ``samples/works``, or texts given) is hidden as a pirate
site hides it (:mod:`tests.sites.font_sites`), in every typeface of :data:`TYPEFACES` installed,
two ways: the 300 most common Han characters behind private-use code points in a WOFF2
font (``pua-woff2``), and every Han character shuffled among real code points in a TTF
font (``shuffle-ttf``); each font's code points and glyph names drawn anew. Each font is
read by :class:`crawler.webfont.FontDecoder` against each reference (``--references``,
default Zen Hei and, where installed, Noto Sans CJK SC), a fresh decoder each run (no
cache), ``--runs`` times (median, [min-max]). Per pair: seconds per font (wall and CPU)
and CPU per glyph, the share of hidden characters read right, left as they are, read
wrong, and the pages whose share read right reaches the issue's 0.97.

Also: the reference index built from the font file (once per process without a cache
folder) and loaded from its cache file; a font decoded again (the cache by SHA-256).
Peers on the same fonts in the same run: an outline hash (the glyph's outline, rounded and
moved to its corner, looked up among the reference's: right only when the site's typeface
is the reference's very file, as any per-glyph fingerprint of the outline) and bitmaps
downscaled to 16 x 16 matched to the nearest reference bitmap (cosine), the simplest shape
match; Tesseract OCR of the rendered glyphs where ``tesseract`` and its Simplified Chinese
data are installed (they are not on the CI machine: the report says so).

    python -m bench.webfont_bench                       # every typeface installed, 3 runs
    python -m bench.webfont_bench --quick               # Droid, UMing against Zen Hei: 2 chapters
    python -m bench.webfont_bench --json bench/out/webfont.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from fontTools.ttLib import TTFont

from bench.pipeline_bench import spread
from crawler.webfont import FontDecoder, ReferenceIndex, load_reference
from crawler.webfont.glyphs import outline, rasterise
from crawler.webfont.reference import reference_chars
from crawler.webfont.sfnt import FontLimits, open_font
from tests.sites.font_sites import TYPEFACES, ObfuscatedPage, decoded_accuracy, obfuscate

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {"pua-woff2": ("pua", 300, "woff2"), "shuffle-ttf": ("shuffle", 0, "ttf")}
TARGET = 0.97
DEFAULT_RUNS = 3


def sample_chapters() -> list[str]:
    """The sample works (``samples/works``), one chapter each."""
    return [p.read_text("utf-8") for p in sorted((ROOT / "samples" / "works").glob("*.txt"))]


class Peers:
    """The peers' reference tables: outline hashes and 16 x 16 bitmaps of the reference's
    characters, made in one pass over its glyphs."""

    def __init__(self, spec: str, chars: Sequence[str]) -> None:
        path, _, number = spec.rpartition("#")
        font = TTFont(path, fontNumber=int(number or 0), lazy=True)
        cmap = font.getBestCmap()
        glyph_set = font.getGlyphSet()
        started = time.perf_counter()
        outlines, self.chars = [], []
        for ch in chars:
            if ord(ch) in cmap:
                outlines.append(outline(glyph_set, cmap[ord(ch)]))
                self.chars.append(ch)
        self.hashes = {}
        for ch, seg in zip(self.chars, outlines, strict=True):
            self.hashes.setdefault(outline_hash(seg), ch)
        self.bitmaps = small_bitmaps(outlines)
        self.build_s = time.perf_counter() - started

    def read(self, page: ObfuscatedPage) -> dict[str, dict[int, str]]:
        """Each peer's reading of the page's font: code point -> character."""
        opened = open_font(page.font, FontLimits())
        glyph_set = opened.font.getGlyphSet()
        cps = [cp for cp in page.mapping if cp in opened.cmap]
        outlines = [outline(glyph_set, opened.cmap[cp]) for cp in cps]
        by_hash = {
            cp: self.hashes.get(outline_hash(seg)) for cp, seg in zip(cps, outlines, strict=True)
        }
        nearest = (small_bitmaps(outlines) @ self.bitmaps.T).argmax(axis=1)
        return {
            "outline-hash": {cp: ch for cp, ch in by_hash.items() if ch},
            "bitmap-nn": {cp: self.chars[n] for cp, n in zip(cps, nearest, strict=True)},
        }


def outline_hash(segments: np.ndarray) -> str:
    """The outline's segments rounded to font units, moved to its bounding box's corner."""
    if not len(segments):
        return ""
    moved = segments - np.tile(segments.reshape(-1, 2).min(axis=0), 2)
    return hashlib.sha1(np.round(moved).astype(np.int32).tobytes()).hexdigest()


def small_bitmaps(outlines: list[np.ndarray]) -> np.ndarray:
    """Each outline filled at 64 x 64 (fitted to its box), averaged down to 16 x 16, unit
    length."""
    big = rasterise(outlines)
    small = big.reshape(len(big), 16, 4, 16, 4).mean(axis=(2, 4)).reshape(len(big), -1)
    norm = np.linalg.norm(small, axis=1, keepdims=True)
    return small / np.maximum(norm, 1e-9)


def tesseract_note() -> str:
    """Why OCR is not among the peers' figures."""
    if shutil.which("tesseract") is None:
        return "not installed (Debian's tesseract-ocr, tesseract-ocr-chi-sim): not run"
    return "installed, not run: one process per glyph (page mode misreads a grid of glyphs)"


def measure_reference(spec: str) -> tuple[ReferenceIndex, dict[str, float]]:
    """The reference index built from its font (no cache), then kept and loaded again."""
    with tempfile.TemporaryDirectory(prefix="fptrack-webfont-") as tmp:
        started = time.perf_counter()
        index = load_reference(spec, cache_dir=tmp)
        build_s = time.perf_counter() - started
        started = time.perf_counter()
        load_reference(spec, cache_dir=tmp)
        load_s = time.perf_counter() - started
        kept = sum(p.stat().st_size for p in Path(tmp).glob("*.npz"))
    return index, {"build_s": build_s, "load_s": load_s, "chars": len(index), "bytes": kept}


def read_share(page: ObfuscatedPage, mapping: dict[int, str]) -> dict[str, float]:
    right, kept, wrong = decoded_accuracy(page, page.text.translate(mapping))
    hidden = max(right + kept + wrong, 1)
    return {"right": right / hidden, "kept": kept / hidden, "wrong": wrong / hidden}


def run_pair(
    reference: ReferenceIndex, peers: Peers, typeface: str, variant: str,
    chapters: Sequence[str], runs: int, seed: int,
) -> dict[str, Any]:  # fmt: skip
    """Every chapter hidden in ``typeface`` as ``variant``, read against ``reference``."""
    scheme, common, fmt = VARIANTS[variant]
    seconds, cpu_seconds, per_glyph, glyphs, shares, again = [], [], [], [], [], []
    peer_shares: dict[str, list[dict[str, float]]] = {"outline-hash": [], "bitmap-nn": []}
    for n, chapter in enumerate(chapters):
        page = obfuscate(
            chapter, TYPEFACES[typeface], seed=f"{seed}:{n}", scheme=scheme, common=common, fmt=fmt
        )
        times, cpu = [], []
        for _ in range(runs):
            decoder = FontDecoder(reference)
            started = time.process_time()
            decoded = decoder.decode(page.font, page.text)
            cpu.append(time.process_time() - started)
            times.append(decoded.seconds)
        cpu_seconds.append(statistics.median(cpu))
        again.append(decoder.decode(page.font, page.text).seconds)
        seconds.append(statistics.median(times))
        per_glyph.append(cpu_seconds[-1] / max(decoded.glyphs, 1))
        glyphs.append(decoded.glyphs)
        shares.append(read_share(page, dict(decoded.mapping)))
        for name, mapping in peers.read(page).items():
            peer_shares[name].append(read_share(page, mapping))
    return {
        "reference": reference.source,
        "typeface": typeface,
        "variant": variant,
        "pages": len(chapters),
        "glyphs": spread(glyphs),
        "decode_s": spread(seconds),
        "decode_cpu_s": spread(cpu_seconds),
        "ms_per_glyph": spread([1000 * s for s in per_glyph]),
        "cached_s": spread(again),
        "right": _mean_min(shares, "right"),
        "kept": _mean_min(shares, "kept"),
        "wrong": _mean_min(shares, "wrong"),
        "pages_at_target": sum(s["right"] >= TARGET for s in shares),
        "peers": {
            name: {"right": _mean_min(s, "right"), "wrong": _mean_min(s, "wrong")}
            for name, s in peer_shares.items()
        },
    }


def _mean_min(shares: list[dict[str, float]], key: str) -> dict[str, float]:
    values = [s[key] for s in shares]
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values)}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.webfont_bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--references", default=None,
                        help="reference typefaces, comma-separated (default zenhei,noto-sans "
                        "where installed; --quick: zenhei)")  # fmt: skip
    parser.add_argument("--typefaces", default=None,
                        help="typefaces the sites' fonts are drawn from (default every one "
                        f"installed of {', '.join(TYPEFACES)}; --quick: droid,uming)")  # fmt: skip
    parser.add_argument("--chapters", type=int, default=None,
                        help="chapters (default every sample work, 7; --quick: 2)")  # fmt: skip
    parser.add_argument("--skip", type=int, default=0,
                        help="sample works to skip before the chapters (default 0)")  # fmt: skip
    parser.add_argument("--runs", type=int, default=None,
                        help=f"reads per font (default {DEFAULT_RUNS}; --quick: 1)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of the sites (default 0)")
    parser.add_argument("--quick", action="store_true", help="a smoke run (see --help)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)
    installed = [name for name, t in TYPEFACES.items() if t.available()]
    default_refs = "zenhei" if args.quick else ",".join(
        n for n in ("zenhei", "noto-sans") if n in installed
    )  # fmt: skip
    args.references = (args.references or default_refs).split(",")
    args.typefaces = (
        args.typefaces or ("droid,uming" if args.quick else ",".join(installed))
    ).split(",")
    for name in args.references + args.typefaces:
        if name not in TYPEFACES or not TYPEFACES[name].available():
            known = TYPEFACES.get(name)
            hint = f" (Debian's {known.package})" if known else f" (known: {', '.join(TYPEFACES)})"
            parser.error(f"typeface {name} is not installed{hint}")
    args.runs = args.runs or (1 if args.quick else DEFAULT_RUNS)
    return args


def main(argv: Sequence[str] | None = None, texts: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; ``texts`` replaces the sample works (tests pass their own)."""
    args = parse_args(argv)
    chapters = list(texts if texts is not None else sample_chapters()[args.skip :])
    chapters = chapters[: args.chapters or (2 if args.quick else len(chapters))]
    references, pairs = {}, []
    for ref_name in args.references:
        spec = TYPEFACES[ref_name].spec
        index, figures = measure_reference(spec)
        peers = Peers(spec, reference_chars())
        figures["peer_tables_s"] = peers.build_s
        references[ref_name] = figures
        for typeface in args.typefaces:
            for variant in VARIANTS:
                pair = run_pair(index, peers, typeface, variant, chapters, args.runs, args.seed)
                pair["reference"] = ref_name
                pairs.append(pair)
                print(pair_line(pair), flush=True)
    result = {
        "bench": "webfont",
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "args": {
            "references": args.references,
            "typefaces": args.typefaces,
            "chapters": len(chapters),
            "runs": args.runs,
            "seed": args.seed,
        },
        "target": TARGET,
        "references": references,
        "pairs": pairs,
        "tesseract": tesseract_note(),
    }
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False), encoding="utf-8")
    return result


def pair_line(p: dict[str, Any]) -> str:
    d, cpu, peers = p["decode_s"], p["decode_cpu_s"], p["peers"]
    right, kept, wrong = p["right"], p["kept"], p["wrong"]
    return (
        f"  {p['typeface']:<10} -> {p['reference']:<9} {p['variant']:<11} "
        f"{int(p['glyphs']['median']):>5} glyphs "
        f"{d['median']:5.2f} s [{d['min']:.2f}-{d['max']:.2f}] cpu {cpu['median']:.2f} s "
        f"{p['ms_per_glyph']['median']:4.2f} ms/glyph  "
        f"right {right['mean']:.4f} (min {right['min']:.4f}) "
        f"kept {kept['mean']:.4f} wrong {wrong['mean']:.4f}  "
        f"{p['pages_at_target']}/{p['pages']} pages >= {TARGET}  | "
        f"hash {peers['outline-hash']['right']['mean']:.3f} "
        f"bitmap-nn {peers['bitmap-nn']['right']['mean']:.3f}"
    )


def report(result: dict[str, Any]) -> str:
    args = result["args"]
    lines = [
        f"web fonts read by glyph shape ({args['chapters']} chapters, {args['runs']} runs; "
        "seconds per font: medians [min-max]; shares of the hidden characters)"
    ]
    for name, r in result["references"].items():
        lines.append(
            f"  reference {name}: {r['chars']} characters, index built in {r['build_s']:.1f} s, "
            f"kept in {r['bytes'] / 1e6:.1f} MB and loaded in {1000 * r['load_s']:.0f} ms; "
            f"peers' tables {r['peer_tables_s']:.1f} s"
        )
    lines += [pair_line(p) for p in result["pairs"]]
    cached = [p["cached_s"]["median"] for p in result["pairs"]]
    lines.append(
        f"  a font decoded again (cache by SHA-256): {1000 * statistics.median(cached):.2f} ms"
    )
    lines.append(f"  tesseract: {result['tesseract']}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()

"""OCR engines on chapters served as images (图片章节): accuracy, speed, memory, install size,
and what the matcher finds in their output.

Run from the repository root as ``python -m bench.ocr_bench``; ``--help`` lists the options.

Chapters of real Chinese text are drawn as pirate sites draw them (:mod:`tests.sites.text_images`,
one :data:`~tests.sites.text_images.STYLES` condition per chapter, dealt round-robin): chapters of
the sample works (``samples/works``, about ``--chars`` characters each, cut at line ends;
``--chapters`` per condition), which are registered, and chapters of texts of the benchmark
corpus (:mod:`tests.sites.corpus`, ``--negatives`` per condition), which are not. Each engine of
:mod:`bench.ocr_engines` reads every image in a worker process of its own, on one core,
``--runs`` times (the engines' order alternating from run to run).

Figures per engine:

* **CER**, the character error rate: the edit distance (Levenshtein) between the text drawn
  and the text read, over the length of the text drawn, both NFKC-normalised with whitespace
  removed; pooled over the images of each condition and over all. ``CER t2s`` compares both
  after OpenCC t2s, as the matcher sees them (it differs from CER only where an engine
  reads a Traditional glyph as its Simplified form);
* seconds and CPU seconds per image (the median over runs of a run's mean; the CPU of the
  worker and its child processes), the start-up time (loading the models), and the peak
  resident memory of the worker's process tree (sampled from ``/proc``, highest of the runs);
* install size: the files the engine adds (pip: the engine's distribution and the
  requirements it brings that fptrack's other dependencies do not, from their ``RECORD``;
  Debian: the ``Installed-Size`` of its packages);
* **recall on OCR'd chapters**: the sample works registered in an embedded engine (the
  scan's: mongomock and fakeredis, in this process), each text read registered as a page:
  the share of the sample chapters matched to their own work, and the false pairs (a corpus
  chapter matched to any work, or a sample chapter to another one). The same for the text
  drawn (``drawn``: what OCR could at best give); for the text drawn with every Han
  character that has a look-alike replaced by one (``lookalikes``: 己/已/巳, 未/末, 日/曰 ...,
  :data:`LOOKALIKES`; the share replaced is given), OCR's look-alike errors all at once; and
  for ``--misreads`` shares of its Han characters misread (a look-alike where there is one,
  else another character of the text), errors at a character error rate beyond the
  engines'.

Ratios set each engine beside ``--baseline`` (Debian's Tesseract). ``--json OUT`` writes
every figure; ``--quick``: two conditions, one chapter and one corpus text each, one run.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import synthetic
from bench.ocr_engines import ENGINES, MODULES, NOT_ELIGIBLE, PACKAGES
from bench.pipeline_bench import spread
from bench.proc_memory import PeakMemory
from tests.sites.text_images import (
    STYLES,
    Style,
    comparable,
    errors,
    font_available,
    render_chapter,
)

ROOT = Path(__file__).resolve().parents[1]
WORKS = ROOT / "samples" / "works"
DEFAULT_RUNS = 3
DEFAULT_CHARS = 400
DEFAULT_CHAPTERS = 3
DEFAULT_NEGATIVES = 2
DEFAULT_MISREAD_RATES = (0.05, 0.10, 0.15, 0.20)
QUICK_STYLES = ("s-20-png", "t-20-png")
WORKER_TIMEOUT_S = 3600
OCR_DEPENDENCIES = frozenset({"pillow", "rapidocr-onnxruntime"})
"""fptrack's own dependencies for OCR: left out of the base an engine's install size is
counted over."""
LOOKALIKES = (
    "己已巳", "未末", "日曰", "土士", "人入八", "大太犬", "天夭", "王玉主", "目自白", "刀力",
    "干千于", "戊戌戍", "拔拨", "侯候", "折拆", "史吏", "今令", "问间", "冶治", "免兔",
    "乌鸟", "着看", "睛晴", "丛从", "末未", "休体", "旦且", "田由甲申", "贝见", "幻幼",
)  # fmt: skip
"""Groups of visually confusable characters (each substitutes for the others in a group)."""
_HAN = re.compile(r"[\u4e00-\u9fff]")


# --- the chapters and their images ------------------------------------------------------------
@dataclass(frozen=True)
class Chapter:
    """A chapter drawn as an image: its source (a sample work's file name, or ``""`` for a
    corpus text, registered as nothing), its text, and the condition it is drawn in."""

    id: str
    work: str
    text: str
    style: Style


def cut(text: str, chars: int) -> list[str]:
    """``text`` cut at line ends into pieces of about ``chars`` characters (the last piece
    joins the one before when shorter than half of that)."""
    pieces, current = [], ""
    for line in (line.strip() for line in text.splitlines()):
        if not line:
            continue
        current = f"{current}\n{line}" if current else line
        if len(current) >= chars:
            pieces.append(current)
            current = ""
    if current:
        if pieces and len(current) < chars // 2:
            pieces[-1] += "\n" + current
        else:
            pieces.append(current)
    return pieces


def sample_chapters(chars: int) -> list[tuple[str, str]]:
    """(work file name, chapter) of the sample works, the works taking turns."""
    per_work = [
        [(path.name, piece) for piece in cut(path.read_text(encoding="utf-8"), chars)]
        for path in sorted(WORKS.glob("*.txt"))
    ]
    return [c for group in zip(*per_work, strict=False) for c in group] + [
        c for pieces in per_work for c in pieces[min(map(len, per_work)) :]
    ]


def corpus_chapters(texts: Sequence[str], chars: int) -> list[str]:
    """Chapters of mostly-Chinese lines (half Han characters or more, ten characters or
    more) of ``texts``, one text after another."""
    from tests.sites.textconv import han_share

    chapters = []
    for text in texts:
        lines = [ln for ln in text.splitlines() if len(ln) >= 10 and han_share(ln) >= 0.5]
        chapters += [p for p in cut("\n".join(lines), chars) if len(p) >= chars // 2]
    return chapters


def build_chapters(
    styles: Sequence[Style], positives: int, negatives: int, chars: int, texts: Sequence[str]
) -> list[Chapter]:
    """``positives`` sample chapters and ``negatives`` corpus chapters per style."""
    samples = sample_chapters(chars)
    others = corpus_chapters(texts, chars)
    if len(samples) < positives * len(styles) or len(others) < negatives * len(styles):
        raise SystemExit(
            f"ocr_bench: {len(samples)} sample and {len(others)} corpus chapters of {chars} "
            "characters, too few for the conditions asked"
        )
    chapters = []
    for n, (work, text) in enumerate(samples[: positives * len(styles)]):
        chapters.append(Chapter(f"p{n:03d}", work, text, styles[n % len(styles)]))
    for n, text in enumerate(others[: negatives * len(styles)]):
        chapters.append(Chapter(f"n{n:03d}", "", text, styles[n % len(styles)]))
    return chapters


def write_images(chapters: Sequence[Chapter], folder: Path) -> list[str]:
    """Draw every chapter into ``folder`` with its manifest; the texts as drawn."""
    manifest, drawn = [], []
    for n, chapter in enumerate(chapters):
        data, text = render_chapter(chapter.text, chapter.style, seed=n)
        name = f"{chapter.id}.{'jpg' if chapter.style.fmt == 'JPEG' else 'png'}"
        (folder / name).write_bytes(data)
        manifest.append({"file": name, "bytes": len(data)})
        drawn.append(text)
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return drawn


# --- the engines' runs ------------------------------------------------------------------------
def run_engine(name: str, folder: Path) -> dict[str, Any]:
    """One worker of engine ``name`` over ``folder``'s images: its figures and peak memory."""
    out = folder / f"{name}.json"
    out.unlink(missing_ok=True)
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.ocr_engines", name, str(folder)], cwd=ROOT
    )
    with PeakMemory(proc.pid) as peak:
        try:
            proc.wait(timeout=WORKER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if not out.is_file():
        return {"error": f"the worker exited with status {proc.returncode} and no result"}
    result = json.loads(out.read_text(encoding="utf-8"))
    result |= {"peak_mb": peak.tree, "worker_s": time.perf_counter() - started}
    return result


def engine_available(name: str) -> str | None:
    """Why engine ``name`` cannot run here (None when it can)."""
    import importlib.util
    import shutil

    kind, packages = PACKAGES[name]
    if kind == "deb":
        return None if shutil.which("tesseract") else "no tesseract command (apt-get install)"
    if importlib.util.find_spec(MODULES[name]) is None:
        return f"{packages[0]} is not installed (pip install {packages[0]})"
    return None


# --- install size -----------------------------------------------------------------------------
def _requirement_closure(names: Sequence[str]) -> set[str]:
    """The installed distributions ``names`` need, themselves included (recursively)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    stack = [canonicalize_name(n) for n in names]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue
        seen.add(name)
        for line in requires:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                stack.append(canonicalize_name(requirement.name))
    return seen


def install_mb(name: str) -> tuple[float | None, list[str]]:
    """What installing engine ``name`` adds, in MiB (see the module docstring; None when it
    is not installed), and the packages it names that are not installed here (not counted)."""
    from importlib import metadata

    kind, packages = PACKAGES[name]
    if kind == "deb":
        extra = ("libtesseract5", "liblept5", "tesseract-ocr-eng", "tesseract-ocr-osd")
        try:
            sizes = subprocess.run(
                ["dpkg-query", "-W", "-f", "${Installed-Size}\n", *packages, *extra],
                capture_output=True, text=True, check=True,
            ).stdout.split()  # fmt: skip
        except (OSError, subprocess.CalledProcessError):
            return None, list(packages)
        return sum(int(s) for s in sizes) / 1024, []
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = [Requirement(r).name for r in project["dependencies"]]
    base = _requirement_closure([c for c in core if c.lower() not in OCR_DEPENDENCIES])
    added = _requirement_closure(packages) - base
    missing = [p for p in packages if not _requirement_closure([p])]
    if not added:
        return None, missing
    total = 0
    for dist_name in added:
        dist = metadata.distribution(dist_name)
        for file in dist.files or ():
            path = Path(dist.locate_file(file))
            if path.is_file():
                total += path.stat().st_size
    return total / (1 << 20), missing


# --- matching ---------------------------------------------------------------------------------
def _lookalikes() -> dict[str, str]:
    """Each character of :data:`LOOKALIKES` -> the others of its group."""
    others: dict[str, str] = {}
    for group in LOOKALIKES:
        for char in group:
            others.setdefault(char, group.replace(char, ""))
    return others


def lookalike_text(text: str, rng: random.Random) -> tuple[str, float]:
    """``text`` with every Han character that has a look-alike (:data:`LOOKALIKES`)
    replaced by one, and the share of its Han characters replaced: OCR's look-alike errors,
    all at once."""
    others = _lookalikes()
    chars = list(text)
    han = [i for i, c in enumerate(chars) if _HAN.match(c)]
    swapped = [i for i in han if chars[i] in others]
    for i in swapped:
        chars[i] = rng.choice(others[chars[i]])
    return "".join(chars), len(swapped) / max(len(han), 1)


def misread_text(text: str, rate: float, rng: random.Random) -> str:
    """``text`` with ``rate`` of its Han characters misread: each replaced by a look-alike
    where :data:`LOOKALIKES` has one, else by another Han character of the text."""
    others = _lookalikes()
    chars = list(text)
    han = [i for i, c in enumerate(chars) if _HAN.match(c)]
    pool = [chars[i] for i in han]
    for i in rng.sample(han, round(rate * len(han))):
        choices = others.get(chars[i]) or [c for c in pool if c != chars[i]] or [chars[i]]
        chars[i] = rng.choice(choices)
    return "".join(chars)


def match_texts(chapters: Sequence[Chapter], texts: Sequence[str]) -> dict[str, Any]:
    """The sample works registered in the scan's embedded engine, each text one page:
    recall (sample chapters matched to their own work), the false pairs, and the mean
    containment of the pairs found."""
    from admin.scan import scan_engine
    from matcher.settings import Settings

    engine = scan_engine(Settings(), None)
    names = {}
    for path in sorted(WORKS.glob("*.txt")):
        work_id = engine.add_work(path.read_text(encoding="utf-8"), title=path.stem)
        names[str(work_id)] = path.name
    found = 0
    false_pairs: list[str] = []
    missed: list[str] = []
    containment = []
    for chapter, text in zip(chapters, texts, strict=True):
        records = engine.process_page(f"http://ocr.invalid/{chapter.id}", text)
        works = {names[str(r["work_id"])] for r in records}
        found += bool(chapter.work and chapter.work in works)
        if chapter.work and chapter.work not in works:
            missed.append(f"{chapter.id} ({chapter.work}, {len(chapter.text)} characters)")
        false_pairs += [f"{chapter.id}->{w}" for w in sorted(works - {chapter.work})]
        containment += [
            float(r.get("containment", 0.0))
            for r in records
            if names[str(r["work_id"])] == chapter.work
        ]
    positives = sum(bool(c.work) for c in chapters)
    return {
        "recall": found / max(positives, 1),
        "found": found,
        "positives": positives,
        "false_pairs": len(false_pairs),
        "false_pair_list": false_pairs,
        "missed": missed,
        "mean_containment": statistics.fmean(containment) if containment else 0.0,
    }


# --- the figures ------------------------------------------------------------------------------
def accuracy(
    chapters: Sequence[Chapter], drawn: Sequence[str], texts: Sequence[str]
) -> dict[str, Any]:
    """Pooled CER (and CER t2s) per condition and over all images."""
    pooled: dict[str, list[int]] = {}
    for chapter, reference, read in zip(chapters, drawn, texts, strict=True):
        distance, length = errors(reference, read)
        simplified, _ = errors(reference, read, t2s=True)
        for key in (chapter.style.name, "all"):
            row = pooled.setdefault(key, [0, 0, 0])
            row[0] += distance
            row[1] += simplified
            row[2] += length
    return {k: {"cer": d / n, "cer_t2s": s / n, "chars": n} for k, (d, s, n) in pooled.items()}


def confusions(
    drawn: Sequence[str], texts: Sequence[str], limit: int = 12
) -> list[tuple[str, str, int]]:
    """The commonest single-character substitutions (drawn -> read) of the Han characters,
    from :mod:`difflib`'s alignment of each pair of texts."""
    import difflib
    from collections import Counter

    counts: Counter[tuple[str, str]] = Counter()
    for reference, read in zip(drawn, texts, strict=True):
        a, b = comparable(reference), comparable(read)
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "replace" and i2 - i1 == j2 - j1:
                for x, y in zip(a[i1:i2], b[j1:j2], strict=True):
                    if _HAN.match(x):
                        counts[(x, y)] += 1
    return [(x, y, n) for (x, y), n in counts.most_common(limit)]


def summarise(
    name: str,
    runs: Sequence[dict[str, Any]],
    chapters: Sequence[Chapter],
    drawn: Sequence[str],
) -> dict[str, Any]:
    """One engine's figures over its runs."""
    good = [r for r in runs if "error" not in r]
    if not good:
        return {"error": runs[0]["error"]}
    texts = [image["text"] for image in good[0]["images"]]
    count = len(texts)
    size, missing = install_mb(name)
    return {
        "accuracy": accuracy(chapters, drawn, texts),
        "s_per_image": spread([sum(i["wall_s"] for i in r["images"]) / count for r in good]),
        "cpu_s_per_image": spread([sum(i["cpu_s"] for i in r["images"]) / count for r in good]),
        "load_s": spread([r["load_s"] for r in good]),
        "peak_mb": max(r["peak_mb"] for r in good),
        "install_mb": size,
        "install_not_counted": missing,
        "stable": all([i["text"] for i in r["images"]] == texts for r in good),
        "refused": [i["refused"] for i in good[0]["images"] if i.get("refused")],
        "confusions": confusions(drawn, texts),
        "texts": texts,
    }


def ratios(engines: dict[str, Any], baseline: str) -> None:
    """Each engine's CER, CPU per image and peak memory over ``baseline``'s (in place)."""
    base = engines.get(baseline)
    if not base or "error" in base:
        return
    for figures in engines.values():
        if "error" in figures:
            continue
        figures["ratio"] = {
            "cer": figures["accuracy"]["all"]["cer"] / max(base["accuracy"]["all"]["cer"], 1e-9),
            "cpu_s_per_image": figures["cpu_s_per_image"]["median"]
            / base["cpu_s_per_image"]["median"],
            "peak_mb": figures["peak_mb"] / base["peak_mb"],
        }


# --- the command ------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options (``--help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.ocr_bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--engines", default=",".join(ENGINES),
                        help=f"engines to compare (default {','.join(ENGINES)})")  # fmt: skip
    parser.add_argument("--baseline", default="tesseract", help="ratios over this engine")
    parser.add_argument("--runs", type=int, default=None,
                        help=f"runs per engine (default {DEFAULT_RUNS}; --quick: 1)")  # fmt: skip
    parser.add_argument("--chars", type=int, default=DEFAULT_CHARS,
                        help=f"characters per chapter (default {DEFAULT_CHARS})")  # fmt: skip
    parser.add_argument("--chapters", type=int, default=None,
                        help=f"sample chapters per condition (default {DEFAULT_CHAPTERS}; "
                        "--quick: 1)")  # fmt: skip
    parser.add_argument("--negatives", type=int, default=None,
                        help=f"corpus chapters per condition (default {DEFAULT_NEGATIVES}; "
                        "--quick: 1)")  # fmt: skip
    parser.add_argument("--styles", default=None,
                        help="conditions, by name (default: every one whose font is installed; "
                        f"--quick: {','.join(QUICK_STYLES)})")  # fmt: skip
    parser.add_argument("--misreads", default=",".join(map(str, DEFAULT_MISREAD_RATES)),
                        help="shares of misread characters matched "
                        f"(default {','.join(map(str, DEFAULT_MISREAD_RATES))})")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="misreading seed (default 0)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the images in this folder")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 2 conditions, 1 sample and 1 corpus chapter each, "
                        "1 run")  # fmt: skip
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write JSON here")
    synthetic.add_option(parser)
    args = parser.parse_args(argv)
    args.runs = args.runs or (1 if args.quick else DEFAULT_RUNS)
    args.chapters = args.chapters or (1 if args.quick else DEFAULT_CHAPTERS)
    args.negatives = args.negatives or (1 if args.quick else DEFAULT_NEGATIVES)
    by_name = {s.name: s for s in STYLES}
    names = args.styles.split(",") if args.styles else (QUICK_STYLES if args.quick else by_name)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        parser.error(f"unknown condition(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    args.style_list = [by_name[n] for n in names if font_available(by_name[n])]
    args.no_font = [n for n in names if not font_available(by_name[n])]
    args.engine_list = [e for e in args.engines.split(",") if e]
    wrong = [e for e in args.engine_list if e not in ENGINES]
    if wrong:
        parser.error(f"unknown engine(s) {', '.join(wrong)}; known: {', '.join(ENGINES)}")
    args.rates = [float(r) for r in args.misreads.split(",") if r]
    return args


def main(argv: Sequence[str] | None = None, texts: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; ``texts`` replaces the downloaded corpus (tests pass their own)."""
    args = parse_args(argv)
    texts = synthetic.texts(args, texts)
    if texts is None:
        from tests.sites.corpus import load_texts

        texts = load_texts(2.0)
    chapters = build_chapters(args.style_list, args.chapters, args.negatives, args.chars, texts)
    skipped = {e: why for e in args.engine_list if (why := engine_available(e))}
    engines = [e for e in args.engine_list if e not in skipped]
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
    with tempfile.TemporaryDirectory(prefix="fptrack-ocr-bench-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        drawn = write_images(chapters, folder)
        for n in range(args.runs):
            for name in engines if n % 2 == 0 else engines[::-1]:
                runs[name].append(run_engine(name, folder))
    figures = {name: summarise(name, runs[name], chapters, drawn) for name in engines}
    ratios(figures, args.baseline)
    rng = random.Random(args.seed)
    matching = {"drawn": match_texts(chapters, drawn)}
    altered, shares = zip(*(lookalike_text(text, rng) for text in drawn), strict=True)
    matching["lookalikes"] = match_texts(chapters, altered)
    matching["lookalikes"]["share"] = statistics.fmean(shares)
    for rate in args.rates:
        misread = [misread_text(text, rate, rng) for text in drawn]
        matching[f"misread-{rate:g}"] = match_texts(chapters, misread) | {"share": rate}
    for name, result in figures.items():
        if "error" not in result:
            matching[name] = match_texts(chapters, result["texts"])
    result = {
        "bench": "ocr",
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "args": {
            "runs": args.runs,
            "chars": args.chars,
            "chapters": args.chapters,
            "negatives": args.negatives,
            "styles": [s.name for s in args.style_list],
            "styles_without_their_font": args.no_font,
            "baseline": args.baseline,
        },
        "images": len(chapters),
        "drawn_chars": sum(len(comparable(t)) for t in drawn),
        "engines": figures,
        "skipped": skipped,
        "not_eligible": {e: why for e, why in NOT_ELIGIBLE.items() if e in args.engine_list},
        "matching": matching,
    }
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    return result


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else fmt % value


def report(result: dict[str, Any]) -> str:
    """The tables printed: engines side by side, CER per condition, matching."""
    engines, styles = result["engines"], result["args"]["styles"]
    lines = [
        f"OCR on {result['images']} chapter images ({result['drawn_chars']} characters drawn), "
        f"{result['args']['runs']} run(s), one core; medians [min-max]; ratios over "
        f"{result['args']['baseline']}",
        f"  {'engine':<15} {'CER':>6} {'t2s':>6} {'s/img':>14} {'CPU s/img':>15} "
        f"{'load s':>7} {'peak MB':>8} {'install MB':>10}  ratios CER / CPU / memory",
    ]
    for name, f in engines.items():
        if "error" in f:
            lines.append(f"  {name:<15} failed: {f['error']}")
            continue
        a, s, c = f["accuracy"]["all"], f["s_per_image"], f["cpu_s_per_image"]
        r = f.get("ratio")
        more = "+" if f.get("install_not_counted") else " "
        ratio = f"{r['cer']:.2f} / {r['cpu_s_per_image']:.2f} / {r['peak_mb']:.2f}" if r else "-"
        lines.append(
            f"  {name:<15} {a['cer']:6.3f} {a['cer_t2s']:6.3f} "
            f"{s['median']:5.2f} [{s['min']:.2f}-{s['max']:.2f}] "
            f"{c['median']:6.2f} [{c['min']:.2f}-{c['max']:.2f}] {f['load_s']['median']:7.1f} "
            f"{f['peak_mb']:8.0f} {_cell(f['install_mb'], '%9.0f')}{more}  {ratio}"
        )
    for name, f in engines.items():
        for refusal in f.get("refused", []):
            lines.append(f"  {name:<15} refused an image: {refusal}")
        if f.get("install_not_counted"):
            lines.append(
                f"  {name:<15} install size leaves out {', '.join(f['install_not_counted'])}"
                " (not installed here)"
            )
    for name, why in result["skipped"].items():
        lines.append(f"  {name:<15} not run: {why}")
    for style in result["args"]["styles_without_their_font"]:
        lines.append(f"  condition {style} left out: its font is not installed (fonts-noto-cjk)")
    for name, why in result["not_eligible"].items():
        lines.append(f"  ({name}: measured only, not eligible: {why})")
    lines.append("  CER per condition (t2s):")
    lines.append("  " + " " * 15 + "".join(f"{s:>18}" for s in styles))
    for name, f in engines.items():
        if "error" not in f:
            cells = "".join(
                f"{f['accuracy'][s]['cer']:10.3f} ({f['accuracy'][s]['cer_t2s']:.3f})"
                for s in styles
            )
            lines.append(f"  {name:<15}{cells}")
    lines.append("  matching the OCR'd chapters against the sample works:")
    for name, m in result["matching"].items():
        share = f" ({m['share']:.1%} of the characters)" if "share" in m else ""
        lines.append(
            f"  {name + share:<40} recall {m['recall']:.3f} ({m['found']}/{m['positives']}), "
            f"{m['false_pairs']} false pair(s), mean containment {m['mean_containment']:.3f}"
        )
        if m["missed"]:
            lines.append(f"  {'':<40} missed: {', '.join(m['missed'])}")
    for name, f in engines.items():
        if "error" not in f and f["confusions"]:
            pairs = " ".join(f"{x}>{y}:{n}" for x, y, n in f["confusions"][:8])
            lines.append(f"  {name} commonest substitutions: {pairs}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()

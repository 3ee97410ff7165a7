"""Throughput of the fingerprint library against its peer libraries, on real Chinese text.

Run from the repository root as ``python -m bench.fingerprint_bench``; ``--help`` lists the
options.

The corpus is the first ``--size-mb`` MiB of :func:`tests.sites.corpus.documents` (real Chinese
text from Debian documentation packages, cut into documents of about 3000 UTF-8 bytes).
Every figure is MB/s = MiB of UTF-8 input documents / seconds (``time.perf_counter``, one
process, one thread). A stage row divides the bytes of the *original* documents by the time
taken, so rows are comparable with each other; apart from ``normalize`` itself and the full
default fingerprint, the stage functions run on text normalised beforehand (outside the
timing), as the library's stage functions expect.

Peers, on the same documents in the same run:

* pinyin initials: ``pypinyin.lazy_pinyin(text, style=Style.FIRST_LETTER)`` on the same
  normalised text as ours;
* MinHash: ``datasketch.MinHash(num_perm=128).update_batch`` on the UTF-8 encoded character
  3-grams of the same normalised text (making the 3-grams is timed: ours does it too);
* the peer pipeline, per original document: ``jieba.lcut(doc)``, PyPI
  ``simhash.Simhash(words)`` and the datasketch MinHash of the document's character 3-grams.

Each stage and the full fingerprint are timed twice where both exist: through the numpy
reference (``compiled=False``, the modules' own functions) and through the compiled kernels
(:mod:`fingerprint.compiled`, numba), which give the same values. The headline figure is the
compiled path, the one ``fingerprint_documents`` takes when numba can compile. The time of
the first call in a fresh process (compiling the kernels into an empty cache, and loading
them from the cache) is measured in subprocesses.

Every measurement is repeated ``--repeat`` times, in rounds (each round times every
measurement once, so a slow spell of a shared machine hits one round, not one measurement);
the median is reported, with the minimum and maximum. The peers are slow (well under
1 MB/s); ``--peer-size-mb`` measures them on a prefix of the corpus, stated in the output.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fingerprint import compiled, kernels
from fingerprint.batch import normalize_many
from fingerprint.bloom import bloom
from fingerprint.document import fingerprint_document, fingerprint_documents
from fingerprint.minhash import MinHashParams, minhash
from fingerprint.normalize import normalize
from fingerprint.pinyin import PinyinParams, initials, pinyin_fingerprint
from fingerprint.sentences import sentence_signature
from fingerprint.shingles import winnow
from fingerprint.simhash import simhash

MB = 1 << 20
"""Sizes and speeds are in MiB (of UTF-8 text), as in :mod:`tests.sites.corpus`."""
DOC_BYTES = 3000
DEFAULT_SIZE_MB = 10.0
DEFAULT_REPEAT = 3
DEFAULT_BATCH = 64
QUICK_SIZE_MB = 1.0
QUICK_REPEAT = 1
TARGET_MB_S = 20.0
"""Target: the full default fingerprint (compiled, batched) runs at >= 20 MB/s on one core ..."""
TARGET_RATIO = 50.0
"""... and >= 50 times as fast as the peer pipeline."""
WARMUP_DOCS = 8
NUM_PERM = 128

# Stage key -> label in the table; the order of the table.
STAGES: dict[str, str] = {
    "normalize": "normalize (original text)",
    "pinyin_initials": "pinyin initials",
    "pinyin_windows": "pinyin windows (fixed)",
    "pinyin_anchored": "pinyin windows (anchored)",
    "simhash": "simhash (64 bit, char 3-grams)",
    "minhash_oph": "MinHash oph (128)",
    "minhash_affine32": "MinHash affine32 (128)",
    "winnow": "winnow (k=8, w=8)",
    "bloom": "bloom (1024 bits)",
    "sentences": "sentences (top 5)",
}
PEER_LABELS: dict[str, str] = {
    "pinyin": "pypinyin.lazy_pinyin(FIRST_LETTER)",
    "datasketch": "datasketch MinHash(128)",
    "pipeline": "jieba.lcut + simhash.Simhash + datasketch MinHash(128)",
}
PEER_OF_STAGE: dict[str, str] = {
    "pinyin_initials": "pinyin",
    "minhash_oph": "datasketch",
    "minhash_affine32": "datasketch",
}


@dataclass
class Measurement:
    """One timed job: ``run()`` processes inputs whose original documents hold ``nbytes``."""

    key: str
    run: Callable[[], object]
    warmup: Callable[[], object]
    nbytes: int
    seconds: list[float] = field(default_factory=list)

    def time_once(self) -> None:
        """Run the job once and record its wall time."""
        gc.collect()
        start = time.perf_counter()
        self.run()
        self.seconds.append(time.perf_counter() - start)

    def speeds(self) -> list[float]:
        """MB/s of each repetition."""
        return [self.nbytes / MB / max(s, 1e-12) for s in self.seconds]

    def summary(self) -> dict[str, float]:
        """Median, minimum and maximum MB/s over the repetitions."""
        speeds = self.speeds()
        return {
            "mb_s": statistics.median(speeds),
            "min": min(speeds),
            "max": max(speeds),
            "median_s": statistics.median(self.seconds),
        }


def utf8_size(texts: Sequence[str]) -> int:
    """Total UTF-8 bytes of ``texts``."""
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)


def prefix(docs: Sequence[str], size_mb: float) -> list[str]:
    """The leading documents of ``docs`` until their UTF-8 size reaches ``size_mb`` MiB."""
    out: list[str] = []
    total = 0
    for doc in docs:
        if total >= size_mb * MB:
            break
        out.append(doc)
        total += len(doc.encode("utf-8", "surrogatepass"))
    return out


def char_3grams(text: str) -> list[str]:
    """Overlapping character 3-grams of ``text`` (a text shorter than 3 gives itself)."""
    if len(text) < 3:
        return [text] if text else []
    return [text[i : i + 3] for i in range(len(text) - 2)]


def _over(fn: Callable[[str], object], texts: Sequence[str]) -> Callable[[], None]:
    """A job that applies ``fn`` to every text."""

    def job() -> None:
        for text in texts:
            fn(text)

    return job


def _load_peers() -> dict[str, Callable[[str], object]]:
    """The peer functions; imports jieba, simhash, datasketch, pypinyin (extra ``bench``)."""
    import jieba
    from datasketch import MinHash
    from pypinyin import Style, lazy_pinyin
    from simhash import Simhash

    jieba.setLogLevel(60)  # no "Building prefix dict" chatter on stderr
    jieba.initialize()  # load the dictionary before any timing

    def pinyin(text: str) -> object:
        return lazy_pinyin(text, style=Style.FIRST_LETTER)

    def datasketch_minhash(text: str) -> object:
        m = MinHash(num_perm=NUM_PERM)
        m.update_batch([s.encode() for s in char_3grams(text)])
        return m

    def pipeline(doc: str) -> object:
        words = jieba.lcut(doc)
        return Simhash(words), datasketch_minhash(doc)

    return {"pinyin": pinyin, "datasketch": datasketch_minhash, "pipeline": pipeline}


def build_measurements(
    docs: Sequence[str], peer_docs: Sequence[str], batch: int, fast: bool
) -> list[Measurement]:
    """Every timed job: our stages and full fingerprint (numpy reference, and compiled when
    ``fast``), and the peers. Compiled jobs' keys end in ``@compiled``."""
    normalized = [normalize(d).text for d in docs]
    peer_normalized = normalized[: len(peer_docs)]
    nbytes, peer_nbytes = utf8_size(docs), utf8_size(peer_docs)
    fixed, anchored = PinyinParams(), PinyinParams(anchored=True)
    oph, affine = MinHashParams(scheme="oph"), MinHashParams(scheme="affine32")
    ours: dict[str, Callable[[str], object]] = {
        "pinyin_initials": initials,
        "pinyin_windows": lambda t: pinyin_fingerprint(t, fixed),
        "pinyin_anchored": lambda t: pinyin_fingerprint(t, anchored),
        "simhash": simhash,
        "minhash_oph": lambda t: minhash(t, oph),
        "minhash_affine32": lambda t: minhash(t, affine),
        "winnow": winnow,
        "bloom": bloom,
        "sentences": sentence_signature,
    }
    # Pinyin initials are one numpy gather, Bloom and affine32 have no compiled loop.
    theirs: dict[str, Callable[[str], object]] = {
        "pinyin_windows": lambda t: compiled.pinyin_fingerprint(t, fixed),
        "pinyin_anchored": lambda t: compiled.pinyin_fingerprint(t, anchored),
        "simhash": compiled.simhash,
        "minhash_oph": lambda t: compiled.minhash(t, oph),
        "winnow": compiled.winnow,
        "sentences": compiled.sentence_signature,
    }
    few_docs, few_texts = list(docs[:WARMUP_DOCS]), normalized[:WARMUP_DOCS]
    jobs = [Measurement("normalize", _over(normalize, docs), _over(normalize, few_docs), nbytes)]
    jobs += [
        Measurement(key, _over(fn, normalized), _over(fn, few_texts), nbytes)
        for key, fn in ours.items()
    ]
    batches = [list(docs[i : i + batch]) for i in range(0, len(docs), batch)]

    def full(use: bool) -> tuple[Callable[[], None], Callable[[], None], Callable[[], None]]:
        def batched() -> None:
            for chunk in batches:
                fingerprint_documents(chunk, compiled=use)

        def per_doc() -> None:
            for doc in docs:
                fingerprint_document(doc, compiled=use)

        def warm() -> None:
            fingerprint_documents(few_docs, compiled=use)
            for doc in few_docs:
                fingerprint_document(doc, compiled=use)

        return batched, per_doc, warm

    batched, per_doc, warm = full(False)
    jobs += [
        Measurement("full_batched", batched, warm, nbytes),
        Measurement("full_per_doc", per_doc, warm, nbytes),
    ]
    if fast:

        def normalize_one(doc: str) -> object:
            return normalize_many([doc], compiled=True)[0]

        jobs.append(
            Measurement(
                "normalize@compiled",
                _over(normalize_one, docs),
                _over(normalize_one, few_docs),
                nbytes,
            )
        )
        jobs += [
            Measurement(f"{key}@compiled", _over(fn, normalized), _over(fn, few_texts), nbytes)
            for key, fn in theirs.items()
        ]
        batched, per_doc, warm = full(True)
        jobs += [
            Measurement("full_batched@compiled", batched, warm, nbytes),
            Measurement("full_per_doc@compiled", per_doc, warm, nbytes),
        ]
    peers = _load_peers()
    for key, texts in (
        ("pinyin", peer_normalized),
        ("datasketch", peer_normalized),
        ("pipeline", list(peer_docs)),
    ):
        fn = peers[key]
        warm = _over(fn, texts[:WARMUP_DOCS])
        jobs.append(Measurement(f"peer_{key}", _over(fn, texts), warm, peer_nbytes))
    return jobs


FIRST_CALL = (
    "import time; t = time.perf_counter(); "
    "from fingerprint.document import fingerprint_documents; "
    "fingerprint_documents(['天下大势，分久必合，合久必分。'], compiled=True); "
    "print(time.perf_counter() - t)"
)


def first_call_seconds() -> dict[str, float] | None:
    """Seconds from import to the first compiled fingerprint in a fresh process: with an
    empty numba cache (``cold_s``, compiling every kernel) and with the cache it left
    (``warm_s``, loading them). None when the kernels cannot run here."""
    if not kernels.available():
        return None
    root = Path(__file__).resolve().parents[1]
    out = {}
    with tempfile.TemporaryDirectory(prefix="fptrack-numba-") as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for key in ("cold_s", "warm_s"):
            done = subprocess.run(
                [sys.executable, "-c", FIRST_CALL],
                env=env,
                cwd=root,
                capture_output=True,
                text=True,
                check=True,
            )
            out[key] = float(done.stdout.strip().splitlines()[-1])
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def run(
    docs: Sequence[str],
    repeat: int = DEFAULT_REPEAT,
    batch: int = DEFAULT_BATCH,
    peer_docs: Sequence[str] | None = None,
    progress: Callable[[str], None] | None = None,
    measure_first_call: bool = True,
) -> dict[str, Any]:
    """Time every measurement ``repeat`` times on ``docs``; return the result dict (JSON-ready).

    ``peer_docs`` (default: ``docs``) must be a prefix of ``docs``; the peers run on it.
    """
    docs = list(docs)
    if not docs:
        raise ValueError("the benchmark needs at least one document")
    if repeat < 1 or batch < 1:
        raise ValueError("repeat and batch must be >= 1")
    peer_docs = docs if peer_docs is None else list(peer_docs)
    if not peer_docs or peer_docs != docs[: len(peer_docs)]:
        raise ValueError("peer_docs must be a non-empty prefix of docs")
    say = progress or (lambda _msg: None)
    started = time.perf_counter()
    fast = kernels.available()
    first_call = None
    if fast and measure_first_call:
        say("timing the first compiled call in fresh processes ...")
        first_call = first_call_seconds()
    say(f"normalising {len(docs)} documents and loading the peers ...")
    jobs = build_measurements(docs, peer_docs, batch, fast)
    for job in jobs:  # lookup tables, OpenCC, jieba's dictionary, numpy code paths
        job.warmup()
    for r in range(repeat):
        say(f"round {r + 1}/{repeat} ...")
        for job in jobs:
            job.time_once()
    summary = {job.key: job.summary() for job in jobs}
    pipe = summary["peer_pipeline"]

    def path(key: str) -> dict[str, float] | None:
        return summary.get(f"{key}@compiled") if fast else None

    stages: dict[str, dict[str, Any]] = {}
    for key in STAGES:
        peer = PEER_OF_STAGE.get(key)
        numpy_path, fast_path = summary[key], path(key)
        best = fast_path or numpy_path
        theirs = summary[f"peer_{peer}"] if peer else None
        stages[key] = {
            "mb_s": best["mb_s"],
            "min": best["min"],
            "max": best["max"],
            "compiled": fast_path is not None,
            "numpy_mb_s": numpy_path["mb_s"],
            "numpy_min": numpy_path["min"],
            "numpy_max": numpy_path["max"],
            "compiled_mb_s": fast_path["mb_s"] if fast_path else None,
            "compiled_min": fast_path["min"] if fast_path else None,
            "compiled_max": fast_path["max"] if fast_path else None,
            "peer": PEER_LABELS[peer] if peer else None,
            "peer_mb_s": theirs["mb_s"] if theirs else None,
            "peer_min": theirs["min"] if theirs else None,
            "peer_max": theirs["max"] if theirs else None,
            "ratio": _ratio(best["mb_s"], theirs["mb_s"] if theirs else None),
            "numpy_ratio": _ratio(numpy_path["mb_s"], theirs["mb_s"] if theirs else None),
        }
    numpy_full, numpy_per_doc = summary["full_batched"], summary["full_per_doc"]
    full = path("full_batched") or numpy_full
    per_doc = path("full_per_doc") or numpy_per_doc
    ratio = full["mb_s"] / pipe["mb_s"]
    size, peer_size = utf8_size(docs), utf8_size(peer_docs)
    return {
        "fptrack_mb_s": full["mb_s"],
        "fptrack_per_doc_mb_s": per_doc["mb_s"],
        "peer_pipeline_mb_s": pipe["mb_s"],
        "ratio": ratio,
        "compiled": fast,
        "fptrack_numpy_mb_s": numpy_full["mb_s"],
        "fptrack_numpy_per_doc_mb_s": numpy_per_doc["mb_s"],
        "numpy_ratio": numpy_full["mb_s"] / pipe["mb_s"],
        "compiled_over_numpy": full["mb_s"] / numpy_full["mb_s"] if fast else None,
        "first_call": first_call,
        "stages": stages,
        "size_mb": size / MB,
        "documents": len(docs),
        "repeat": repeat,
        "python": platform.python_version(),
        "machine": machine_info(),
        "batch": batch,
        "peer_size_mb": peer_size / MB,
        "peer_documents": len(peer_docs),
        "peers_on_prefix": len(peer_docs) < len(docs),
        "per_doc_ratio": per_doc["mb_s"] / pipe["mb_s"],
        "spread": {
            "fptrack_mb_s": {"min": full["min"], "max": full["max"]},
            "fptrack_per_doc_mb_s": {"min": per_doc["min"], "max": per_doc["max"]},
            "fptrack_numpy_mb_s": {"min": numpy_full["min"], "max": numpy_full["max"]},
            "fptrack_numpy_per_doc_mb_s": {
                "min": numpy_per_doc["min"],
                "max": numpy_per_doc["max"],
            },
            "peer_pipeline_mb_s": {"min": pipe["min"], "max": pipe["max"]},
        },
        "peer_pinyin_mb_s": summary["peer_pinyin"]["mb_s"],
        "peer_datasketch_mb_s": summary["peer_datasketch"]["mb_s"],
        "targets": {
            "mb_s": TARGET_MB_S,
            "mb_s_pass": full["mb_s"] >= TARGET_MB_S,
            "ratio": TARGET_RATIO,
            "ratio_pass": ratio >= TARGET_RATIO,
        },
        "elapsed_s": time.perf_counter() - started,  # normalising, warm-up and timing
    }


def machine_info() -> str:
    """Platform, architecture, processor and CPU count, one line."""
    parts = [platform.platform(), platform.machine()]
    cpu = platform.processor() or _cpu_model()
    if cpu and cpu not in parts:
        parts.append(cpu)
    parts.append(f"{os.cpu_count()} CPUs")
    return ", ".join(p for p in parts if p)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _speed(mb_s: float | None, lo: float | None = None, hi: float | None = None) -> str:
    if mb_s is None:
        return "-"
    if lo is None or hi is None:
        return f"{mb_s:.2f}"
    return f"{mb_s:.2f} [{lo:.2f}-{hi:.2f}]"


def _headline(result: dict[str, Any], key: str) -> str:
    """A headline speed of ``result`` with its spread: ``median [min-max]``."""
    spread = result["spread"][key]
    return _speed(result[key], spread["min"], spread["max"])


def report(result: dict[str, Any], requested_mb: float | None = None) -> str:
    """The human-readable report of a :func:`run` result."""
    size, peer_size = result["size_mb"], result["peer_size_mb"]
    lines = [
        "fptrack fingerprint benchmark",
        f"python {result['python']} on {result['machine']}",
        f"corpus: {result['documents']} documents, {size:.2f} MB of UTF-8 text"
        + (f" (requested {requested_mb:g} MB)" if requested_mb is not None else ""),
    ]
    if result["peers_on_prefix"]:
        lines.append(
            f"PEERS MEASURED ON A PREFIX: the first {result['peer_documents']} documents, "
            f"{peer_size:.2f} MB (--peer-size-mb); ours on all {size:.2f} MB"
        )
    else:
        lines.append("peers: on the same documents")
    lines += [
        f"each measurement repeated {result['repeat']} times: median MB/s [min-max]",
        "MB/s = MB of the original UTF-8 documents / second, one process, time.perf_counter",
        "stages other than normalize run on text normalised beforehand (not timed)",
        "",
    ]
    rows = [("stage", "numpy MB/s", "compiled MB/s", "speed-up", "peer", "peer MB/s", "ratio")]
    for key, label in STAGES.items():
        s = result["stages"][key]
        fast = s["compiled_mb_s"]
        rows.append(
            (
                label,
                _speed(s["numpy_mb_s"], s["numpy_min"], s["numpy_max"]),
                _speed(fast, s["compiled_min"], s["compiled_max"]),
                f"{fast / s['numpy_mb_s']:.1f}x" if fast is not None else "-",
                s["peer"] or "-",
                _speed(s["peer_mb_s"], s["peer_min"], s["peer_max"]),
                f"{s['ratio']:.1f}x" if s["ratio"] is not None else "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("ratio: the faster of the two paths / the peer")
    targets = result["targets"]
    pipe = result["peer_pipeline_mb_s"]
    fast = result["compiled"]
    lines += [
        "",
        "full default fingerprint (normalise + every default fingerprint) of the original text:",
    ]
    if fast:
        lines += [
            f"  compiled, batched (fingerprint_documents, batches of {result['batch']}): "
            + _headline(result, "fptrack_mb_s")
            + f" MB/s  {result['ratio']:.1f}x the peer pipeline",
            "  compiled, per document (fingerprint_document in a loop): "
            + _headline(result, "fptrack_per_doc_mb_s")
            + f" MB/s  {result['per_doc_ratio']:.1f}x",
        ]
    else:
        lines.append("  compiled: NOT AVAILABLE here (numba missing or JIT off): numpy only")
    lines += [
        "  numpy reference, batched (compiled=False): "
        + _headline(result, "fptrack_numpy_mb_s")
        + f" MB/s  {result['numpy_ratio']:.1f}x",
        "  numpy reference, per document: "
        + _headline(result, "fptrack_numpy_per_doc_mb_s")
        + f" MB/s  {result['fptrack_numpy_per_doc_mb_s'] / pipe:.1f}x",
        f"  peer pipeline ({PEER_LABELS['pipeline']}): "
        + _headline(result, "peer_pipeline_mb_s")
        + " MB/s"
        + (f" (on {peer_size:.2f} MB prefix)" if result["peers_on_prefix"] else ""),
    ]
    if fast:
        lines.append(f"  compiled / numpy, batched: {result['compiled_over_numpy']:.1f}x")
    first = result.get("first_call")
    if first:
        lines.append(
            f"  first compiled call in a fresh process: {first['cold_s']:.1f} s compiling into"
            f" an empty cache, {first['warm_s']:.2f} s loading from the cache"
        )
    lines += [
        "",
        "targets:",
        f"  full default (batched) >= {targets['mb_s']:g} MB/s: "
        f"{'PASS' if targets['mb_s_pass'] else 'MISS'} ({result['fptrack_mb_s']:.2f} MB/s)",
        f"  full default (batched) >= {targets['ratio']:g}x peer pipeline: "
        f"{'PASS' if targets['ratio_pass'] else 'MISS'} ({result['ratio']:.1f}x)",
        "",
        f"measurements took {result['elapsed_s']:.0f} s"
        + (
            f"; {result['total_s']:.0f} s in all with loading the corpus"
            f" ({result['corpus_load_s']:.0f} s)"
            if "total_s" in result
            else ""
        ),
    ]
    return "\n".join(lines)


def _corpus_documents(size_mb: float) -> list[str]:
    """``tests.sites.corpus.documents(size_mb, DOC_BYTES)``."""
    from tests.sites import corpus

    return corpus.documents(size_mb, DOC_BYTES)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options (``--help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.fingerprint_bench",
        description="Throughput (MB/s) of fptrack's fingerprints against peer libraries.",
    )
    parser.add_argument(
        "--size-mb",
        type=float,
        default=None,
        help=f"MB of corpus text (default {DEFAULT_SIZE_MB:g}; --quick: {QUICK_SIZE_MB:g})",
    )
    parser.add_argument(
        "--peer-size-mb",
        type=float,
        default=None,
        help="measure the peers on this many MB, a prefix of the corpus (default: all of it)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help=f"repetitions of each measurement (default {DEFAULT_REPEAT}; --quick: 1)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        default=DEFAULT_BATCH,
        help=f"documents per fingerprint_documents call (default {DEFAULT_BATCH})",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write JSON here")
    parser.add_argument(
        "--docs",
        type=Path,
        default=None,
        metavar="JSON",
        help="a JSON list of documents replacing the Debian corpus (the smoke test's)",
    )
    parser.add_argument(
        "--no-first-call",
        action="store_true",
        help="skip timing the first compiled call in fresh processes (about 10 s)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 1 MB, 1 repetition (unless given)"
    )
    args = parser.parse_args(argv)
    if args.size_mb is None:
        args.size_mb = QUICK_SIZE_MB if args.quick else DEFAULT_SIZE_MB
    if args.repeat is None:
        args.repeat = QUICK_REPEAT if args.quick else DEFAULT_REPEAT
    if args.size_mb <= 0 or args.repeat < 1 or args.batch < 1:
        parser.error("--size-mb must be > 0, --repeat and --batch >= 1")
    if args.peer_size_mb is not None and args.peer_size_mb <= 0:
        parser.error("--peer-size-mb must be > 0")
    return args


def main(argv: Sequence[str] | None = None, docs: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the report, write ``--json``; returns the result dict.

    ``docs`` replaces the Debian corpus (tests pass a small synthetic one); ``--size-mb``
    then takes a prefix of it.
    """
    args = parse_args(argv)
    if docs is None and args.docs is not None:
        docs = json.loads(args.docs.read_text(encoding="utf-8"))
    progress = (lambda msg: print(msg, file=sys.stderr, flush=True)) if docs is None else None
    if progress:
        progress(f"loading {args.size_mb:g} MB of corpus ...")
    started = time.perf_counter()
    docs = prefix(docs, args.size_mb) if docs is not None else _corpus_documents(args.size_mb)
    loaded = time.perf_counter() - started
    peer_docs = None if args.peer_size_mb is None else prefix(docs, args.peer_size_mb)
    result = run(docs, args.repeat, args.batch, peer_docs, progress, not args.no_first_call)
    result["corpus_load_s"] = loaded
    result["total_s"] = time.perf_counter() - started
    print(report(result, args.size_mb))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()

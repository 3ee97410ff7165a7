"""Accuracy of fptrack against peer near-duplicate detectors on a labelled corpus of copies.

Run from the repository root as ``python -m bench.eval``; ``--help`` lists the options. The
corpus (:mod:`tests.sites.eval_corpus`) is built from real Chinese documentation
(:mod:`tests.sites.corpus`, downloaded from Debian on first use): works, and pages that copy them
in one of eleven ways, or copy nothing (negatives).

Every system answers with a set of (page, work) pairs it judges copies; precision, recall
and F1 are over those pairs, recall also per transformation class, and false positives are
counted per negative kind (``wrong_work``: a copying page paired with a work it does not
copy). Systems, in the same run on the same corpus:

* ``fptrack``: :func:`fptrack_pairs`, the matching engine on the raw page texts;
* ``minhash_lsh``: datasketch ``MinHashLSH(threshold=0.5, num_perm=128)`` over character
  3-grams; works are indexed, every page is queried (Jaccard is symmetric);
* ``minhash_lsh_ensemble``: datasketch ``MinHashLSHEnsemble(threshold=0.5, num_perm=128,
  num_part=16)``; *pages* are indexed and every *work* is queried, so a pair is reported when
  the page contains at least 50% of the work's 3-grams (|work ∩ page| / |work| >= 0.5), the
  direction in which a page that wraps a copy in chrome and ads still matches;
* ``simhash``: PyPI ``simhash.SimhashIndex(k=3)`` of ``Simhash(text)`` (64 bits, its
  default features); works are indexed, every page is queried.

The peers are given the texts converted from Traditional to Simplified (OpenCC ``t2s``), a
stronger baseline than the raw text (they know nothing of the script); whitespace runs are
folded to one space. fptrack gets the pages as crawled.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import math
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from functools import cache, partial
from pathlib import Path
from typing import Any

from bench import synthetic
from fingerprint.normalize import to_simplified
from tests.sites.eval_corpus import CLASSES, Corpus, Page, Pair, Work, build_corpus

DEFAULT_WORKS = 150
QUICK = {"works": 11, "pages_per_work": 2, "negatives_per_kind": 4, "size_mb": 2.0}
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/13"
NUM_PERM = 128
PEERS = ("minhash_lsh", "minhash_lsh_ensemble", "simhash")
TARGETS = {"precision": 0.98, "recall": 0.97, "class_recall": 0.9}
PEER_INPUT = "OpenCC t2s (Traditional -> Simplified), whitespace folded"


# --- fptrack -----------------------------------------------------------------------------
def fptrack_pairs(works: Sequence[Work], pages: Sequence[Page], redis_url: str) -> set[Pair]:
    """The (page id, work id) pairs the fptrack engine reports, on a fresh index.

    The engine keeps its indexes under a unique Redis key prefix; every key under it is
    deleted at the end, never the whole database.
    """
    from matcher.index.redis_clients import connect_url
    from matcher.matching.engine import Engine
    from matcher.settings import Settings
    from matcher.store.memory import memory_client

    prefix = f"fptrack-eval-{uuid.uuid4().hex[:12]}"
    client = connect_url(redis_url)
    settings = Settings(redis_url=redis_url, redis_prefix=prefix)
    try:
        engine = Engine.open(settings, mongo_client=memory_client(), redis_client=client)
        ids = {str(engine.add_work(w.text, title=w.title, source=w.source)): w.id for w in works}
        return {
            (page.id, ids[str(record["work_id"])])
            for page in pages
            for record in engine.process_page(page.url, page.text)
        }
    finally:
        for key in client.scan_iter(match=f"{prefix}*", count=1000):
            client.delete(key)
        client.close()


def fptrack_unavailable() -> str | None:
    """Why the engine cannot be run (None when ``matcher.matching.engine`` imports)."""
    try:
        importlib.import_module("matcher.matching.engine")
    except ImportError as exc:
        return f"matcher.matching.engine is not importable ({exc})"
    return None


# --- peers -------------------------------------------------------------------------------
def peer_text(text: str) -> str:
    """What the peers see: the text in Simplified script, whitespace runs folded."""
    return " ".join(to_simplified(text).split())


def trigrams(text: str) -> set[bytes]:
    """Character 3-grams of ``text``, UTF-8 encoded (datasketch hashes bytes)."""
    return {text[i : i + 3].encode("utf-8") for i in range(max(1, len(text) - 2))}


def _minhashes(texts: Sequence[str]) -> tuple[list[Any], list[int]]:
    from datasketch import MinHash

    grams = [trigrams(peer_text(t)) for t in texts]
    return MinHash.bulk(grams, num_perm=NUM_PERM), [len(g) for g in grams]


def minhash_lsh_pairs(works: Sequence[Work], pages: Sequence[Page]) -> set[Pair]:
    """datasketch MinHashLSH, Jaccard >= 0.5: works indexed, pages queried."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(threshold=0.5, num_perm=NUM_PERM)
    with lsh.insertion_session() as session:
        for work, m in zip(works, _minhashes([w.text for w in works])[0], strict=True):
            session.insert(work.id, m)
    page_hashes = _minhashes([p.text for p in pages])[0]
    return {(p.id, w) for p, m in zip(pages, page_hashes, strict=True) for w in lsh.query(m)}


def lsh_ensemble_pairs(works: Sequence[Work], pages: Sequence[Page]) -> set[Pair]:
    """datasketch MinHashLSHEnsemble, containment of the work in the page >= 0.5."""
    from datasketch import MinHashLSHEnsemble

    ensemble = MinHashLSHEnsemble(threshold=0.5, num_perm=NUM_PERM, num_part=16)
    hashes, sizes = _minhashes([p.text for p in pages])
    ensemble.index(zip((p.id for p in pages), hashes, sizes, strict=True))
    work_hashes, work_sizes = _minhashes([w.text for w in works])
    return {
        (page_id, work.id)
        for work, m, size in zip(works, work_hashes, work_sizes, strict=True)
        for page_id in ensemble.query(m, size)
    }


@cache
def _simhash_class() -> type:
    """PyPI ``Simhash`` with its numpy 2 overflow fixed, values as under numpy 1.

    simhash 2.1.2 multiplies a uint8 bit array by a feature's weight; under numpy 2 (NEP 50)
    a weight above 255 raises OverflowError (1e0ng/simhash issue 74, open). The bits are
    widened to int64 first, which is what numpy 1's value-based casting did.
    """
    import numpy as np
    from simhash import Simhash

    class WideSimhash(Simhash):
        @staticmethod
        def _bitarray_from_bytes(b: bytes) -> np.ndarray:
            return np.unpackbits(np.frombuffer(b, dtype=">B")).astype(np.int64)

    return WideSimhash


def simhash_pairs(works: Sequence[Work], pages: Sequence[Page]) -> set[Pair]:
    """PyPI simhash: SimhashIndex(k=3) of the works, every page queried."""
    from simhash import SimhashIndex

    Simhash = _simhash_class()
    logging.getLogger("simhash").setLevel(logging.ERROR)  # "Big bucket found" warnings
    index = SimhashIndex([(w.id, Simhash(peer_text(w.text))) for w in works], k=3)
    return {(p.id, w) for p in pages for w in index.get_near_dups(Simhash(peer_text(p.text)))}


PEER_FUNCTIONS: dict[str, Callable[[Sequence[Work], Sequence[Page]], set[Pair]]] = {
    "minhash_lsh": minhash_lsh_pairs,
    "minhash_lsh_ensemble": lsh_ensemble_pairs,
    "simhash": simhash_pairs,
}


# --- metrics -----------------------------------------------------------------------------
def run_system(
    name: str, find: Callable[[], set[Pair]], corpus: Corpus, log: Callable[[str], None]
) -> dict[str, Any]:
    """Run one system, time it and score its pairs."""
    log(f"running {name} ...")
    start = time.perf_counter()
    pairs = find()
    seconds = time.perf_counter() - start
    return corpus.score(pairs) | {"seconds": round(seconds, 3)}


# --- report ------------------------------------------------------------------------------
def _fmt(value: float | None) -> str:
    return "   n/a" if value is None else f"{value:6.3f}"


def report(result: dict[str, Any]) -> str:
    """The tables printed at the end of a run."""
    sizes = result["corpus"]
    systems = {"fptrack": result if result["fptrack_available"] else None} | result["peers"]
    wc = sizes["work_chars"]
    lines = [
        f"corpus: {sizes['works']} works ({wc['min']:,}-{wc['max']:,} chars, median "
        f"{wc['median']:,}), {sizes['pages']} pages ({sizes['positive_pages']} copies, "
        f"{sizes['negative_pages']} negatives), {sizes['positive_pairs']} (page, work) pairs, "
        f"seed {sizes['seed']}",
        f"peers are given {result['peer_input']} text (the stronger baseline); "
        "fptrack gets the raw pages",
    ]
    if not result["fptrack_available"]:
        lines.append(f"fptrack: UNAVAILABLE, {result['fptrack_error']}; only the peers ran")
    head = f"{'system':22}" + "".join(f"{h:>9}" for h in ("precision", "recall", "F1"))
    lines += ["", head + "".join(f"{h:>7}" for h in ("TP", "FP", "FN")) + f"{'seconds':>9}"]
    for name, r in systems.items():
        if r is None:
            lines.append(f"{name:22}{'n/a':>9}{'n/a':>9}{'n/a':>9}")
            continue
        row = "".join(f"{r[k]:9.3f}" for k in ("precision", "recall", "f1"))
        lines.append(f"{name:22}{row}{r['tp']:7}{r['fp']:7}{r['fn']:7}{r['seconds']:9.1f}")
    names = list(systems)
    lines += ["", "recall per class (pairs)".ljust(32) + "".join(f"{n[:20]:>21}" for n in names)]
    for cls in CLASSES:
        cells = "".join(f"{_fmt(r['per_class'][cls] if r else None):>21}" for r in systems.values())
        lines.append(f"  {cls} ({sizes['pairs_per_class'][cls]})".ljust(32) + cells)
    lines += [
        "",
        "false positives per negative kind".ljust(32) + "".join(f"{n[:20]:>21}" for n in names),
    ]
    counts = {k: f"{n} pages" for k, n in sizes["pages_per_negative_kind"].items()}
    for kind, count in (counts | {"wrong_work": "on copying pages"}).items():
        cells = "".join(
            f"{r['false_positives'][kind] if r else 'n/a':>21}" for r in systems.values()
        )
        lines.append(f"  {kind} ({count})".ljust(32) + cells)
    if result["fptrack_available"]:
        lines += ["", "targets (fptrack): " + ", ".join(
            f"{k} {'PASS' if ok else 'MISS'}" for k, ok in result["targets"].items()
        )]  # fmt: skip
    return "\n".join(lines)


def check_targets(result: dict[str, Any]) -> dict[str, bool]:
    """Whether fptrack meets each target."""
    recalls = [v for v in result["per_class"].values() if v is not None]
    return {
        f"precision>={TARGETS['precision']}": result["precision"] >= TARGETS["precision"],
        f"recall>={TARGETS['recall']}": result["recall"] >= TARGETS["recall"],
        f"class_recall>={TARGETS['class_recall']}": min(recalls) >= TARGETS["class_recall"],
        "f1>every_peer": all(result["f1"] > p["f1"] for p in result["peers"].values()),
    }


# --- command line ------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Command-line options (``--help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.eval",
        description="Precision / recall of fptrack and peers on a labelled corpus of copies.",
    )
    parser.add_argument("--works", type=int, default=None, help=f"default {DEFAULT_WORKS}")
    parser.add_argument("--seed", type=int, default=0, help="default %(default)s")
    parser.add_argument("--pages-per-work", type=int, default=None, help="default 3")
    parser.add_argument("--negatives-per-kind", type=int, default=None, help="default: --works")
    parser.add_argument(
        "--json", type=Path, default=None, metavar="OUT", help="write JSON here (default: none)"
    )
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL, help="default %(default)s")
    parser.add_argument("--quick", action="store_true", help="tiny corpus (smoke test)")
    parser.add_argument("--peers-only", action="store_true", help="do not run fptrack")
    synthetic.add_option(parser)
    args = parser.parse_args(argv)
    if args.works is not None and args.works < 2:
        parser.error("--works must be at least 2")
    return args


def main(argv: Sequence[str] | None = None, texts: Sequence[str] | None = None) -> dict:
    """Build the corpus, run every system, print the report; returns what ``--json`` writes.

    ``texts`` replaces the downloaded corpus (tests pass synthetic text).
    """
    args = parse_args(argv)
    texts = synthetic.texts(args, texts)
    quick = QUICK if args.quick else {}
    n_works = args.works or quick.get("works", DEFAULT_WORKS)
    per_work = args.pages_per_work or quick.get("pages_per_work", 3)
    negatives = args.negatives_per_kind or quick.get("negatives_per_kind")

    def log(message: str) -> None:
        print(f"[eval] {message}", file=sys.stderr, flush=True)

    started = time.perf_counter()
    if texts is None:
        from tests.sites.corpus import load_texts

        texts = load_texts(quick.get("size_mb", math.inf))
    corpus = build_corpus(texts, n_works, args.seed, per_work, negatives)
    log(f"corpus built in {time.perf_counter() - started:.1f} s")
    error = "not run (--peers-only)" if args.peers_only else fptrack_unavailable()
    if error:
        result: dict[str, Any] = {k: None for k in ("precision", "recall", "f1", "per_class")}
    else:
        find = partial(fptrack_pairs, corpus.works, corpus.pages, args.redis_url)
        result = run_system("fptrack", find, corpus, log)
    result |= {"fptrack_available": error is None, "fptrack_error": error}
    result["peers"] = {
        name: run_system(name, partial(f, corpus.works, corpus.pages), corpus, log)
        for name, f in PEER_FUNCTIONS.items()
    }
    result |= {"peer_input": PEER_INPUT, "corpus": corpus.sizes()}
    if error is None:
        result["targets"] = check_targets(result)
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    print(report(result) + f"\nrun time: {result['total_seconds']} s (corpus, fptrack and peers)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return result


if __name__ == "__main__":
    main()

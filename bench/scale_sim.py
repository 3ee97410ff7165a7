"""Scale model: load a synthetic catalogue and crawl onto a local Redis Cluster and MongoDB
server, measure what each item costs, and extrapolate to a deployment's size.

    python -m bench.scale_sim [--works 20] [--work-chars 200000] [--pages 2000]
        [--copy-share 0.1] [--masters 3] [--bucket-bits 14] [--mongo-uri URI] [--json OUT]
        [--quick]
        [--target-works 100000] [--target-chars 2e10] [--target-pages 1e9]

What it does, in one process:

1. starts a Redis Cluster of ``--masters`` masters on 127.0.0.1
   (:class:`tests.servers.local_cluster.LocalCluster`) and, unless ``--mongo-uri`` is given, a
   SecantusDB server in memory (as ``bench.pipeline_bench`` does);
2. registers ``--works`` synthetic novels of ``--work-chars`` characters each (第N章
   chapters of about 3,000 characters of Chinese words in random order), timing each;
3. stores and matches ``--pages`` chapter pages as the crawler's pipeline and the
   ``process_page`` task do (:class:`matcher.worker.ingest.Ingest`,
   :meth:`matcher.matching.engine.Engine.process_stored_page`): ``--copy-share`` of them copy a
   chapter of a registered novel (with an ad line and a changed heading), the rest are
   unrelated chapters; each page's processing is timed;
4. measures Redis memory (``used_memory`` summed over the masters, before and after each
   phase) and MongoDB's logical size (BSON bytes of the documents each phase wrote), and
   divides by the items: bytes per registered character, bytes per page;
5. extrapolates to ``--target-works`` works of ``--target-chars`` characters in all and
   ``--target-pages`` pages (default: 10^5 works, 2·10^10 characters, 10^9 pages), with
   the node sizes of :data:`NODE` (Redis nodes of 64 GiB filled to 70 %, MongoDB shards of
   2 TiB of disk filled to 70 %, 16-core worker machines), and the re-crawl rate of
   :data:`RECRAWL_DAYS` (every page once in 30 days).

The figures are measured on a sample far smaller than the target: per-item costs of the
indexes and documents do not grow with the catalogue (fixed-width records, bounded
postings per key), the cost of a page on the hot path does grow with candidate counts; the
JSON says which size was measured. ``--quick`` is a small run for the smoke test.
Defaults: 20 works of 200,000 characters, 2,000 pages, 10 % copies, 3 masters, 2^14
postings buckets (``--bucket-bits``): per-item costs depend on how full the buckets are
(each bucket key costs Redis about 100 bytes besides its records), so the sample's buckets
are sized to hold about as many postings as a deployment's sized by the rule of
docs/configuration.md.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import bson

NODE = {
    "redis_gib": 64,
    "redis_fill": 0.7,
    "mongo_tib": 2,
    "mongo_fill": 0.7,
    "worker_cores": 16,
}
RECRAWL_DAYS = 30
CHAPTER_CHARS = 3000
GIB = 2**30
TIB = 2**40


# -- synthetic text ----------------------------------------------------------------------


def vocabulary(seed: int) -> list[str]:
    """Two- to four-character words of jieba's dictionary (no download needed)."""
    from tests.sites.eval_corpus import _common_words

    words = _common_words()
    random.Random(seed).shuffle(words)
    return words


def chapter(rng: random.Random, words: Sequence[str], n: int, chars: int) -> str:
    """One 第N章 chapter of about ``chars`` characters: sentences of random words."""
    out = [f"第{n}章 {''.join(rng.sample(words, 2))}"]
    size = 0
    while size < chars:
        sentence = "".join(rng.choices(words, k=rng.randint(4, 10))) + rng.choice("，。！？")
        out.append(sentence)
        size += len(sentence)
    return "\n".join(out)


def novel(rng: random.Random, words: Sequence[str], chars: int) -> list[str]:
    """A novel's chapters, about ``chars`` characters in all."""
    count = max(1, round(chars / CHAPTER_CHARS))
    return [chapter(rng, words, n, CHAPTER_CHARS) for n in range(1, count + 1)]


# -- measuring ---------------------------------------------------------------------------


def redis_memory(client: Any) -> int:
    """``used_memory`` summed over the masters of a cluster (or of one server)."""
    from bench.index_bench import cluster_memory

    return cluster_memory(client)


def families(client: Any, prefix: str) -> dict[str, int]:
    """Redis bytes (``MEMORY USAGE``) of the index keys by family: the works' and pages'
    simhash (``sh``) and postings (``win``) indexes, the rest as ``other``."""
    out: dict[str, int] = {}
    for key in client.scan_iter(match=f"{prefix}:*", count=1000):
        name = key.decode() if isinstance(key, bytes) else key
        parts = name.split(":")
        family = ":".join(parts[1:3]) if len(parts) > 2 else "other"
        out[family] = out.get(family, 0) + int(client.memory_usage(key, samples=0) or 0)
    return dict(sorted(out.items()))


def bson_bytes(db: Any, collection: str, query: dict[str, Any] | None = None) -> int:
    """The logical size of a collection's documents (their BSON encoding)."""
    return sum(len(bson.encode(doc)) for doc in db[collection].find(query or {}))


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


# -- the run -----------------------------------------------------------------------------


def run(args: argparse.Namespace, say: Callable[[str], None]) -> dict[str, Any]:
    import pymongo

    from matcher.matching.engine import Engine
    from matcher.pages import CrawledPage
    from matcher.settings import Settings
    from matcher.worker.ingest import Ingest
    from tests.servers.local_cluster import LocalCluster

    cluster = LocalCluster(masters=args.masters)
    cluster.start()
    mongo = None
    try:
        uri = args.mongo_uri
        if not uri:
            mongo, uri = start_mongo()
        settings = Settings(
            mongo_uri=uri,
            mongo_db=f"fptrack_scale_{int(time.time())}",
            index_redis_url=cluster.url,
            redis_prefix="fptrack-scale",
            window_bucket_bits=args.bucket_bits,
        )
        client = pymongo.MongoClient(uri, tz_aware=True)
        engine = Engine.open(settings, mongo_client=client)
        db = engine.store.db
        index = engine.redis
        rng = random.Random(args.seed)
        words = vocabulary(args.seed)

        base = redis_memory(index)
        novels, register_s, chars = [], [], 0
        for w in range(args.works):
            chapters = novel(rng, words, args.work_chars)
            text = "\n".join(chapters)
            started = time.perf_counter()
            engine.add_work(text, title=f"长篇{w}", source=f"novel-{w}.txt")
            register_s.append(time.perf_counter() - started)
            novels.append(chapters)
            chars += len(text)
        works_redis = redis_memory(index) - base
        works_mongo = (
            bson_bytes(db, "works")
            + bson_bytes(db, "work_segments")
            + bson_bytes(db, "fingerprints", {"owner_kind": "work"})
        )
        say(f"{args.works} works, {chars:,} characters: {works_redis / chars:.2f} B/char Redis")

        base = redis_memory(index)
        page_ms: list[float] = []
        queued: list[str] = []
        ingest = Ingest(engine.store, queued.append)
        copies = 0
        for p in range(args.pages):
            if rng.random() < args.copy_share:
                chapters = rng.choice(novels)
                text = "本站域名 www.example.cc 请收藏\n" + rng.choice(chapters)
                copies += 1
            else:
                text = chapter(rng, words, p + 1, CHAPTER_CHARS)
            page = CrawledPage(url=f"http://pirate.test/book/{p}.html", site="pirate", title="",
                               text=text)  # fmt: skip
            queued.clear()
            ingest.page(page)
            for page_id in queued:
                started = time.perf_counter()
                engine.process_stored_page(page_id)
                page_ms.append((time.perf_counter() - started) * 1000)
        pages_redis = redis_memory(index) - base
        pages_mongo = bson_bytes(db, "pages") + bson_bytes(db, "matches")  # (fingerprints in pages)
        matches = db.matches.count_documents({"active": True})
        by_family = families(index, settings.redis_prefix)
        say(f"{args.pages} pages ({copies} copies, {matches} matches)")
        client.drop_database(settings.mongo_db)
    finally:
        cluster.stop()
        if mongo is not None:
            mongo.terminate()
            mongo.wait(10)
    measured = {
        "works": args.works,
        "work_chars": chars,
        "pages": args.pages,
        "copies": copies,
        "matches": matches,
        "masters": args.masters,
        "bucket_bits": args.bucket_bits,
        "redis_bytes_per_work_char": works_redis / chars,
        "redis_bytes_per_page": pages_redis / args.pages,
        "mongo_bytes_per_work_char": works_mongo / chars,
        "mongo_bytes_per_page": pages_mongo / args.pages,
        "register_s_per_million_chars": sum(register_s) / chars * 1e6,
        "page_p50_ms": statistics.median(page_ms),
        "page_p99_ms": percentile(page_ms, 99),
        "redis_bytes_by_family": by_family,
    }
    return {"measured": measured, "target": extrapolate(measured, args)}


def extrapolate(m: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The target deployment's sizes from the measured per-item costs."""
    chars, pages = args.target_chars, args.target_pages
    redis_bytes = m["redis_bytes_per_work_char"] * chars + m["redis_bytes_per_page"] * pages
    mongo_bytes = m["mongo_bytes_per_work_char"] * chars + m["mongo_bytes_per_page"] * pages
    redis_node = NODE["redis_gib"] * GIB * NODE["redis_fill"]
    mongo_shard = NODE["mongo_tib"] * TIB * NODE["mongo_fill"]
    pages_per_s = pages / (RECRAWL_DAYS * 86400)
    cores = pages_per_s * m["page_p50_ms"] / 1000
    return {
        "works": args.target_works,
        "work_chars": chars,
        "pages": pages,
        "redis_gib": redis_bytes / GIB,
        "redis_nodes": max(1, math.ceil(redis_bytes / redis_node)),
        "mongo_tib": mongo_bytes / TIB,
        "mongo_shards": max(1, math.ceil(mongo_bytes / mongo_shard)),
        "recrawl_pages_per_s": pages_per_s,
        "worker_cores": cores,
        "worker_machines": max(1, math.ceil(cores / NODE["worker_cores"])),
        "register_all_hours": m["register_s_per_million_chars"] * chars / 1e6 / 3600,
        "node": NODE,
    }


def start_mongo(storage: str = ":memory:") -> tuple[Any, str]:
    """SecantusDB on a free port (``secantusd-py``, the test extra), in memory or in the
    directory ``storage``."""
    import shutil
    import subprocess

    from tests.servers.net import free_port, wait_for_port

    binary = shutil.which("secantusd-py")
    if binary is None:
        raise SystemExit("secantusd-py not found: pip install -e '.[test]', or give --mongo-uri")
    port = free_port()
    argv = [binary, "--host", "127.0.0.1", "--port", str(port), "--storage-path", storage]
    server = subprocess.Popen([*argv, "--standalone", "--log-level", "WARNING"])
    if wait_for_port("127.0.0.1", port, 30, process=server):
        return server, f"mongodb://127.0.0.1:{port}"
    server.kill()
    raise SystemExit("secantusd-py did not start")


def report(result: dict[str, Any]) -> str:
    m, t = result["measured"], result["target"]
    return "\n".join(
        [
            f"measured on {m['works']} works ({m['work_chars']:,} chars), {m['pages']} pages,"
            f" {m['masters']} Redis masters:",
            f"  Redis   {m['redis_bytes_per_work_char']:.2f} B per work char,"
            f" {m['redis_bytes_per_page']:,.0f} B per page",
            f"  MongoDB {m['mongo_bytes_per_work_char']:.2f} B per work char,"
            f" {m['mongo_bytes_per_page']:,.0f} B per page (BSON)",
            "  Redis keys by family: "
            + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in m["redis_bytes_by_family"].items()),
            f"  register {m['register_s_per_million_chars']:.2f} s per million chars;"
            f" page p50 {m['page_p50_ms']:.1f} ms, p99 {m['page_p99_ms']:.1f} ms",
            f"target: {t['works']:,} works, {t['work_chars']:.3g} chars, {t['pages']:.3g} pages",
            f"  Redis   {t['redis_gib']:,.0f} GiB -> {t['redis_nodes']} nodes of"
            f" {NODE['redis_gib']} GiB at {NODE['redis_fill']:.0%}",
            f"  MongoDB {t['mongo_tib']:,.1f} TiB -> {t['mongo_shards']} shards of"
            f" {NODE['mongo_tib']} TiB at {NODE['mongo_fill']:.0%}",
            f"  re-crawl every {RECRAWL_DAYS} days: {t['recrawl_pages_per_s']:,.0f} pages/s,"
            f" {t['worker_cores']:,.0f} cores ({t['worker_machines']} machines of"
            f" {NODE['worker_cores']})",
            f"  registering every work once: {t['register_all_hours']:,.1f} core-hours",
        ]
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.scale_sim", description=__doc__.split("\n")[0]
    )
    p.add_argument("--works", type=int, default=20, help="(default: %(default)s)")
    p.add_argument("--work-chars", type=int, default=200_000, help="(default: %(default)s)")
    p.add_argument("--pages", type=int, default=2000, help="(default: %(default)s)")
    p.add_argument("--copy-share", type=float, default=0.1, help="(default: %(default)s)")
    p.add_argument("--masters", type=int, default=3, help="(default: %(default)s)")
    p.add_argument("--mongo-uri", default="", help="(default: a SecantusDB started here)")
    p.add_argument("--seed", type=int, default=0, help="(default: %(default)s)")
    p.add_argument(
        "--bucket-bits",
        type=int,
        default=14,
        help="FPTRACK_WINDOW_BUCKET_BITS: buckets about as full as a deployment's"
        " (default: %(default)s)",
    )
    p.add_argument("--target-works", type=int, default=100_000, help="(default: %(default)s)")
    p.add_argument("--target-chars", type=float, default=2e10, help="(default: %(default)s)")
    p.add_argument("--target-pages", type=float, default=1e9, help="(default: %(default)s)")
    p.add_argument("--json", type=Path, help="write the figures here")
    p.add_argument("--quick", action="store_true", help="3 works of 30,000 chars, 60 pages")
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    if args.quick:
        args.works, args.work_chars, args.pages, args.copy_share = 3, 30_000, 60, 0.3
        args.bucket_bits = 12
    result = run(args, lambda line: print(line, file=sys.stderr, flush=True))
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()

"""Index scale: Redis bytes per registered character, a chapter page's cost against a
catalogue of novels, and the time to register a novel; datasketch beside it.

    python -m bench.scale_bench [--works 100] [--min-chars 20000] [--max-chars 2000000]
        [--novels 100] [--novel-chars 2000000] [--pages 300] [--bucket-bits N]
        [--redis-url URL] [--mongo-uri URI] [--repeat 3] [--json OUT] [--quick]
    python -m bench.scale_bench --register N [--novel-chars 2000000] [--json OUT]

Three measurements, each on a private ``redis-server`` started on a free port (or
``--redis-url``: its database must be empty, as ``used_memory`` is read) and a SecantusDB
server on disk in a temporary directory (or ``--mongo-uri``):

1. ``bytes_per_char``: ``--works`` synthetic novels (:mod:`bench.scale_sim`'s 第N章 chapters
   of Chinese words) of ``--min-chars`` to ``--max-chars`` characters, lengths spaced
   geometrically, registered with :meth:`matcher.matching.engine.Engine.add_work`; Redis
   ``used_memory`` after, less before, over the characters registered: everything the
   index holds, all-in. Beside it, datasketch ``MinHashLSH`` (Redis storage, 128
   permutations, threshold 0.5) holding the same works' segments, one MinHash each.
2. ``page_p50_ms``, ``page_p99_ms``, ``pages_per_s``: ``--novels`` novels of
   ``--novel-chars`` characters registered, then ``--pages`` chapter pages (3,000
   characters: half copy a chapter with an ad line added, half are unrelated chapters)
   each matched by :meth:`Engine.find_works` after :func:`matcher.matching.prepared.prepare`, as the
   ``process_page`` task does before it writes; the pages go round ``--repeat`` times, the
   first round with an empty segment cache (``cold``), the others as a worker runs
   (``warm``). ``pages_per_s`` is the warm rounds' pages over their time, one core.
   datasketch's query of the same pages' MinHashes against its LSH of the novels'
   segments is timed beside it (MinHash computed outside the timing).
3. ``register_2m_s``: the median time of :meth:`Engine.add_work` of the novels of step 2
   (``--novel-chars`` each), store writes and index included.

Targets (issue 14): bytes_per_char <= 2, page p50 <= 10 ms, p99 <= 50 ms, >= 100 pages/s,
register_2m_s <= 2.

``--register N`` runs a fourth measurement alone: ``N`` novels of ``--novel-chars`` registered
(the buckets sized as step 2's), each timed by the wall clock and by CPU seconds, which load
does not change: this process's (``time.process_time``) and, read from ``/proc``, that of
each server started here; ``register_wall_s``, ``register_cpu_s`` and
``register_server_cpu_s`` are the medians.

``--bucket-bits`` is ``FPTRACK_WINDOW_BUCKET_BITS``; by default each step sizes it as
docs/configuration.md tells a deployment to, for the characters it registers
(:func:`matcher.index.window_index.bucket_bits_for`: buckets of about 70 postings; 17 for
step 1's 43 million characters, 19 for step 2's 200 million). ``--quick`` is the smoke test's run.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.scale_sim import chapter, novel, percentile, start_mongo, vocabulary

CHAPTER_CHARS = 3000
LSH_PERM = 128
LSH_THRESHOLD = 0.5
AD_LINE = "本站域名 www.example.cc 请收藏 最新章节抢先看\n"


def start_redis() -> tuple[subprocess.Popen, str]:
    """A private redis-server on a free port, keeping nothing on disk."""
    import redis

    from matcher.index.redis_clients import COMMAND, connect_url
    from tests.servers.net import free_port, wait_until

    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = free_port()
    argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly"]
    server = subprocess.Popen([*argv, "no"], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"

    def answers() -> bool:
        try:
            return bool(connect_url(url, COMMAND).ping())
        except redis.ConnectionError:
            return server.poll() is not None  # exited: no use waiting

    if wait_until(answers, 30) and server.poll() is None:
        return server, url
    server.kill()
    raise SystemExit("redis-server did not start")


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process, all its threads (``/proc/PID/stat``)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def used_memory(client: Any) -> int:
    return int(client.info("memory")["used_memory"])


def lengths(n: int, low: int, high: int) -> list[int]:
    """``n`` lengths from ``low`` to ``high``, spaced geometrically."""
    if n == 1:
        return [high]
    return [round(low * (high / low) ** (i / (n - 1))) for i in range(n)]


def minhash(text: str) -> Any:
    """datasketch MinHash of the text's character 3-grams (the peer's usual input)."""
    from datasketch import MinHash

    m = MinHash(num_perm=LSH_PERM)
    m.update_batch([text[i : i + 3].encode() for i in range(max(1, len(text) - 2))])
    return m


class Bench:
    """One run's servers, engine and figures."""

    def __init__(self, args: argparse.Namespace, say: Callable[[str], None]) -> None:
        self.args, self.say = args, say
        self.procs: list[subprocess.Popen] = []
        self.tmp = tempfile.TemporaryDirectory(prefix="fptrack-scale-")

    def __enter__(self) -> Bench:
        from matcher.index.redis_clients import connect_url

        url = self.args.redis_url
        self.servers: dict[str, int] = {}
        if not url:
            proc, url = start_redis()
            self.procs.append(proc)
            self.servers["redis"] = proc.pid
        self.redis = connect_url(url)
        if self.redis.dbsize():
            raise SystemExit(f"{url} is not empty: give an empty Redis (used_memory is read)")
        uri = self.args.mongo_uri
        if not uri:
            proc, uri = start_mongo(self.tmp.name)
            self.procs.append(proc)
            self.servers["mongo"] = proc.pid
        self.mongo_uri = uri
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.terminate()
            proc.wait(30)
        self.tmp.cleanup()

    def engine(self, name: str, chars: float) -> Any:
        import pymongo

        from matcher.index.window_index import bucket_bits_for
        from matcher.matching.engine import Engine
        from matcher.settings import Settings

        self.redis.flushdb()
        settings = Settings(
            mongo_uri=self.mongo_uri,
            mongo_db=f"fptrack_scale_{name}_{int(time.time())}",
            redis_prefix="fptrack-scale",
            window_bucket_bits=self.args.bucket_bits or bucket_bits_for(chars),
        )
        client = pymongo.MongoClient(self.mongo_uri, tz_aware=True)
        return Engine.open(settings, mongo_client=client, redis_client=self.redis)

    def lsh(self, prefix: str) -> Any:
        from datasketch import MinHashLSH

        kwargs = self.redis.connection_pool.connection_kwargs
        host, port = kwargs["host"], kwargs["port"]
        config = {
            "type": "redis",
            "basename": prefix.encode(),
            "redis": {"host": host, "port": port},
        }
        return MinHashLSH(threshold=LSH_THRESHOLD, num_perm=LSH_PERM, storage_config=config)

    # 1 ---------------------------------------------------------------------------------

    def bytes_per_char(self) -> dict[str, Any]:
        from fingerprint.segments import segment
        from matcher.matching.registry import SEGMENT_PARAMS

        args = self.args
        sizes = lengths(args.works, args.min_chars, args.max_chars)
        engine = self.engine("bytes", sum(sizes))
        rng, words = random.Random(args.seed), vocabulary(args.seed)
        self.say(f"1. {args.works} works of {sizes[0]:,} to {sizes[-1]:,} characters ...")
        before, chars, texts = used_memory(self.redis), 0, []
        for w, size in enumerate(sizes):
            text = "\n".join(novel(rng, words, size))
            engine.add_work(text, title=f"作品{w}", source=f"work-{w}.txt")
            chars += len(text)
            if w < args.peer_works:
                texts.append(text)
        ours = (used_memory(self.redis) - before) / chars
        engine.store.client.drop_database(engine.settings.mongo_db)
        self.redis.flushdb()
        # The peer: the first works' segments, one MinHash each, in MinHashLSH.
        hashes = [minhash(t[s.start : s.stop]) for t in texts for s in segment(t, SEGMENT_PARAMS)]
        before = used_memory(self.redis)
        lsh = self.lsh("peer-bytes")
        with lsh.insertion_session() as session:
            for i, m in enumerate(hashes):
                session.insert(f"s{i}", m)
        peer = (used_memory(self.redis) - before) / sum(len(t) for t in texts)
        self.redis.flushdb()
        self.say(f"   {ours:.2f} B/char (datasketch MinHashLSH {peer:.2f} B/char)")
        bits = engine.settings.window_bucket_bits
        return {"bytes_per_char": ours, "chars": chars, "peer_bytes_per_char": peer, "bits": bits}

    # 2, 3 ------------------------------------------------------------------------------

    def pages(self) -> dict[str, Any]:
        from fingerprint.segments import segment
        from matcher.matching.prepared import prepare
        from matcher.matching.registry import SEGMENT_PARAMS
        from matcher.matching.segment_cache import SegmentCache

        args = self.args
        engine = self.engine("pages", args.novels * args.novel_chars)
        rng, words = random.Random(args.seed + 1), vocabulary(args.seed)
        self.say(f"2. {args.novels} novels of {args.novel_chars:,} characters ...")
        register_s, chapters = [], []
        peer_lsh, peer_hashes = self.lsh("peer-pages"), 0
        for n in range(args.novels):
            parts = novel(rng, words, args.novel_chars)
            text = "\n".join(parts)
            started = time.perf_counter()
            engine.add_work(text, title=f"长篇{n}", source=f"novel-{n}.txt")
            register_s.append(time.perf_counter() - started)
            chapters.append(parts)
            if n < args.peer_works:
                with peer_lsh.insertion_session() as session:
                    for s in segment(text, SEGMENT_PARAMS):
                        session.insert(f"n{n}s{s.index}", minhash(text[s.start : s.stop]))
                        peer_hashes += 1
            if (n + 1) % 10 == 0:
                self.say(f"   {n + 1} registered, median {statistics.median(register_s):.2f} s")
        texts = []
        for p in range(args.pages):
            if p % 2 == 0:
                texts.append(AD_LINE + rng.choice(rng.choice(chapters)[1:]))
            else:
                texts.append(chapter(rng, words, p + 1, CHAPTER_CHARS))
        self.say(f"   {args.pages} pages x {args.repeat} rounds (the first cold) ...")
        engine.segments.cache = SegmentCache(engine.segments.cache.max_bytes)
        rounds, matched = [], 0
        for r in range(args.repeat):
            times = []
            for text in texts:
                started = time.perf_counter()
                verdicts = engine.find_works(prepare(text))
                times.append(time.perf_counter() - started)
                if r == 0:
                    matched += any(v.matched for v in verdicts)
            rounds.append(times)
        warm = [t for times in rounds[1:] for t in times] or rounds[0]
        peer_queries = [minhash(t) for t in texts[: args.peer_pages]]
        peer_times = []
        for m in peer_queries:
            started = time.perf_counter()
            peer_lsh.query(m)
            peer_times.append(time.perf_counter() - started)
        engine.store.client.drop_database(engine.settings.mongo_db)
        self.redis.flushdb()
        return {
            "page_p50_ms": percentile(warm, 50) * 1000,
            "page_p99_ms": percentile(warm, 99) * 1000,
            "pages_per_s": len(warm) / sum(warm),
            "cold_page_p50_ms": percentile(rounds[0], 50) * 1000,
            "cold_page_p99_ms": percentile(rounds[0], 99) * 1000,
            "copies_matched": matched,
            "copies": (args.pages + 1) // 2,
            "register_2m_s": statistics.median(register_s),
            "register_s": register_s,
            "catalogue_chars": args.novels * args.novel_chars,
            "catalogue_bucket_bits": engine.settings.window_bucket_bits,
            "peer_query_p50_ms": percentile(peer_times, 50) * 1000 if peer_times else None,
            "peer_segments": peer_hashes,
        }

    # 4 ---------------------------------------------------------------------------------

    def register(self) -> dict[str, Any]:
        args = self.args
        engine = self.engine("register", args.novels * args.novel_chars)
        rng, words = random.Random(args.seed + 1), vocabulary(args.seed)
        self.say(f"4. {args.register} novels of {args.novel_chars:,} characters ...")
        wall, cpu, server = [], [], []
        for n in range(args.register):
            text = "\n".join(novel(rng, words, args.novel_chars))
            servers = {name: cpu_seconds(pid) for name, pid in self.servers.items()}
            started, ticks = time.perf_counter(), time.process_time()
            engine.add_work(text, title=f"长篇{n}", source=f"novel-{n}.txt")
            wall.append(time.perf_counter() - started)
            cpu.append(time.process_time() - ticks)
            server.append({k: cpu_seconds(pid) - servers[k] for k, pid in self.servers.items()})
            used = ", ".join(f"{k} {v:.2f}" for k, v in server[-1].items())
            self.say(f"   {wall[-1]:.2f} s wall, {cpu[-1]:.2f} s CPU (servers: {used or '-'})")
        engine.store.client.drop_database(engine.settings.mongo_db)
        self.redis.flushdb()
        return {
            "register_wall_s": statistics.median(wall),
            "register_cpu_s": statistics.median(cpu),
            "register_server_cpu_s": {
                k: statistics.median(s[k] for s in server) for k in self.servers
            },
            "register_runs": [
                {"wall_s": w, "cpu_s": c, "server_cpu_s": s}
                for w, c, s in zip(wall, cpu, server, strict=True)
            ],
            "novel_chars": args.novel_chars,
            "catalogue_bucket_bits": engine.settings.window_bucket_bits,
        }


def register_report(r: dict[str, Any]) -> str:
    servers = ", ".join(f"{k} {v:.2f}" for k, v in r["register_server_cpu_s"].items())
    return "\n".join(
        [
            f"register a novel of {r['novel_chars']:,} characters, medians of"
            f" {len(r['register_runs'])}:",
            f"  wall {r['register_wall_s']:.2f} s, CPU {r['register_cpu_s']:.2f} s"
            f" (servers' CPU: {servers or 'not started here'})",
        ]
    )


def report(r: dict[str, Any]) -> str:
    peer = r.get("peer_query_p50_ms")
    rows = [
        ("Redis bytes per registered character", f"{r['bytes_per_char']:.2f}", "<= 2"),
        ("  datasketch MinHashLSH, same works", f"{r['peer_bytes_per_char']:.2f}", ""),
        ("page p50 ms (warm)", f"{r['page_p50_ms']:.1f}", "<= 10"),
        ("page p99 ms (warm)", f"{r['page_p99_ms']:.1f}", "<= 50"),
        ("pages/s, one core (warm)", f"{r['pages_per_s']:.0f}", ">= 100"),
        ("page p50 / p99 ms (cold cache)",
         f"{r['cold_page_p50_ms']:.1f} / {r['cold_page_p99_ms']:.1f}", ""),
        ("  datasketch LSH query p50 ms (MinHash not timed)",
         "-" if peer is None else f"{peer:.2f}", ""),
        ("register a novel, s (median)", f"{r['register_2m_s']:.2f}", "<= 2"),
        ("copies matched", f"{r['copies_matched']} / {r['copies']}", ""),
    ]  # fmt: skip
    width = max(len(a) for a, _, _ in rows)
    return "\n".join(f"{a:<{width}}  {b:>14}  {c}" for a, b, c in rows)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.scale_bench", description=__doc__.split("\n")[0]
    )
    d = "(default: %(default)s)"
    p.add_argument("--works", type=int, default=100, help=d)
    p.add_argument("--min-chars", type=int, default=20_000, help=d)
    p.add_argument("--max-chars", type=int, default=2_000_000, help=d)
    p.add_argument("--novels", type=int, default=100, help=d)
    p.add_argument("--novel-chars", type=int, default=2_000_000, help=d)
    p.add_argument("--pages", type=int, default=300, help=d)
    p.add_argument("--repeat", type=int, default=3, help=d)
    p.add_argument(
        "--bucket-bits", type=int, default=0, help="(default: sized for each step's characters)"
    )
    p.add_argument("--peer-works", type=int, default=10, help="works datasketch holds " + d)
    p.add_argument("--peer-pages", type=int, default=100, help="pages datasketch queries " + d)
    p.add_argument(
        "--register", type=int, default=0, metavar="N",
        help="only register N novels of --novel-chars: wall and CPU seconds",
    )  # fmt: skip
    p.add_argument("--redis-url", default="", help="(default: a redis-server started here)")
    p.add_argument("--mongo-uri", default="", help="(default: a SecantusDB started here)")
    p.add_argument("--seed", type=int, default=0, help=d)
    p.add_argument("--json", type=Path, help="write the figures here")
    p.add_argument("--quick", action="store_true", help="4 works, 3 novels of 100,000, 20 pages")
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    if args.quick:
        args.works, args.min_chars, args.max_chars = 4, 20_000, 100_000
        args.novels, args.novel_chars, args.pages, args.repeat = 3, 100_000, 20, 2
        args.peer_works, args.peer_pages = 2, 10
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    # A terminated run still stops the servers it started (the context manager's exit).
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        with Bench(args, say) as bench:
            result = bench.register() if args.register else bench.bytes_per_char() | bench.pages()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.register:
        print(register_report(result))
        if args.json:
            args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        return result
    result["bytes_ratio_to_peer"] = result["bytes_per_char"] / result["peer_bytes_per_char"]
    print(report(result))
    if args.json:
        out = {k: v for k, v in result.items() if k != "register_s"}
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()

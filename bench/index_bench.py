"""The Redis simhash index (matcher.index.simhash_index) against peer indexes, on real-text
simhashes.

Run from the repository root as ``python -m bench.index_bench`` (or ``python
bench/index_bench.py``); ``--help`` lists the options. It needs the Redis server of
``--redis-url`` (default ``redis://127.0.0.1:6379/12``, a database of its own). The database
is flushed only when it holds nothing but this benchmark's keys (prefix ``fptrack-bench``);
otherwise only those keys are deleted.

Fingerprints: windows of the Debian corpus (:mod:`tests.sites.corpus`, normalised): a text is
picked in proportion to its length, then a window of its content-character 3-grams, of a
length drawn log-uniformly from 8 to 2000 3-grams, at a uniform offset. Each window's value
is the 64-bit simhash of its 3-gram hashes weighted by term frequency, exactly
``fingerprint.simhash.simhash_of_hashes`` (the library's default char simhash), computed for
millions of windows at once from per-text prefix sums of the hash bits; every run checks
:data:`CHECKED_WINDOWS` of them against the library's function and stops on a difference
(``checked_windows`` in the JSON). Overlapping windows
make real near-duplicates and uneven buckets. The skewed set takes the same values and
overwrites, in about half of them, one 16-bit block with one of 8 hot values (chosen by a
hash of the value's top byte, so near-duplicates stay near-duplicates): each of the 4
tables then has about 8 buckets of n / 64 fingerprints.

Queries: half are stored fingerprints with 0 to 3 random bits flipped, half are windows
that were not stored (with the same skew applied for the skewed set). Batched throughput is
``query_many`` over batches of ``--batch``; latency is one ``query`` call at a time.
Memory is the server's ``used_memory`` (INFO memory) after the load minus before it, all in:
buckets, record ids, keys, directory; divided by n.

Peers, in the same run, on the first ``--peer-n`` fingerprints (they are far slower to
load): PyPI ``simhash.SimhashIndex`` (in memory, k = 3; memory = growth of the process's
resident set) and datasketch ``MinHashLSH`` (threshold 0.8, 128 permutations) with
``storage_config={"type": "redis", ...}`` on the same server (memory = used_memory delta).
Datasketch indexes MinHashes, not simhashes: each window's fptrack OPH MinHash, wrapped in
``datasketch.MinHash`` outside the timing. Neither peer batches queries: they have only a
one-by-one rate (single queries in a loop), which is also measured for fptrack.

Redis Cluster (``--cluster``): in the same run, the real-text set is loaded into a
cluster of one master and a cluster of three (:class:`tests.servers.local_cluster.LocalCluster`,
``redis-server`` processes on free ports of 127.0.0.1, started and stopped by the benchmark)
through the cluster client of :func:`matcher.index.redis_io.connect`, and the same queries are
timed: queries/s on three nodes against one. Memory is the growth of ``used_memory`` summed
over the masters. All the servers and this process share the machine's cores, so on a
machine of a few cores the figure measures the cost of cutting a batch per node, not a
speed-up.

Every measurement is repeated ``--repeat`` times in rounds; medians are reported.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import logging
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import redis

from bench import synthetic
from fingerprint.hashing import fmix64
from fingerprint.minhash import oph_signature
from fingerprint.normalize import normalize
from fingerprint.simhash import simhash_of_hashes
from fingerprint.tokens import ngram_hash_array
from matcher.index.redis_clients import connect_url
from matcher.index.redis_io import IndexClient, connect
from matcher.index.simhash_index import SimhashIndex, SimhashIndexParams
from matcher.index.storage import RedisStorage
from matcher.settings import IndexRedis
from tests.servers.net import wait_until

PREFIX = "fptrack-bench"
DEFAULT_URL = "redis://127.0.0.1:6379/12"
DEFAULT_N = 1_000_000
DEFAULT_PEER_N = 100_000
DEFAULT_REPEAT = 3
DEFAULT_QUERIES = 20_000
DEFAULT_LATENCY_QUERIES = 2_000
DEFAULT_BATCH = 1_000
MIN_GRAMS, MAX_GRAMS = 8, 2000
HOT_VALUES = 8
TARGETS = {"bytes_per_fingerprint": 64.0, "queries_per_s": 20_000.0, "p99_ms": 2.0}
TARGET_SKEW = 2.0
NUM_PERM = 128
CHECKED_WINDOWS = 64
"""How many of a run's windows have their fast simhash checked against the library's."""
LSH_THRESHOLD = 0.8


@dataclass
class Corpus:
    """Per text: its 3-gram hashes and the prefix sums of their bits are built on demand."""

    hashes: list[np.ndarray]

    @classmethod
    def from_texts(cls, texts: Sequence[str]) -> Corpus:
        arrays = [ngram_hash_array(normalize(t).text, 3)[0] for t in texts]
        return cls([h for h in arrays if len(h) >= MIN_GRAMS])

    def windows(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` windows as rows (text, start, length) in 3-grams."""
        sizes = np.array([len(h) for h in self.hashes], dtype=np.float64)
        text = rng.choice(len(sizes), count, p=sizes / sizes.sum())
        length = np.exp(rng.uniform(math.log(MIN_GRAMS), math.log(MAX_GRAMS), count))
        length = np.minimum(length.astype(np.int64), sizes[text].astype(np.int64))
        start = (rng.random(count) * (sizes[text] - length + 1)).astype(np.int64)
        return np.stack([text, start, length], axis=1)

    def simhashes(self, windows: np.ndarray) -> np.ndarray:
        """The tf-weighted simhash of each window's 3-gram hashes (prefix sums of hash bits)."""
        out = np.empty(len(windows), dtype=np.uint64)
        order = np.argsort(windows[:, 0], kind="stable")
        bounds = np.searchsorted(windows[order, 0], np.arange(len(self.hashes) + 1))
        for text, (a, b) in enumerate(itertools.pairwise(bounds.tolist())):
            if a == b:
                continue
            rows = order[a:b]
            h = self.hashes[text]
            octets = h.astype("<u8").view(np.uint8).reshape(-1, 8)
            bits = np.unpackbits(octets, axis=1, bitorder="little")
            sums = np.zeros((len(h) + 1, 64), dtype=np.int32)
            np.cumsum(bits, axis=0, out=sums[1:])
            start, length = windows[rows, 1], windows[rows, 2]
            votes = 2 * (sums[start + length] - sums[start]) - length[:, None]
            packed = np.packbits(votes > 0, axis=1, bitorder="little")
            out[rows] = packed.view("<u8").ravel()
        return out

    def grams(self, window: np.ndarray) -> np.ndarray:
        text, start, length = (int(x) for x in window)
        return self.hashes[text][start : start + length]


def check_simhashes(corpus: Corpus, windows: np.ndarray, values: np.ndarray) -> int:
    """Check the first :data:`CHECKED_WINDOWS` fast window simhashes against
    ``simhash_of_hashes`` of the same 3-grams (term frequencies as weights); a difference
    stops the run. Returns how many were checked."""
    checked = min(CHECKED_WINDOWS, len(windows))
    for window, value in zip(windows[:checked], values[:checked].tolist(), strict=True):
        hashes, tf = np.unique(corpus.grams(window), return_counts=True)
        expected = simhash_of_hashes(hashes, tf.astype(np.float64))
        if value != expected:
            raise SystemExit(
                f"index_bench: the fast simhash of window {window.tolist()} is {value:#x}, "
                f"the library's {expected:#x}"
            )
    return checked


def skew(values: np.ndarray, seed: int) -> np.ndarray:
    """About half the values get one 16-bit block overwritten by one of 8 hot values.

    Whether, which block and which hot value are functions of the value's top byte, so
    near-duplicates (which mostly share it) stay near-duplicates: the skewed set has hot
    buckets, not fewer matches.
    """
    rng = np.random.default_rng(seed)
    hot = rng.integers(0, 1 << 16, (4, HOT_VALUES)).astype(np.uint64)
    h = fmix64((values >> np.uint64(56)) + np.uint64(seed))
    chosen = (h & np.uint64(1)).astype(bool)
    table = ((h >> np.uint64(1)) & np.uint64(3)).astype(np.int64)
    shift = table.astype(np.uint64) * np.uint64(16)
    value = hot[table, ((h >> np.uint64(3)) % np.uint64(HOT_VALUES)).astype(np.int64)]
    out = values.copy()
    mask = np.uint64(0xFFFF) << shift[chosen]
    out[chosen] = (out[chosen] & ~mask) | (value[chosen] << shift[chosen])
    return out


def flip_bits(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each value with 0 to 3 random bits flipped (a flip may repeat and cancel)."""
    out = values.copy()
    for _ in range(3):
        flip = rng.random(len(out)) < 0.7
        bits = rng.integers(0, 64, len(out)).astype(np.uint64)
        out[flip] ^= np.uint64(1) << bits[flip]
    return out


@dataclass
class Workload:
    """Stored fingerprints, queries (half stored-and-perturbed, half fresh), both sets."""

    values: np.ndarray
    skewed: np.ndarray
    queries: np.ndarray
    skewed_queries: np.ndarray
    stored_windows: np.ndarray
    query_windows: np.ndarray  # the window each query came from (for the MinHash peer)
    checked_windows: int  # how many fast simhashes were checked against the library's


def make_workload(corpus: Corpus, n: int, queries: int, seed: int) -> Workload:
    rng = np.random.default_rng(seed)
    fresh = queries // 2
    windows = corpus.windows(n + fresh, rng)
    values = corpus.simhashes(windows)
    checked = check_simhashes(corpus, windows, values)
    stored, new = values[:n], values[n:]
    picked = rng.integers(0, n, queries - fresh)
    skewed_all = skew(values, seed + 1)
    mix = rng.permutation(queries)
    return Workload(
        values=stored,
        skewed=skewed_all[:n],
        queries=np.concatenate([flip_bits(stored[picked], rng), new])[mix],
        skewed_queries=np.concatenate([flip_bits(skewed_all[picked], rng), skewed_all[n:]])[mix],
        stored_windows=windows[:n],
        query_windows=np.concatenate([windows[picked], windows[n:]])[mix],
        checked_windows=checked,
    )


# -- measurements ---------------------------------------------------------------------------


def used_memory(client: redis.Redis) -> int:
    """The server's used_memory once lazily freed objects are gone."""
    wait_until(lambda: not client.info("memory").get("lazyfree_pending_objects"), 10)
    return int(client.info("memory")["used_memory"])


def timed(fn: Callable[[], object]) -> float:
    """Seconds ``fn()`` takes."""
    return timed_value(fn)[0]


def timed_value(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds ``fn()`` takes, and what it returns."""
    gc.collect()
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def latencies(fn: Callable[[int], object], values: np.ndarray) -> list[float]:
    """Seconds of each single call."""
    out = []
    for value in values.tolist():
        start = time.perf_counter()
        fn(value)
        out.append(time.perf_counter() - start)
    return out


def percentile_ms(samples: list[float], q: float) -> float:
    return float(np.percentile(samples, q)) * 1e3


class Runs:
    """Samples per measurement name, summarised by their median."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}

    def add(self, name: str, value: float) -> None:
        self.samples.setdefault(name, []).append(value)

    def median(self, name: str) -> float | None:
        values = self.samples.get(name)
        return statistics.median(values) if values else None


def run_ours(
    client: redis.Redis, work: Workload, args: argparse.Namespace, runs: Runs, say
) -> dict[str, Any]:
    sets = {"uniform": (work.values, work.queries), "skewed": (work.skewed, work.skewed_queries)}
    variants = {name: SimhashIndexParams() for name in sets}
    if args.permuted:
        sets["permuted"] = sets["uniform"]
        variants["permuted"] = SimhashIndexParams(permuted=True)
    storage = RedisStorage(client)
    indexes = {name: SimhashIndex(storage, f"{PREFIX}:{name}", p) for name, p in variants.items()}
    ids = np.arange(args.n, dtype=np.uint32)
    stats: dict[str, dict] = {}
    for r in range(args.repeat):
        for name, index in indexes.items():
            values, queries = sets[name]
            say(f"round {r + 1}/{args.repeat}: fptrack {name}: loading {args.n} ...")
            index.clear()
            before = used_memory(client)
            runs.add(f"{name}.load_s", timed(lambda i=index, v=values: i.bulk_load(ids, v)))
            runs.add(f"{name}.bytes", (used_memory(client) - before) / args.n)
            stats[name] = index.stats()
        for name, index in indexes.items():
            values, queries = sets[name]
            say(f"round {r + 1}/{args.repeat}: fptrack {name}: queries ...")
            index.query_many(queries[: args.batch])  # warm: directory, scripts, code paths

            def batched(i=index, q=queries) -> None:
                for a in range(0, len(q), args.batch):
                    i.query_many(q[a : a + args.batch])

            runs.add(f"{name}.qps", len(queries) / timed(batched))
            lat = latencies(index.query, queries[: args.latency_queries])
            runs.add(f"{name}.single_qps", len(lat) / sum(lat))
            runs.add(f"{name}.p50", percentile_ms(lat, 50))
            runs.add(f"{name}.p99", percentile_ms(lat, 99))
            hits = index.query_many(queries[: args.batch])
            runs.add(f"{name}.hits", float(np.mean([len(h) for h in hits])))
    for index in indexes.values():
        index.clear()
    return {name: summary(runs, name, args.n) | {"stats": stats[name]} for name in indexes}


def cluster_memory(client: IndexClient) -> int:
    """used_memory summed over a cluster's masters (or of one server)."""
    nodes = client.get_primaries() if hasattr(client, "get_primaries") else None
    if nodes is None:
        return used_memory(client)
    return sum(used_memory(client.get_redis_connection(node)) for node in nodes)


def run_cluster(work: Workload, args: argparse.Namespace, runs: Runs, say) -> dict[str, Any]:
    """The real-text set on a cluster of one master and one of three, the same queries."""
    from tests.servers.local_cluster import LocalCluster

    ids = np.arange(args.n, dtype=np.uint32)
    out = {}
    for masters in (1, 3):
        name = f"cluster{masters}"
        with LocalCluster(masters) as cluster:
            client = connect(IndexRedis.parse(cluster.url))
            index = SimhashIndex(RedisStorage(client), f"{PREFIX}:{name}", SimhashIndexParams())
            for r in range(args.repeat):
                say(f"round {r + 1}/{args.repeat}: {name}: loading {args.n} ...")
                index.clear()
                before = cluster_memory(client)
                runs.add(f"{name}.load_s", timed(lambda i=index: i.bulk_load(ids, work.values)))
                runs.add(f"{name}.bytes", (cluster_memory(client) - before) / args.n)
                index.query_many(work.queries[: args.batch])
                say(f"round {r + 1}/{args.repeat}: {name}: queries ...")

                def batched(i=index, q=work.queries) -> None:
                    for a in range(0, len(q), args.batch):
                        i.query_many(q[a : a + args.batch])

                runs.add(f"{name}.qps", len(work.queries) / timed(batched))
                lat = latencies(index.query, work.queries[: args.latency_queries])
                runs.add(f"{name}.single_qps", len(lat) / sum(lat))
                runs.add(f"{name}.p50", percentile_ms(lat, 50))
                runs.add(f"{name}.p99", percentile_ms(lat, 99))
                hits = index.query_many(work.queries[: args.batch])
                runs.add(f"{name}.hits", float(np.mean([len(h) for h in hits])))
            stats = index.stats()
            out[name] = summary(runs, name, args.n) | {"stats": stats, "masters": masters}
            client.close()
    return out


def summary(runs: Runs, name: str, n: int) -> dict[str, Any]:
    return {
        "n": n,
        "load_s": runs.median(f"{name}.load_s"),
        "bytes_per_fingerprint": runs.median(f"{name}.bytes"),
        "queries_per_s": runs.median(f"{name}.qps"),
        "single_queries_per_s": runs.median(f"{name}.single_qps"),
        "p50_ms": runs.median(f"{name}.p50"),
        "p99_ms": runs.median(f"{name}.p99"),
        "mean_hits": runs.median(f"{name}.hits"),
    }


def rss_bytes() -> int:
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # pragma: no cover - not Linux
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_simhash_peer(work: Workload, args: argparse.Namespace, runs: Runs, say) -> dict:
    """PyPI simhash.SimhashIndex (in memory), on the uniform and the skewed set."""
    from simhash import Simhash
    from simhash import SimhashIndex as PeerIndex

    logging.getLogger("simhash").setLevel(logging.ERROR)  # no "Big bucket found" per query
    n = args.peer_n
    sets = {
        "simhash": (work.values[:n], work.queries),
        "simhash_skewed": (work.skewed[:n], work.skewed_queries),
    }
    for r in range(args.repeat):
        for name, (values, queries) in sets.items():
            say(f"round {r + 1}/{args.repeat}: {name}: loading {n} ...")
            objs = [(str(i), Simhash(v)) for i, v in enumerate(values.tolist())]
            gc.collect()
            before = rss_bytes()
            seconds, index = timed_value(lambda o=objs: PeerIndex(o, k=3))
            runs.add(f"{name}.load_s", seconds)
            runs.add(f"{name}.bytes", (rss_bytes() - before) / n)
            few = [Simhash(q) for q in queries[: args.peer_queries].tolist()]
            lat = latencies(lambda i, x=index, f=few: x.get_near_dups(f[i]), np.arange(len(few)))
            runs.add(f"{name}.single_qps", len(lat) / sum(lat))
            runs.add(f"{name}.p50", percentile_ms(lat, 50))
            runs.add(f"{name}.p99", percentile_ms(lat, 99))
            del index, objs
    return {name: summary(runs, name, n) for name in sets}


def run_datasketch_peer(
    corpus: Corpus, work: Workload, args: argparse.Namespace, runs: Runs, say
) -> dict:
    """datasketch MinHashLSH with Redis storage, on the same server."""
    from datasketch import MinHash, MinHashLSH

    n = args.peer_n
    kw = connect_url(args.redis_url).connection_pool.connection_kwargs
    config = {
        "type": "redis",
        "basename": f"{PREFIX}:ds".encode(),
        "redis": {k: kw[k] for k in ("host", "port", "db", "password") if kw.get(k) is not None},
    }

    def minhash(window: np.ndarray) -> MinHash:
        sig = oph_signature(corpus.grams(window), NUM_PERM).astype(np.uint64)
        return MinHash(num_perm=NUM_PERM, hashvalues=sig, scheme="affine32")

    say(f"datasketch: {n + args.peer_queries} MinHashes (not timed) ...")
    stored = [minhash(w) for w in work.stored_windows[:n]]
    asked = [minhash(w) for w in work.query_windows[: args.peer_queries]]
    client = connect_url(args.redis_url)
    for r in range(args.repeat):
        say(f"round {r + 1}/{args.repeat}: datasketch: inserting {n} ...")
        clear_prefix(client, f"{PREFIX}:ds")
        before = used_memory(client)
        lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM, storage_config=config)

        def insert(lsh=lsh) -> None:
            with lsh.insertion_session(buffer_size=10_000) as session:
                for i, m in enumerate(stored):
                    session.insert(i, m, check_duplication=False)

        runs.add("datasketch.load_s", timed(insert))
        runs.add("datasketch.bytes", (used_memory(client) - before) / n)
        lat = latencies(lambda i, lsh=lsh: lsh.query(asked[i]), np.arange(len(asked)))
        runs.add("datasketch.single_qps", len(lat) / sum(lat))
        runs.add("datasketch.p50", percentile_ms(lat, 50))
        runs.add("datasketch.p99", percentile_ms(lat, 99))
    clear_prefix(client, f"{PREFIX}:ds")
    return {"datasketch": summary(runs, "datasketch", n) | {"bands": list(_bands(lsh))}}


def _bands(lsh) -> tuple[int, int]:
    return lsh.b, lsh.r


def clear_prefix(client: redis.Redis, prefix: str) -> None:
    keys = list(client.scan_iter(match=prefix + "*", count=1000))
    for a in range(0, len(keys), 1000):
        client.unlink(*keys[a : a + 1000])


def prepare_database(client: redis.Redis) -> str:
    """Flush the database if it holds nothing but this benchmark's keys; else clear ours."""
    foreign = any(not k.startswith(PREFIX.encode()) for k in client.scan_iter(count=1000))
    if foreign:
        clear_prefix(client, PREFIX)
        return "kept (it holds other keys; only the benchmark's own were deleted)"
    client.flushdb()
    return "flushed (it held only the benchmark's keys)"


# -- report ---------------------------------------------------------------------------------

PEERS = ("simhash", "simhash_skewed", "datasketch")
LABELS = {
    "uniform": "fptrack SimhashIndex (real-text set)",
    "skewed": "fptrack SimhashIndex (skewed set)",
    "permuted": "fptrack SimhashIndex permuted (real-text set)",
    "simhash": "PyPI simhash.SimhashIndex (in memory)",
    "simhash_skewed": "PyPI simhash.SimhashIndex (skewed set)",
    "datasketch": "datasketch MinHashLSH (redis storage)",
    "cluster1": "fptrack SimhashIndex on a 1-master Redis Cluster",
    "cluster3": "fptrack SimhashIndex on a 3-master Redis Cluster",
}


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def report(result: dict[str, Any]) -> str:
    head = ("index", "n", "load s", "bytes/fp", "batched q/s", "1-by-1 q/s", "p50 ms", "p99 ms")
    rows = [(*head, "hits/q")]
    for name, row in result["rows"].items():
        rows.append(
            (
                LABELS[name],
                f"{row['n']:,}",
                _fmt(row["load_s"], 2),
                _fmt(row["bytes_per_fingerprint"]),
                _fmt(row["queries_per_s"], 0),
                _fmt(row["single_queries_per_s"], 0),
                _fmt(row["p50_ms"], 3),
                _fmt(row["p99_ms"], 3),
                _fmt(row.get("mean_hits")),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "fptrack simhash index benchmark",
        f"python {result['python']} on {result['machine']}; redis {result['redis_version']}",
        f"database {result['redis_url']}: {result['database']}",
        f"fingerprints: {result['fingerprints']}",
        f"queries: {result['queries']} ({result['batch']} per query_many call), "
        f"{result['latency_queries']} single queries for latency; medians of "
        f"{result['repeat']} rounds",
        "",
    ]
    for i, row in enumerate(rows):
        pairs = enumerate(zip(row, widths, strict=True))
        cells = [c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in pairs]
        lines.append("  ".join(cells))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines += ["", "ratios (fptrack on the real-text set / peer):"]
    for peer, ratio in result["ratios"].items():
        parts = [f"{k} {_fmt(v, 1)}x" for k, v in ratio.items()]
        lines.append(f"  vs {LABELS[peer]}: " + ", ".join(parts))
    if result.get("cluster"):
        c = result["cluster"]
        lines.append(
            f"  3-master / 1-master cluster: batched queries/s {_fmt(c['batched_ratio'], 2)}x,"
            f" one-by-one {_fmt(c['single_ratio'], 2)}x (every server and this process share"
            f" {os.cpu_count()} cores: this measures the cost of cutting batches per node)"
        )
    lines += [
        f"  skew cost (query time per query, skewed / real-text set): "
        f"{_fmt(result['skew_cost_ratio'], 2)}"
        + (
            f"; PyPI simhash: {_fmt(result['peer_skew_cost_ratio'], 2)}"
            if result.get("peer_skew_cost_ratio")
            else ""
        ),
        "",
        f"targets at n = {result['n']:,}:",
    ]
    for key, (target, value, ok) in result["targets"].items():
        lines.append(f"  {key} {target}: {'PASS' if ok else 'MISS'} ({_fmt(value, 3)})")
    lines.append(f"took {result['elapsed_s']:.0f} s")
    return "\n".join(lines)


def _ratios(rows: dict[str, dict]) -> dict[str, dict[str, float]]:
    ours = rows["uniform"]
    out = {}
    for peer in ("simhash", "datasketch"):
        if peer not in rows:
            continue
        theirs = rows[peer]
        out[peer] = {
            "batched queries/s vs theirs 1-by-1": _div(
                ours["queries_per_s"], theirs["single_queries_per_s"]
            ),
            "1-by-1 queries/s": _div(ours["single_queries_per_s"], theirs["single_queries_per_s"]),
            "p50 speed-up": _div(theirs["p50_ms"], ours["p50_ms"]),
            "memory saving": _div(theirs["bytes_per_fingerprint"], ours["bytes_per_fingerprint"]),
            "load speed-up (per fingerprint)": _div(
                theirs["load_s"] / theirs["n"], ours["load_s"] / ours["n"]
            ),
        }
    return out


def _meets(value: float | None, target: float, at_least: bool) -> bool:
    if value is None:
        return False
    return value >= target if at_least else value <= target


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def run(texts: Sequence[str] | None, args: argparse.Namespace, say) -> dict[str, Any]:
    started = time.perf_counter()
    client = connect_url(args.redis_url)
    database = prepare_database(client)
    say("fingerprinting corpus windows ...")
    corpus = Corpus.from_texts(texts if texts is not None else _corpus_texts())
    work = make_workload(corpus, args.n, args.queries, args.seed)
    runs = Runs()
    rows = run_ours(client, work, args, runs, say)
    if not args.no_peers:
        rows |= run_simhash_peer(work, args, runs, say)
        rows |= run_datasketch_peer(corpus, work, args, runs, say)
    cluster = None
    if args.cluster:
        rows |= run_cluster(work, args, runs, say)
        one, three = rows["cluster1"], rows["cluster3"]
        cluster = {
            "one_node": one,
            "three_nodes": three,
            "batched_ratio": _div(three["queries_per_s"], one["queries_per_s"]),
            "single_ratio": _div(three["single_queries_per_s"], one["single_queries_per_s"]),
            "cpus": os.cpu_count(),
        }
    uniform, skewed = rows["uniform"], rows["skewed"]
    skew_ratio = _div(uniform["queries_per_s"], skewed["queries_per_s"])
    peer_skew = None
    if "simhash" in rows:
        peer_skew = _div(
            rows["simhash"]["single_queries_per_s"], rows["simhash_skewed"]["single_queries_per_s"]
        )
    bytes_fp = uniform["bytes_per_fingerprint"]
    targets = {
        "bytes_per_fingerprint <=": (TARGETS["bytes_per_fingerprint"], bytes_fp),
        "queries_per_s >=": (TARGETS["queries_per_s"], uniform["queries_per_s"]),
        "p99_ms <=": (TARGETS["p99_ms"], uniform["p99_ms"]),
        "skew_cost_ratio <=": (TARGET_SKEW, skew_ratio),
    }
    checked = {
        key: (target, value, _meets(value, target, at_least=">=" in key))
        for key, (target, value) in targets.items()
    }
    peers = {name: row for name, row in rows.items() if name in PEERS}
    return {
        "n": args.n,
        "bytes_per_fingerprint": uniform["bytes_per_fingerprint"],
        "queries_per_s": uniform["queries_per_s"],
        "p50_ms": uniform["p50_ms"],
        "p99_ms": uniform["p99_ms"],
        "skew_cost_ratio": skew_ratio,
        "load_s": uniform["load_s"],
        "peers": peers,
        "peer_n": None if args.no_peers else args.peer_n,
        "peer_skew_cost_ratio": peer_skew,
        "cluster": cluster,
        "rows": rows,
        "ratios": _ratios(rows),
        "targets": checked,
        "fingerprints": (
            f"{args.n:,} simhashes of corpus windows ({MIN_GRAMS}-{MAX_GRAMS} 3-grams, "
            f"log-uniform lengths, uniform offsets); skewed set: about half with one 16-bit "
            f"block set to one of {HOT_VALUES} hot values, picked by a hash of the top byte"
        ),
        "checked_windows": work.checked_windows,
        "queries": args.queries,
        "latency_queries": args.latency_queries,
        "batch": args.batch,
        "repeat": args.repeat,
        "redis_url": args.redis_url,
        "database": database,
        "redis_version": client.info("server")["redis_version"],
        "python": platform.python_version(),
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "elapsed_s": time.perf_counter() - started,
    }


def _corpus_texts() -> list[str]:
    """Every text of :mod:`tests.sites.corpus`."""
    from tests.sites import corpus

    return corpus.load_texts(math.inf)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.index_bench",
        description="Redis simhash index: memory, load time, queries/s, latency, skew; peers.",
    )
    parser.add_argument(
        "--n", type=int, default=DEFAULT_N, help="fingerprints (default %(default)s)"
    )
    parser.add_argument(
        "--peer-n",
        type=int,
        default=DEFAULT_PEER_N,
        help="fingerprints for peers (default %(default)s)",
    )
    parser.add_argument(
        "--repeat", type=int, default=DEFAULT_REPEAT, help="rounds (default %(default)s)"
    )
    parser.add_argument(
        "--queries", type=int, default=DEFAULT_QUERIES, help="batched queries (default %(default)s)"
    )
    parser.add_argument(
        "--latency-queries",
        type=int,
        default=DEFAULT_LATENCY_QUERIES,
        help="single queries timed one by one (default %(default)s)",
    )
    parser.add_argument(
        "--peer-queries",
        type=int,
        default=DEFAULT_LATENCY_QUERIES,
        help="queries per peer (default %(default)s)",
    )
    parser.add_argument(
        "--batch", type=int, default=DEFAULT_BATCH, help="queries per call (default %(default)s)"
    )
    parser.add_argument("--redis-url", default=DEFAULT_URL, help=f"default {DEFAULT_URL}")
    parser.add_argument("--permuted", action="store_true", help="also the permuted tables")
    parser.add_argument("--no-peers", action="store_true", help="skip the peer indexes")
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="also a local Redis Cluster of 1 and of 3 masters (started by the benchmark)",
    )
    parser.add_argument("--seed", type=int, default=1, help="default %(default)s")
    parser.add_argument(
        "--json", type=Path, default=None, metavar="OUT", help="write JSON here (default: none)"
    )
    synthetic.add_option(parser)
    args = parser.parse_args(argv)
    sizes = (args.n, args.peer_n, args.repeat, args.queries, args.latency_queries, args.batch)
    if min(sizes) < 1 or args.peer_queries < 1:
        parser.error("sizes and counts must be >= 1")
    args.peer_n = min(args.peer_n, args.n)
    args.latency_queries = min(args.latency_queries, args.queries)
    args.peer_queries = min(args.peer_queries, args.queries)
    return args


def main(argv: Sequence[str] | None = None, texts: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, print the report, write ``--json``; returns the result dict.

    ``texts`` replaces the Debian corpus (the smoke test passes a small synthetic one).
    """
    args = parse_args(argv)
    texts = synthetic.texts(args, texts)
    quiet = texts is not None
    say = (lambda _msg: None) if quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    result = run(texts, args, say)
    print(report(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, default=float) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return result


if __name__ == "__main__":
    main()

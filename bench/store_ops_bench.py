"""What a page's writes cost the one-machine store: SecantusDB's CPU per operation.

The pipeline benchmark (:mod:`bench.pipeline_bench`) shows the store's CPU a page; this one
splits it by the writes a page needs, on documents shaped like stored pages (a 3,000
character text, the fields the pages' indexes cover: ``names``, ``around``, links, times), in
a collection with the pages' indexes (:data:`matcher.store.INDEXES`) and, as the baseline,
in one without: how a page is stored (a bulk insert of new pages, or a bulk upsert by
``_id`` and URL, which first looks its filter up) and how its processed mark is written
(with the conditions of :meth:`matcher.store.page_marks.PageMarks.mark_processed`: ``_id``, text
hash and links, or by ``_id`` alone). CPU is the server process's, read from ``/proc``
(:mod:`bench.proc_cpu`) around each bulk write of ``--docs`` documents; medians over
``--runs`` runs, each on a new SecantusDB in memory (``secantusd-py``, extra ``test``).

    python -m bench.store_ops_bench --json bench/out/store_ops.json   # 600 documents, 3 runs
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

DEFAULT_DOCS = 600
DEFAULT_RUNS = 3
TEXT_CHARS = 3000
OPERATIONS = ("insert", "upsert", "conditional mark", "mark by _id")


def page_doc(n: int) -> dict[str, Any]:
    """A document shaped like a stored page (the fields the pages' indexes cover)."""
    url = f"http://pirate.test/book/{n}.html"
    now = time.time()
    return {
        "_id": n,
        "url": url,
        "seq": n,
        "site": "pirate",
        "title": f"第{n}章",
        "text": "字" * TEXT_CHARS,
        "content_hash": f"h{n}",
        "fetched_at": now,
        "last_seen": now,
        "pending": True,
        "next_url": f"{url}?next",
        "prev_url": f"{url}?prev",
        "around": [n, n + 1, n - 1],
        "names": [n, n + 10_000_000],
    }


def mark_fields(n: int) -> dict[str, Any]:
    return {"processed_hash": f"h{n}", "pending": False, "processed_at": time.time()}


def writes(docs: int) -> dict[str, Callable[[Any], Any]]:
    """Each operation as one bulk write of ``docs`` documents on a collection."""
    from pymongo import UpdateOne

    def insert(coll: Any) -> Any:
        return coll.insert_many([page_doc(n) for n in range(docs)], ordered=False)

    def upsert(coll: Any) -> Any:
        ops = [
            UpdateOne({"_id": n, "url": page_doc(n)["url"]}, {"$set": page_doc(n)}, upsert=True)
            for n in range(docs)
        ]
        return coll.bulk_write(ops, ordered=False)

    def conditional(coll: Any) -> Any:
        ops = []
        for n in range(docs):
            d = page_doc(n)
            query = {"_id": n, "content_hash": d["content_hash"]}
            query.update(next_url=d["next_url"], prev_url=d["prev_url"])
            ops.append(UpdateOne(query, {"$set": mark_fields(n)}))
        return coll.bulk_write(ops, ordered=False)

    def by_id(coll: Any) -> Any:
        ops = [UpdateOne({"_id": n}, {"$set": mark_fields(n)}) for n in range(docs)]
        return coll.bulk_write(ops, ordered=False)

    return {
        "insert": insert,
        "upsert": upsert,
        "conditional mark": conditional,
        "mark by _id": by_id,
    }


def one_run(docs: int, logs: Path) -> dict[str, dict[str, float]]:
    """Server CPU ms per operation, per collection kind (``indexed``, ``plain``)."""
    import pymongo

    from bench.pipeline_support import Child
    from bench.proc_cpu import cpu_seconds
    from matcher.store import INDEXES

    server = Child("mongo-server", ["mongo-server"], logs / "mongodb.log")
    try:
        uri = server.wait_ready(60)
        client: Any = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10_000)
        db = client.fptrack_store_ops_bench
        out: dict[str, dict[str, float]] = {}
        for kind, indexes in (("indexed", INDEXES["pages"]), ("plain", [])):
            coll = db[f"pages_{kind}"]
            if indexes:
                coll.create_indexes(indexes)
            out[kind] = {}
            for name, write in writes(docs).items():
                if name == "upsert":
                    coll.delete_many({})  # the upserts insert, as the inserts did
                before = cpu_seconds(server.proc.pid)
                write(coll)
                out[kind][name] = (cpu_seconds(server.proc.pid) - before) * 1000 / docs
        client.close()
        return out
    finally:
        server.stop()


def measure(docs: int, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="fptrack-store-ops-") as tmp:
        rounds = [one_run(docs, Path(tmp)) for _ in range(runs)]
    figures: dict[str, Any] = {}
    for kind in ("indexed", "plain"):
        figures[kind] = {
            name: statistics.median(r[kind][name] for r in rounds) for name in OPERATIONS
        }
    figures["indexed_over_plain"] = {
        name: figures["indexed"][name] / max(figures["plain"][name], 1e-9) for name in OPERATIONS
    }
    return {
        "ms_per_op": figures,
        "runs": rounds,
        "sizes": {"docs": docs, "runs": runs, "text_chars": TEXT_CHARS},
    }


def print_report(result: dict[str, Any]) -> None:
    f, sizes = result["ms_per_op"], result["sizes"]
    print(
        f"store operations: SecantusDB CPU per operation, ms (medians of {sizes['runs']} runs, "
        f"{sizes['docs']} page-shaped documents a bulk write)"
    )
    print(f"  {'operation':<18} {'pages indexes':>14} {'no indexes':>11} {'ratio':>7}")
    for name in OPERATIONS:
        print(
            f"  {name:<18} {f['indexed'][name]:>14.2f} {f['plain'][name]:>11.2f}"
            f" {f['indexed_over_plain'][name]:>6.1f}x"
        )
    ratio = f["indexed"]["upsert"] / max(f["indexed"]["insert"], 1e-9)
    print(f"  an upsert costs {ratio:.1f}x an insert with the pages' indexes")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.store_ops_bench",
        description=__doc__.splitlines()[0] if __doc__ else None,
    )
    p.add_argument("--docs", type=int, default=DEFAULT_DOCS, help="default %(default)s")
    p.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="default %(default)s")
    p.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = p.parse_args(argv)
    if args.docs < 1 or args.runs < 1:
        p.error("--docs and --runs must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    result = measure(args.docs, args.runs)
    print_report(result)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    from bench.pipeline_support import ChildFailed

    try:
        main()
    except ChildFailed as exc:
        raise SystemExit(f"store_ops_bench: {exc}") from None

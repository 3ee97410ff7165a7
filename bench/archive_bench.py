"""What the evidence archive costs per page: bytes kept and time to write, store and verify.

Issue 16, part 1. The pages of the pipeline benchmark's imitation pirate site
(:mod:`bench.pipeline_site`, built from the real corpus, or any texts given) are each turned
into the :class:`matcher.evidence.archive.Exchange` the crawler records (an nginx-like response with
the page as body, UTF-8, or GBK for every third page as on many pirate sites, and the
crawler's request), then:

- ``warc``: :func:`matcher.evidence.archive.warc_bytes` (two gzipped WARC records through warcio,
  with their digests), its size and time per page;
- ``verify``: :func:`matcher.evidence.archive.verify` of that file (SHA-256 and both digests);
- ``store``: :meth:`DirectoryArchive.put` (temporary file, fsync, rename) and
  :meth:`GridFSArchive.put` into SecantusDB (in memory, a separate process; skipped with
  ``--no-gridfs``), per page.

Peers, same pages and run: the least a kept copy of the body costs, ``gzip.compress`` of
the body alone at level 6 (what warcio uses), its size and time; and the raw body. Ratios:
WARC file / gzip of the body (bytes and time).

Trusted timestamps (issue 26, part 1; skipped with ``--no-tsa`` or without ``openssl``):
a real TSA, OpenSSL's ``openssl ts -reply`` behind an HTTP server on 127.0.0.1
(:mod:`tests.servers.local_tsa`), stamps the run's WARC files two ways: one token per file (``stamp
per file``, what stamping each record alone costs) and one token over the batch list of all
of them (:func:`matcher.evidence.timestamps.batch_list`, ``stamp per crawl``, per file).
Verification
per token: :func:`matcher.evidence.timestamps.check` (rfc3161-client) beside the peer, OpenSSL's own
``openssl ts -verify`` of the same token and list (a process each, as a recipient runs it);
and per file, what ``fptrack evidence verify`` does: its WARC digests, that the list names it
and the token (:func:`admin.evidence_check.check_file`). Bytes: the token, and the list's
share per file. Medians over ``--runs`` (3) runs, with
[min-max]. ``--json OUT`` writes every figure. ``--quick``: 100 pages, 1 run (unless
``--pages`` or ``--runs`` say otherwise).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import synthetic
from bench.pipeline_bench import spread
from bench.pipeline_site import build_site
from bench.pipeline_support import Child
from matcher.evidence.archive import DirectoryArchive, Exchange, GridFSArchive, verify, warc_bytes
from tests.sites.corpus import load_texts

DEFAULT_PAGES = 1000
DEFAULT_RUNS = 3
REQUEST_HEADERS = (
    ("User-Agent", "fptrack (+https://github.com/fptrack)"),
    ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
    ("Accept-Language", "zh-CN,zh;q=0.9"),
    ("Accept-Encoding", "gzip, deflate, br, zstd"),
)


def exchanges(folder: Path, limit: int) -> list[Exchange]:
    """The crawler's record of each page file of the site in ``folder``."""
    out = []
    for n, path in enumerate(sorted((folder / "p").glob("*.html"))[:limit]):
        html = path.read_text(encoding="utf-8")
        charset = "gbk" if n % 3 == 2 else "utf-8"
        body = html.encode(charset, "replace")
        headers = (
            ("Server", "nginx/1.24.0"),
            ("Date", "Fri, 27 Nov 2026 04:05:06 GMT"),
            ("Content-Type", f"text/html; charset={charset}"),
            ("Content-Encoding", "gzip"),
            ("Vary", "Accept-Encoding"),
            ("Cache-Control", "max-age=600"),
        )
        out.append(
            Exchange(
                url=f"http://pirate.example/p/{path.name}",
                status=200,
                reason="OK",
                response_headers=headers,
                body=body,
                fetched_at=datetime(2026, 11, 27, 4, 5, 6, tzinfo=UTC),
                request_headers=REQUEST_HEADERS,
            )
        )
    return out


def timed(items: Sequence[Any], work: Callable[[Any], Any]) -> tuple[float, list[Any]]:
    """Seconds per item of ``work`` over ``items``, and its results."""
    started = time.perf_counter()
    results = [work(x) for x in items]
    return (time.perf_counter() - started) / max(len(items), 1), results


def one_run(
    pages: list[Exchange], gridfs_uri: str | None, tsa_root: Path | None = None
) -> dict[str, float]:
    warc_s, files = timed(pages, warc_bytes)
    gzip_s, gzipped = timed(pages, lambda x: gzip.compress(x.body, 6))
    verify_s, _ = timed(files, verify)
    with tempfile.TemporaryDirectory(prefix="fptrack-archive-bench-") as tmp:
        folder = DirectoryArchive(Path(tmp))
        put_dir_s, _ = timed(files, folder.put)
    run = {
        "pages": len(pages),
        "body_bytes": statistics.median(len(x.body) for x in pages),
        "warc_bytes": statistics.median(len(f) for f in files),
        "gzip_bytes": statistics.median(len(g) for g in gzipped),
        "warc_ms": warc_s * 1000,
        "gzip_ms": gzip_s * 1000,
        "verify_ms": verify_s * 1000,
        "put_dir_ms": put_dir_s * 1000,
    }
    if tsa_root is not None:
        run.update(stamping(files, tsa_root))
    if gridfs_uri:
        import pymongo

        client = pymongo.MongoClient(gridfs_uri)
        db = client[f"archive_bench_{time.time_ns()}"]
        try:
            put_gridfs_s, _ = timed(files, GridFSArchive(db).put)
            run["put_gridfs_ms"] = put_gridfs_s * 1000
        finally:
            client.drop_database(db.name)
            client.close()
    return run


def stamping(files: list[bytes], tsa_root: Path) -> dict[str, float]:
    """The trusted-timestamp figures of one run over ``files`` (see the module docstring)."""
    import subprocess

    from admin.evidence_check import Batches, check_file
    from matcher.evidence import timestamps
    from matcher.evidence.archive import sha256_hex
    from tests.servers.local_tsa import TsaServer, make_authority

    authority = make_authority(tsa_root / f"tsa-{time.time_ns()}")
    roots = timestamps.load_roots(authority.ca)
    digests = [sha256_hex(f) for f in files]
    alone = digests[: min(len(digests), 50)]  # a token per file: a TSA round trip each
    with TsaServer(authority) as tsa:
        per_file_s, tokens = timed(
            alone, lambda d: timestamps.ask(tsa.tsa_url, timestamps.batch_list([d]))
        )
        started = time.perf_counter()
        listed = timestamps.batch_list(digests)
        token = timestamps.ask(tsa.tsa_url, listed)
        batch_s = time.perf_counter() - started
    check_s, _ = timed(range(20), lambda _: timestamps.check(token.der, listed, roots))
    stamp = (listed, token.der, "bench")
    batches = Batches(roots)  # as a bundle's check: the list read and the token checked once
    file_s, checked = timed(
        list(zip(files, digests, strict=True)),
        lambda fd: check_file("f", fd[0], fd[1], stamp, batches),
    )
    assert all(c.ok for c in checked), [c.problems for c in checked if not c.ok][:1]
    with tempfile.TemporaryDirectory(dir=tsa_root) as tmp:
        (Path(tmp) / "list.txt").write_bytes(listed)
        (Path(tmp) / "token.tsr").write_bytes(token.der)
        command = ["openssl", "ts", "-verify", "-data", "list.txt", "-in", "token.tsr"]
        command += ["-CAfile", str(authority.ca)]

        def openssl_verify(_: object) -> None:
            ran = subprocess.run(command, cwd=tmp, capture_output=True, text=True, check=False)
            assert "Verification: OK" in ran.stdout, ran.stderr

        openssl_s, _ = timed(range(10), openssl_verify)
    return {
        "stamp_per_file_ms": per_file_s * 1000,
        "stamp_crawl_ms": batch_s * 1000,
        "stamp_crawl_per_file_ms": batch_s * 1000 / len(files),
        "token_bytes": statistics.median(len(t.der) for t in tokens),
        "list_bytes_per_file": len(listed) / len(files),
        "check_token_ms": check_s * 1000,
        "openssl_verify_ms": openssl_s * 1000,
        "verify_file_ms": file_s * 1000,
    }


def summarise(runs: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {key: spread([r[key] for r in runs]) for key in runs[0]}
    median = {k: v["median"] for k, v in out.items()}
    out["ratios"] = {
        "warc_over_gzip_bytes": median["warc_bytes"] / median["gzip_bytes"],
        "warc_over_body_bytes": median["warc_bytes"] / median["body_bytes"],
        "warc_over_gzip_time": median["warc_ms"] / median["gzip_ms"],
    }
    if "stamp_per_file_ms" in median:
        out["ratios"]["stamp_per_file_over_per_crawl"] = (
            median["stamp_per_file_ms"] / median["stamp_crawl_per_file_ms"]
        )
        out["ratios"]["check_token_over_openssl"] = (
            median["check_token_ms"] / median["openssl_verify_ms"]
        )
    return out


def report(summary: dict[str, Any]) -> str:
    def row(label: str, key: str, unit: str) -> str:
        s = summary[key]
        return f"  {label:<40} {s['median']:>10.2f} {unit:<3} [{s['min']:.2f}-{s['max']:.2f}]"

    lines = [
        f"evidence archive, {int(summary['pages']['median'])} pages (medians per page)",
        row("page body", "body_bytes", "B"),
        row("WARC file (response + request)", "warc_bytes", "B"),
        row("peer: gzip of the body alone", "gzip_bytes", "B"),
        row("write the WARC file (warcio)", "warc_ms", "ms"),
        row("peer: gzip.compress of the body", "gzip_ms", "ms"),
        row("verify (SHA-256 and digests)", "verify_ms", "ms"),
        row("store in a folder (fsync)", "put_dir_ms", "ms"),
    ]
    if "put_gridfs_ms" in summary:
        lines.append(row("store in GridFS (SecantusDB)", "put_gridfs_ms", "ms"))
    if "stamp_per_file_ms" in summary:
        lines += [
            row("timestamp: a token per file", "stamp_per_file_ms", "ms"),
            row("timestamp: a token per crawl, per file", "stamp_crawl_per_file_ms", "ms"),
            row("timestamp: the crawl's token", "stamp_crawl_ms", "ms"),
            row("token", "token_bytes", "B"),
            row("batch list, per file", "list_bytes_per_file", "B"),
            row("check a token (rfc3161-client)", "check_token_ms", "ms"),
            row("peer: openssl ts -verify (a process)", "openssl_verify_ms", "ms"),
            row("verify a file: digests, list, token", "verify_file_ms", "ms"),
        ]
    r = summary["ratios"]
    if "stamp_per_file_over_per_crawl" in r:
        lines.append(
            f"  ratios: a token per file / per crawl {r['stamp_per_file_over_per_crawl']:.0f}x;"
            f" token check / openssl ts -verify {r['check_token_over_openssl']:.3f}x"
        )
    lines.append(
        f"  ratios: WARC / gzip of the body {r['warc_over_gzip_bytes']:.2f}x bytes, "
        f"{r['warc_over_gzip_time']:.2f}x time; WARC / raw body {r['warc_over_body_bytes']:.2f}x"
    )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.archive_bench", description=__doc__)
    parser.add_argument("--pages", type=int, default=None,
                        help=f"pages (default {DEFAULT_PAGES}; --quick: 100)")  # fmt: skip
    parser.add_argument("--runs", type=int, default=None,
                        help=f"runs (default {DEFAULT_RUNS}; --quick: 1)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="site seed (default 0)")
    parser.add_argument("--no-gridfs", action="store_true", help="skip GridFS (default: on)")
    parser.add_argument("--no-tsa", action="store_true",
                        help="skip the timestamps (default: on when openssl is found)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="100 pages, 1 run")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    synthetic.add_option(parser)
    args = parser.parse_args(argv)
    args.pages = args.pages or (100 if args.quick else DEFAULT_PAGES)
    args.runs = args.runs or (1 if args.quick else DEFAULT_RUNS)
    return args


def main(argv: Sequence[str] | None = None, texts: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark; ``texts`` replaces the downloaded corpus (tests pass their own)."""
    args = parse_args(argv)
    texts = synthetic.texts(args, texts)
    texts = load_texts(math.inf) if texts is None else texts
    site = build_site(texts, 20, args.pages, args.seed)
    with tempfile.TemporaryDirectory(prefix="fptrack-archive-site-") as tmp:
        pages = exchanges(site.write(Path(tmp)), args.pages)
    mongo = None
    with tempfile.TemporaryDirectory(prefix="fptrack-archive-logs-") as logs:
        if not args.no_gridfs:
            mongo = Child("mongodb", ["mongo-server"], Path(logs) / "mongo.log")
        tsa = None if args.no_tsa or shutil.which("openssl") is None else Path(logs)
        try:
            uri = mongo.wait_ready() if mongo else None
            runs = [one_run(pages, uri, tsa) for _ in range(args.runs)]
        finally:
            if mongo is not None:
                mongo.stop()
    summary = summarise(runs)
    print(report(summary))
    result = {
        "bench": "archive",
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "args": {"pages": args.pages, "runs": args.runs, "seed": args.seed},
        "summary": summary,
        "runs": runs,
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


if __name__ == "__main__":
    main()

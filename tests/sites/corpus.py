"""Real Chinese text for benchmarks, taken from Debian packages on demand (never committed).

:func:`fetch_corpus` downloads a few Chinese documentation packages with ``apt-get download``,
unpacks them with ``dpkg-deb -x``, converts HTML help pages, man pages and fortune files to
plain text, keeps the documents that are mostly Chinese and caches them as
``CACHE/texts/NNNNN.txt``. The files are numbered so that the packages are interleaved in
proportion to their size: any prefix (:func:`load_texts` with a small size) has the corpus's
mix. ``python -m tests.sites.corpus`` prints statistics.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from bisect import bisect_left
from dataclasses import dataclass
from pathlib import Path

from tests.sites.textconv import (
    HAN,
    MIN_HAN_SHARE,
    fortunes_to_texts,
    han_share,
    html_to_text,
    man_to_text,
    tidy,
)

MB = 1 << 20
"""Sizes are in MiB of UTF-8 text."""
MIN_CHARS = 200
NEEDED_BYTES = 12 * MB
"""The optional packages are fetched only while the corpus is smaller than this."""
MARKER = "corpus.json"
"""Written last, when the corpus is complete; it also holds the statistics."""
FORMAT = 4
"""Bump when the selection or conversion changes: caches of another format are rebuilt."""


@dataclass(frozen=True)
class Source:
    """A Debian package, the kind of its documents and the globs that select them."""

    package: str
    kind: str  # "html", "man" or "fortune"
    patterns: tuple[str, ...]
    optional: bool = False


_FORTUNES = tuple(f"usr/share/games/fortunes/{n}" for n in ("chinese", "song100", "tang300"))
SOURCES = (
    Source("libreoffice-help-zh-cn", "html", ("usr/share/libreoffice/help/zh-CN/**/*.html",)),
    # zh_TW holds the zh_CN pages converted to Traditional script (near-duplicates): left out.
    Source("manpages-zh", "man", ("usr/share/man/zh_CN/man*/*.gz",)),
    Source("debian-reference-zh-cn", "html", ("usr/share/debian-reference/*.html",)),
    Source("fortunes-zh", "fortune", _FORTUNES),
    Source("gimp-help-zh-cn", "html", ("usr/share/gimp/2.0/help/zh_CN/**/*.html",), True),
    # Also ships the previous release's manual, a near-duplicate of this one: left out.
    Source(
        "debian-edu-doc-zh-cn", "html", ("usr/share/doc/*/debian-edu-bookworm-manual.html",), True
    ),
    # The packages above give only about 7 MB of mostly-Chinese text; these add about 1.2 MB.
    Source("debian-edu-doc-legacy-zh-cn", "html", ("usr/share/doc/*/*-manual.html",), True),
    Source("debian-faq-zh-cn", "html", ("usr/share/doc/debian/FAQ/zh-cn/*.html",), True),
    Source("maint-guide-zh-cn", "html", ("usr/share/doc/maint-guide-zh-cn/html/*.html",), True),
    Source("installation-guide-amd64", "html", ("usr/share/doc/*/zh_CN/*.html",), True),
    Source("kicad-doc-zh", "html", ("usr/share/doc/kicad/help/zh/*.html",), True),
    Source("debian-handbook", "html", ("usr/share/doc/debian-handbook/html/zh-CN/*.html",), True),
    # Still under 10 MB: the Traditional-script translations, near-copies of pages above once
    # converted to Simplified. They count for speed (and exercise t2s); they were not part of
    # the corpus the shipped reference frequencies were derived from.
    Source("libreoffice-help-zh-tw", "html", ("usr/share/libreoffice/help/zh-TW/**/*.html",), True),
    Source("debian-reference-zh-tw", "html", ("usr/share/debian-reference/*.html",), True),
    Source("manpages-zh", "man", ("usr/share/man/zh_TW/man*/*.gz",), True),
)


# --- fetching and caching --------------------------------------------------------------------
def bench_cache_dir(cache_dir: Path | None) -> Path:
    """``cache_dir``, else ``$FPTRACK_BENCH_CACHE``, else ``~/.cache/fptrack-bench``."""
    default = os.environ.get("FPTRACK_BENCH_CACHE") or Path.home() / ".cache" / "fptrack-bench"
    return Path(cache_dir or default).expanduser()


def unpack_package(package: str, work: Path) -> tuple[Path, str]:
    """Download ``package`` with apt-get into ``work`` and unpack it; returns (root, version)."""
    try:
        proc = subprocess.run(
            ["apt-get", "download", package], cwd=work, capture_output=True, text=True
        )
    except FileNotFoundError as exc:
        raise RuntimeError(
            "tests.sites.corpus needs apt-get and dpkg-deb (a Debian system)"
        ) from exc
    debs = sorted(work.glob(f"{package}_*.deb"))
    if proc.returncode != 0 or not debs:
        detail = (proc.stderr.strip().splitlines() or ["no .deb written"])[-1]
        raise RuntimeError(
            f"apt-get download {package} failed ({detail}): the benchmark corpus needs "
            "Debian's package archive to be reachable (`apt-get update` may be needed first)"
        )
    root = work / package
    subprocess.run(["dpkg-deb", "-x", debs[-1], root], check=True)
    version = subprocess.run(
        ["dpkg-deb", "-f", debs[-1], "Version"], check=True, capture_output=True, text=True
    ).stdout.strip()
    debs[-1].unlink()
    return root, version


def _decode(data: bytes) -> str:
    for encoding in ("utf-8", "gb18030"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            pass
    return data.decode("utf-8", errors="replace")


def _convert(path: Path, kind: str) -> list[str]:
    data = path.read_bytes()
    text = _decode(gzip.decompress(data) if path.suffix == ".gz" else data)
    if kind == "fortune":
        return fortunes_to_texts(text)
    return [html_to_text(text) if kind == "html" else man_to_text(text)]


def _interleave(groups: list[list[str]]) -> list[str]:
    """Merge the packages' text lists so that every prefix mixes them in proportion to size."""
    keyed = []
    for g, texts in enumerate(groups):
        sizes = [len(t.encode()) for t in texts]
        total, done = sum(sizes) or 1, 0
        for i, (text, size) in enumerate(zip(texts, sizes, strict=True)):
            keyed.append(((done + size / 2) / total, g, i, text))
            done += size
    return [text for *_, text in sorted(keyed)]


def _complete(cache: Path) -> bool:
    marker = cache / MARKER
    return marker.is_file() and json.loads(marker.read_text("utf-8")).get("format") == FORMAT


def fetch_corpus(cache_dir: Path | None = None) -> Path:
    """Build the corpus in ``cache_dir`` (once; later calls reuse it) and return that dir."""
    cache = bench_cache_dir(cache_dir)
    if _complete(cache):
        return cache
    (cache / MARKER).unlink(missing_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=cache))
    try:
        groups: list[list[str]] = []
        info: dict = {
            "format": FORMAT,
            "packages": {},
            "dropped": {"short": 0, "not_chinese": 0, "duplicate": 0},
        }
        seen: set[bytes] = set()
        total = 0
        for src in SOURCES:
            if src.optional and total >= NEEDED_BYTES:
                continue
            root, version = unpack_package(src.package, work)
            paths = {p for pat in src.patterns for p in root.glob(pat) if p.is_file()}
            kept: list[str] = []
            for path in sorted(p for p in paths if not p.is_symlink()):
                for text in map(tidy, _convert(path, src.kind)):
                    digest = hashlib.sha1(text.encode()).digest()
                    reason = (
                        "short" if len(text) < MIN_CHARS
                        else "not_chinese" if han_share(text) < MIN_HAN_SHARE
                        else "duplicate" if digest in seen
                        else None
                    )  # fmt: skip
                    if reason:
                        info["dropped"][reason] += 1
                        continue
                    seen.add(digest)
                    kept.append(text)
            shutil.rmtree(root)
            size = sum(len(t.encode()) for t in kept)
            total += size
            groups.append(kept)
            info["packages"][src.package] = {"version": version, "texts": len(kept), "bytes": size}
        out = work / "texts"
        out.mkdir()
        texts = _interleave(groups)
        for n, text in enumerate(texts):
            (out / f"{n:05d}.txt").write_text(text + "\n", encoding="utf-8")
        joined = "".join(texts)
        info |= {"files": len(texts), "bytes": total, "chars": len(joined)}
        info |= {"han_chars": len(HAN.findall(joined)), "han_share": han_share(joined)}
        if _complete(cache):  # another process finished first
            return cache
        shutil.rmtree(cache / "texts", ignore_errors=True)  # an older or unfinished build
        out.rename(cache / "texts")
        (cache / MARKER).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return cache


def corpus_info(cache_dir: Path | None = None) -> dict:
    """What the cached corpus holds: packages and versions, file count, bytes, Han characters."""
    return json.loads((fetch_corpus(cache_dir) / MARKER).read_text(encoding="utf-8"))


def load_texts(size_mb: float, cache_dir: Path | None = None) -> list[str]:
    """Whole corpus texts in file-name order until their UTF-8 size reaches ``size_mb`` MiB."""
    files = sorted((fetch_corpus(cache_dir) / "texts").glob("*.txt"))
    texts: list[str] = []
    total = 0
    for path in files:
        if total >= size_mb * MB:
            break
        texts.append(path.read_text(encoding="utf-8"))
        total += len(texts[-1].encode())
    if total < size_mb * MB and not math.isinf(size_mb):
        print(
            f"tests.sites.corpus: {size_mb:g} MB requested but the corpus has only "
            f"{total / MB:.2f} MB; using all of it",
            file=sys.stderr,
        )
    return texts


def _cuts(text: str, doc_bytes: int) -> list[str]:
    """Cut one text into pieces of about ``doc_bytes`` UTF-8 bytes at the nearest boundary."""
    offsets = [0]  # byte offset of each character boundary
    for ch in text:
        offsets.append(offsets[-1] + len(ch.encode()))
    ends = [i + 1 for i, ch in enumerate(text) if ch in "。！？\n"]
    end_bytes = [offsets[i] for i in ends]
    pieces, start = [], 0
    while offsets[-1] - offsets[start] > doc_bytes * 3 // 2:
        target = offsets[start] + doc_bytes
        j = bisect_left(end_bytes, target)
        near = [ends[k] for k in (j - 1, j) if 0 <= k < len(ends) and ends[k] > start]
        best = min(near, key=lambda e: abs(offsets[e] - target), default=None)
        if best is None or abs(offsets[best] - target) > doc_bytes // 2:
            best = bisect_left(offsets, target)  # no boundary nearby: cut between characters
        pieces.append(text[start:best])
        start = best
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def documents(size_mb: float, doc_bytes: int = 3000, cache_dir: Path | None = None) -> list[str]:
    """The first ``size_mb`` MiB of the corpus cut into documents of about ``doc_bytes`` bytes."""
    return [doc for text in load_texts(size_mb, cache_dir) for doc in _cuts(text, doc_bytes)]


def main(argv: list[str] | None = None) -> None:
    """Print the corpus statistics (building the corpus first if needed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=None)
    cache = bench_cache_dir(parser.parse_args(argv).cache_dir)
    info = corpus_info(cache)
    print(f"cache: {cache}")
    for name, pkg in info["packages"].items():
        print(f"  {name} {pkg['version']}: {pkg['texts']} texts, {pkg['bytes'] / MB:.2f} MB")
    print(f"files: {info['files']}  size: {info['bytes'] / MB:.2f} MB  chars: {info['chars']}")
    print(f"Han characters: {info['han_chars']} ({info['han_share']:.1%} of non-blank chars)")
    print(f"dropped: {info['dropped']}")
    docs = documents(math.inf, cache_dir=cache)
    print(f"documents of ~3000 bytes: {len(docs)}")


if __name__ == "__main__":
    main()

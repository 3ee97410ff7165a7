"""Real Chinese text for benchmarks, taken from Debian packages on demand (never committed).

:func:`fetch_corpus` downloads a few Chinese documentation packages with ``apt-get download``,
unpacks them with ``dpkg-deb -x``, converts HTML help pages, man pages and fortune files to
plain text, keeps the documents that are mostly Chinese and caches them as
``CACHE/texts/NNNNN.txt``. The files are numbered so that the packages are interleaved in
proportion to their size: any prefix (:func:`load_texts` with a small size) has the corpus's
mix. ``python -m bench.corpus`` prints statistics.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from bisect import bisect_left
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

MB = 1 << 20
"""Sizes are in MiB of UTF-8 text."""
MIN_HAN_SHARE = 0.3
MIN_CHARS = 200
NEEDED_BYTES = 16 * MB
"""The optional packages are fetched only while the corpus is smaller than this."""
FORTUNE_GROUP_CHARS = 3000
MARKER = "corpus.json"


@dataclass(frozen=True)
class Source:
    """A Debian package, the kind of its documents and the globs that select them."""

    package: str
    kind: str  # "html", "man" or "fortune"
    patterns: tuple[str, ...]
    optional: bool = False


SOURCES = (
    Source("libreoffice-help-zh-cn", "html", ("usr/share/libreoffice/help/zh-CN/**/*.html",)),
    # zh_TW holds the same pages converted to Traditional script: same pinyin, so left out.
    Source("manpages-zh", "man", ("usr/share/man/zh_CN/man*/*.gz",)),
    Source("debian-reference-zh-cn", "html", ("usr/share/debian-reference/*.html",)),
    Source(
        "fortunes-zh",
        "fortune",
        tuple(f"usr/share/games/fortunes/{n}" for n in ("chinese", "song100", "tang300")),
    ),
    Source("gimp-help-zh-cn", "html", ("usr/share/gimp/2.0/help/zh_CN/**/*.html",), True),
    # The package also ships the previous release's manual, a near-duplicate of this one.
    Source(
        "debian-edu-doc-zh-cn",
        "html",
        ("usr/share/doc/debian-edu-doc-zh-cn/debian-edu-bookworm-manual.html",),
        True,
    ),
)

_HAN = re.compile(r"[\u4e00-\u9fff]")
_SPACE = re.compile(r"\s")
_CJK_GAP = re.compile(r"(?<=[\u3000-\u9fff\uff00-\uffef]) +(?=[\u3000-\u9fff\uff00-\uffef])")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def han_share(text: str) -> float:
    """Share of Han characters (U+4E00-U+9FFF) among the non-whitespace characters."""
    visible = len(text) - len(_SPACE.findall(text))
    return len(_HAN.findall(text)) / visible if visible else 0.0


def _tidy(text: str) -> str:
    """Collapse blanks, drop empty lines and the blanks that line-wrapping left inside Chinese."""
    lines = (re.sub(r"[ \t\u00a0\u3000]+", " ", line).strip() for line in text.splitlines())
    return _CJK_GAP.sub("", "\n".join(line for line in lines if line))


# --- HTML ------------------------------------------------------------------------------------
_SKIP_TAGS = {"head", "script", "style", "noscript", "template", "header", "footer", "nav", "aside"}
_SKIP_CLASSES = {"navheader", "navfooter", "toc", "breadcrumbs"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "wbr", "source"}
_BLOCKS = {"p", "div", "br", "li", "tr", "td", "th", "dt", "dd", "pre", "table", "title", "hr"}
_BLOCKS |= {"h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "section", "ul", "ol", "dl"}


class _HTMLText(HTMLParser):
    """Collects the visible text of a page; block elements become line breaks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)  # entities are unescaped in handle_data
        self.parts: list[str] = []
        self.skip: tuple[str, int] | None = None  # (tag, nesting depth) of a skipped element
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skip:
            if tag == self.skip[0]:
                self.skip = (tag, self.skip[1] + 1)
            return
        classes = set((dict(attrs).get("class") or "").split())
        if (tag in _SKIP_TAGS or classes & _SKIP_CLASSES) and tag not in _VOID:
            self.skip = (tag, 1)
            return
        self.pre += tag == "pre"
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if self.skip:
            if tag == self.skip[0]:
                self.skip = (tag, self.skip[1] - 1) if self.skip[1] > 1 else None
            return
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_to_text(page: str) -> str:
    """Visible text of an HTML page (no head, scripts, styles or navigation)."""
    parser = _HTMLText()
    parser.feed(page)
    parser.close()
    return "".join(parser.parts)


# --- man pages (groff: man, mdoc and pod2man macros) -----------------------------------------
_ESCAPE = re.compile(
    r"""\\(?:f(?:\[[^\]]*\]|\(..|.) | s[+-]?(?:\d+|\(\d\d|\[\d+\]) | \*(?:\[[^\]]*\]|\(..|.)
    | n[+-]?(?:\[[^\]]*\]|\(..|.) | [hvwlLDxNoHSbZR]'[^']*' | \((..) | \[([^\]]*)\] | (.))""",
    re.X,
)
_SPECIAL = {"em": "—", "en": "–", "hy": "-", "mi": "-", "bu": "•", "co": "©", "rg": "®"}
_SPECIAL |= {"lq": "“", "rq": "”", "oq": "‘", "cq": "’", "aq": "'", "dq": '"', "rs": "\\"}
_SPECIAL |= {"tm": "™", "de": "°", "mu": "×", "->": "→", "<-": "←", "ba": "|", "ti": "~"}
_SINGLE = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "'": "'", ".": "."}
_MAN_DROP = {"TH", "IX", "PD", "RS", "RE", "DT", "UC", "Vb", "Ve", "Sp", "TS", "TE", "Dd", "Dt"}
_MAN_DROP |= {"Os", "Bl", "El", "Bd", "Ed", "CS", "CE", "Pp", "PP", "LP", "P", "TP", "HP"}
_MAN_BREAK = {"SH", "SS", "Sh", "Ss", "PP", "LP", "P", "Pp", "TP", "IP", "HP", "br", "sp", "Sp"}
_MAN_BREAK |= {"It", "nf", "fi", "RS", "RE", "TS", "TE", "Vb", "Ve", "Bl", "El", "Bd", "Ed"}
_MAN_JOIN = {"BR", "BI", "IB", "IR", "RB", "RI"}
_ARG = re.compile(r'"((?:[^"]|"")*)"?|(\S+)')


def _unescape(text: str) -> str:
    """Resolve groff escapes: fonts, sizes, strings vanish; special characters are mapped."""

    def one(m: re.Match[str]) -> str:
        special, bracket, single = m.groups()
        if special is not None:
            return _SPECIAL.get(special, "")
        if bracket is not None:
            if re.fullmatch(r"u[0-9A-Fa-f]{4,6}", bracket):
                return chr(int(bracket[1:], 16))
            return _SPECIAL.get(bracket, "")
        return _SINGLE.get(single, "") if single is not None else ""

    return _ESCAPE.sub(one, text)


def man_to_text(source: str) -> str:
    """Plain text of a groff man page: requests dropped, macro arguments and text kept."""
    paras: list[str] = []
    buf: list[str] = []
    fill, skip_to_dots, table_format = True, False, False

    def flush() -> None:
        if buf:
            paras.append(" ".join(buf))
            buf.clear()

    for raw in source.splitlines():
        if skip_to_dots:
            skip_to_dots = raw.strip() != ".."
            continue
        line = re.sub(r'\\["#].*', "", raw)
        if table_format:
            table_format = not line.rstrip().endswith(".")
            continue
        if line[:1] in (".", "'"):
            name, rest = re.match(r"[.']\s*(\S*)\s*(.*)", line).groups()  # type: ignore[union-attr]
            if name in ("de", "de1", "ig", "am"):
                skip_to_dots = True
            table_format = name == "TS"
            if name in _MAN_BREAK:
                flush()
            fill = {"nf": False, "fi": True}.get(name, fill)
            if not name or name[0].islower() or name in _MAN_DROP:
                continue
            args = [_unescape(a or b) for a, b in _ARG.findall(rest)]
            text = ("" if name in _MAN_JOIN else " ").join(args[:1] if name == "IP" else args)
            if name in ("SH", "SS", "Sh", "Ss"):
                paras.append(text)
                continue
        else:
            text = _unescape(line)
        if not text.strip():
            flush()
        elif fill:
            buf.append(text.strip())
        else:
            flush()
            paras.append(text.rstrip())
    flush()
    return "\n".join(paras)


def fortunes_to_texts(source: str) -> list[str]:
    """Fortunes (split on ``%`` lines) grouped into texts of about FORTUNE_GROUP_CHARS chars."""
    items = [p.strip() for p in re.split(r"(?m)^%\s*$", _ANSI.sub("", source)) if p.strip()]
    texts: list[str] = []
    group: list[str] = []
    for item in items:
        group.append(item)
        if sum(map(len, group)) >= FORTUNE_GROUP_CHARS:
            texts.append("\n\n".join(group))
            group = []
    return [*texts, "\n\n".join(group)] if group else texts


# --- fetching and caching --------------------------------------------------------------------
def _cache_dir(cache_dir: Path | None) -> Path:
    default = os.environ.get("FPTRACK_BENCH_CACHE") or Path.home() / ".cache" / "fptrack-bench"
    return Path(cache_dir or default).expanduser()


def _unpack(package: str, work: Path) -> tuple[Path, str]:
    """Download ``package`` with apt-get into ``work`` and unpack it; returns (root, version)."""
    try:
        proc = subprocess.run(
            ["apt-get", "download", package], cwd=work, capture_output=True, text=True
        )
    except FileNotFoundError as exc:
        raise RuntimeError("bench.corpus needs apt-get and dpkg-deb (a Debian system)") from exc
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


def fetch_corpus(cache_dir: Path | None = None) -> Path:
    """Build the corpus in ``cache_dir`` (once; later calls reuse it) and return that dir."""
    cache = _cache_dir(cache_dir)
    if (cache / MARKER).is_file() and (cache / "texts").is_dir():
        return cache
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=cache))
    try:
        groups: list[list[str]] = []
        info: dict = {"packages": {}, "dropped": {"short": 0, "not_chinese": 0, "duplicate": 0}}
        seen: set[bytes] = set()
        total = 0
        for src in SOURCES:
            if src.optional and total >= NEEDED_BYTES:
                continue
            root, version = _unpack(src.package, work)
            paths = {p for pat in src.patterns for p in root.glob(pat) if p.is_file()}
            kept: list[str] = []
            for path in sorted(p for p in paths if not p.is_symlink()):
                for text in map(_tidy, _convert(path, src.kind)):
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
        info["han_chars"] = len(_HAN.findall(joined))
        shutil.rmtree(cache / "texts", ignore_errors=True)  # a build that did not finish
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
            f"bench.corpus: {size_mb:g} MB requested but the corpus has only "
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
    cache = _cache_dir(parser.parse_args(argv).cache_dir)
    info = corpus_info(cache)
    print(f"cache: {cache}")
    for name, pkg in info["packages"].items():
        print(f"  {name} {pkg['version']}: {pkg['texts']} texts, {pkg['bytes'] / MB:.2f} MB")
    print(f"files: {info['files']}  size: {info['bytes'] / MB:.2f} MB  chars: {info['chars']}")
    print(f"Han characters: {info['han_chars']} ({info['han_chars'] / info['chars']:.1%})")
    print(f"dropped: {info['dropped']}")
    docs = documents(math.inf, cache_dir=cache)
    print(f"documents of ~3000 bytes: {len(docs)}")


if __name__ == "__main__":
    main()

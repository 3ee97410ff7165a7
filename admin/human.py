"""Sizes and durations written for people, and read back from what people write; and the
admin's words for what the store keeps in codes: review statuses (:func:`status_label`), a
match's scores on a 0-1 scale with what each means (:func:`score_lines`), a limit of 0 as
"none" (:func:`limit`), why a crawl did not crawl a page (:func:`crawl_reason`) and a crawl's
error without the crawler's exception class names (:func:`crawl_error`).

>>> size(64 * 1024 * 1024)
'64 MiB'
>>> parse_size("64MiB") == parse_size("64 MiB") == 67108864
True
>>> duration(7200)
'2 h'
>>> duration(95)
'1 min 35 s'
>>> parse_duration("2m"), parse_duration("90"), parse_duration("1.5 h")
(120.0, 90.0, 5400.0)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_DURATIONS = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)?\s*", re.IGNORECASE)
_SECONDS = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)


def size(n: int) -> str:
    """``n`` bytes in the largest binary unit that keeps it whole or one decimal (``64 MiB``)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            text = f"{value:.1f}".removesuffix(".0") if unit != "B" else str(int(value))
            return f"{text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def parse_size(text: str) -> int:
    """Bytes from ``67108864``, ``64M``, ``64 MiB`` or ``1.5GB`` (binary units: K = 1024).

    Raises ``ValueError`` with a message naming the accepted forms.
    """
    match = _SIZE.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a size: give bytes or a number with KiB, MiB or GiB")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def duration(seconds: float) -> str:
    """A duration in its largest unit and the next one (``2 h``, ``1 min 35 s``, ``0.4 s``)."""
    if seconds < 10 and seconds != int(seconds):
        return f"{seconds:.1f} s"
    rest = round(seconds)
    for i, (unit, length) in enumerate(_DURATIONS):
        if rest >= length or unit == "s":
            text = f"{rest // length} {unit}"
            if i + 1 < len(_DURATIONS):
                sub_unit, sub_length = _DURATIONS[i + 1]
                if sub := rest % length // sub_length:
                    text += f" {sub} {sub_unit}"
            return text
    raise AssertionError("unreachable")


def parse_duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``2m``, ``2 min``, ``1.5h`` or ``1d``.

    Raises ``ValueError`` with a message naming the accepted forms.
    """
    match = _DURATION.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration: give seconds, or a number with s, m, h or d")
    return float(match.group(1)) * _SECONDS[(match.group(2) or "").lower()]


STATUS_LABELS = {
    "new": "awaiting review",
    "confirmed": "confirmed",
    "false_positive": "false positive",
    "authorised": "authorised",
    "takedown_sent": "takedown sent",
}
"""The review statuses (:data:`matcher.store.statuses.STATUSES`) as the admin names them: a ``new``
match is one no person has reviewed, not yet an infringement."""


def status_label(status: Any) -> str:
    """A review status in words (``new`` -> ``awaiting review``); an unknown one as it is."""
    return STATUS_LABELS.get(str(status), str(status))


def limit(value: Any, unit: str = "") -> str:
    """A limit where 0 means none (``max_pages``, ``deadline``): ``none`` or the value.

    >>> limit(0), limit(500), limit(60, "s")
    ('none', '500', '60 s')
    """
    if value in (0, None, ""):
        return "none"
    return f"{value} {unit}".strip()


@dataclass(frozen=True)
class ScoreLine:
    """One of a match's scores for people: its name, its value on 0-1 (or as counted), and
    what it says."""

    key: str
    name: str
    value: str
    meaning: str


SIMHASH_BITS = 64


def score_lines(scores: Mapping[str, Any], *, k: float, mu: float) -> list[ScoreLine]:
    """A match's stored scores (:func:`matcher.matching.verify.verdict`) in words, each on a 0-1
    scale: the containments as shares, the simhash distance ``H`` as ``1 - H / 64`` and the
    microblog paper's ``Sim = 1/(H+1) + K * Dup`` divided by its greatest value ``1 + K``
    (``k``: :data:`matcher.matching.verify.MICROBLOG_K`; ``mu``:
    :data:`matcher.matching.verify.DOCUMENT_MU`,
    the document score's weight). A score this does not know is shown as stored.

    >>> [(line.name, line.value) for line in score_lines({"simhash_distance": 9.0}, k=4, mu=.85)]
    [('Simhash similarity', '0.859')]
    >>> score_lines({"microblog_sim": 2.643}, k=4, mu=.85)[0].value
    '0.529'
    """
    out = []
    for key, raw in scores.items():
        if not isinstance(raw, int | float) or isinstance(raw, bool):
            out.append(ScoreLine(key, key.replace("_", " "), str(raw), ""))
            continue
        value = float(raw)
        if key == "containment_work":
            line = ("Work covered", value, f"{value:.1%} of the work's text is on this page")
        elif key == "containment_segment":
            line = ("Chapter covered", value, f"{value:.1%} of the work's chapter it covers best")
        elif key == "containment_page":
            line = ("Page covered", value, f"{value:.1%} of the page's text comes from the work")
        elif key == "resemblance":
            line = ("Resemblance", value, "the texts' shared fingerprints (Jaccard; 1: the same)")
        elif key == "simhash_distance":
            bits = round(value)
            line = (
                "Simhash similarity",
                max(0.0, 1 - value / SIMHASH_BITS),
                f"{bits} of {SIMHASH_BITS} simhash bits differ (near-duplicates differ in 3 "
                "or fewer)",
            )
        elif key == "microblog_sim":
            line = (
                "Microblog similarity",
                value / (1 + k),
                f"the microblog paper's Sim = 1/(distance+1) + {k:g} × shared words: "
                f"{value:.2f} of at most {1 + k:g}",
            )
        elif key == "document_score":
            line = (
                "Document score",
                value,
                f"{mu:g} × simhash similarity + {1 - mu:g} × resemblance",
            )
        else:
            out.append(ScoreLine(key, key.replace("_", " "), f"{value:.3f}", ""))
            continue
        name, scaled, meaning = line
        out.append(ScoreLine(key, name, f"{min(1.0, max(0.0, scaled)):.3f}", meaning))
    return out


SITE_FIELDS = {
    "name": "Name",
    "start_urls": "Start URLs",
    "allowed_domains": "Allowed domains",
    "max_depth": "Maximum link depth",
    "max_pages": "Maximum pages per crawl",
    "deadline": "Crawl deadline",
    "include": "Follow only URLs matching",
    "exclude": "Never follow URLs matching",
    "content_selector": "Content selector",
    "join_next_pages": "Match chapters split over pages as a whole too",
    "next_page_texts": "Next-page link texts",
    "obey_robots": "Obey robots.txt",
    "crawlers": "Crawler processes at once",
    "schedule": "Schedule",
    "recrawl": "Incremental crawl schedule",
    "authorised": "Authorised (licensed: its matches are classified authorised)",
    "render": "Render pages in headless Chromium",
}
"""The fields of a site's configuration (:class:`matcher.sites.site_config.SiteConfig`) as the admin
names them."""


def site_facts(config: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """A site's configuration (:meth:`matcher.sites.site_config.SiteConfig.to_dict`) for people:
    ``(label, value, field)`` per field, a limit of 0 as ``none``, flags as yes or no,
    empty lists as what they mean.

    >>> facts = site_facts({"max_pages": 0, "max_depth": 0, "obey_robots": True})
    >>> {key: value for _, value, key in facts}
    {'max_pages': 'none', 'max_depth': '0 (the start URLs only)', 'obey_robots': 'yes'}
    """
    empty = {
        "include": "any URL",
        "exclude": "none",
        "content_selector": "none (the main text is extracted)",
        "allowed_domains": "the start URLs' hosts",
    }
    out = []
    for key, value in config.items():
        if key == "extra":
            continue
        if key in ("max_pages", "deadline"):
            text = limit(value, "s" if key == "deadline" else "")
        elif key == "max_depth" and value == 0:
            text = "0 (the start URLs only)"
        elif isinstance(value, bool):
            text = "yes" if value else "no"
        elif isinstance(value, list | tuple):
            text = " ".join(str(v) for v in value) or empty.get(key, "none")
        else:
            text = str(value) if value not in ("", None) else empty.get(key, "none")
        out.append((SITE_FIELDS.get(key, key.replace("_", " ")), text, key))
    return out


NO_ANSWER = {
    "ConnectionRefusedError": "the connection was refused",
    "DownloadConnectionRefusedError": "the connection was refused",
    "DNSLookupError": "the host name is not found in DNS",
    "CannotResolveHostError": "the host name is not found in DNS",
    "TimeoutError": "timed out",
    "TCPTimedOutError": "timed out",
    "DownloadTimeoutError": "timed out",
    "UserTimeoutError": "timed out",
    "ResponseNeverReceived": "the connection closed before any answer",
    "ResponseFailed": "the connection closed during the answer",
    "ConnectionLost": "the connection closed during the answer",
    "ConnectionDone": "the connection closed during the answer",
    "PartialDownloadError": "the connection closed during the answer",
    "NoRouteError": "no route to the host",
    "ConnectError": "could not connect",
    "SSLError": "the TLS (https) handshake failed",
}
"""The crawler's exception class names (Twisted's, Scrapy's) that say why a request got no
answer, in words."""
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NO_ANSWER_LINE = re.compile(
    r"\((?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Received|Failed|Lost|Done))"
    r"(?::\s*(?P<message>.*?))?\)(?=\s*(?:;|$))"
)
_NAME_LIST = re.compile(r"no page could be fetched \((?P<names>[\w., ]+)\)")


def no_answer(name: str) -> str:
    """Why a request got no answer, from the exception class name the crawler recorded
    (dotted or not), in words: :data:`NO_ANSWER`, else the name's words.

    >>> no_answer("twisted.internet.error.DNSLookupError"), no_answer("WeirdThingError")
    ('the host name is not found in DNS', 'weird thing')
    """
    short = name.rsplit(".", 1)[-1]
    if short in NO_ANSWER:
        return NO_ANSWER[short]
    words = _CAMEL.sub(" ", short.removesuffix("Error").removesuffix("Exception")).lower()
    return words.strip() or "no answer"


NOT_CRAWLED_WORDS = {
    "robots": "forbidden by robots.txt",
    "too_large": "over the size limit",
    "not_html": "not a web page",
    "undecodable": "text that could not be decoded",
    "download_refused": "archives refused (too large or too deep)",
    "other_port": "links to another port of the host",
    "depth": "beyond the maximum link depth",
    "budget": "over the page budget (max_pages)",
    "links_capped": "links past a page's first ones (FPTRACK_MAX_LINKS_PER_PAGE)",
    "pending_capped": "links while the queue was full (FPTRACK_MAX_PENDING)",
    "deadline": "still queued at the crawl's deadline",
    "stopped": "still queued when the crawl was stopped",
}
"""The reasons of :func:`matcher.sites.crawl_runs.not_crawled`, in words."""


def crawl_reason(reason: str) -> str:
    """A reason of :func:`matcher.sites.crawl_runs.not_crawled` in words: ``http_404`` ->
    ``answered 404 Not Found``, ``error_<ExceptionName>`` -> :func:`no_answer`.

    >>> crawl_reason("http_404"), crawl_reason("error_DownloadConnectionRefusedError")
    ('answered 404 Not Found', 'no answer: the connection was refused')
    """
    if reason.startswith("http_") and reason[5:].isdigit():
        code = int(reason[5:])
        try:
            return f"answered {code} {HTTPStatus(code).phrase}"
        except ValueError:
            return f"answered {code}"
    if reason.startswith("error_"):
        return f"no answer: {no_answer(reason[6:])}"
    return NOT_CRAWLED_WORDS.get(reason, reason.replace("_", " "))


def crawl_error(line: str) -> str:
    """A crawl's error line without the crawler's exception class names: ``no answer
    (DNSLookupError: DNS lookup failed: ...)`` -> ``no answer (the host name is not found
    in DNS)``; the rest as it is.

    >>> crawl_error("start URL http://h/: no answer (DownloadConnectionRefusedError: "
    ...             "Connection was refused by other side: 111: Connection refused.)")
    'start URL http://h/: no answer (the connection was refused)'
    """

    def words(found: re.Match[str]) -> str:
        name = found.group("name")
        known = name.rsplit(".", 1)[-1] in NO_ANSWER
        message = (found.group("message") or "").strip()
        said = no_answer(name)
        return f"({said})" if known or not message else f"({said}: {message})"

    line = _NO_ANSWER_LINE.sub(words, line)
    return _NAME_LIST.sub(
        lambda f: (
            "no page could be fetched ("
            + ", ".join(dict.fromkeys(no_answer(n.strip()) for n in f.group("names").split(",")))
            + ")"
        ),
        line,
    )


FILTERS = {
    "status_label": status_label,
    "limit": limit,
    "crawl_reason": crawl_reason,
    "crawl_error": crawl_error,
}
"""The admin's template filters of this module."""

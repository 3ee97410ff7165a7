"""Takedown notices: one per site, listing its newest :data:`MAX_NOTICE_ITEMS` (1,000)
selected matches by URL (URL, work, first :data:`EXCERPT_CHARS` (200) characters of the first
evidence passage, first-seen date), from an editable template. A notice names only matches
a person confirmed, unless the operator chose to name the unreviewed ones too (a notice's
:class:`~admin.report.selection.Selection`).

A notice whose text still holds a placeholder of :data:`PLACEHOLDERS` (the rights holder or
the contact not set) is not ready (:func:`not_ready`): it is shown, but neither sent, marked
sent nor exported (the text download and the evidence bundle) until an admin sets them.

The template (at most :data:`MAX_TEMPLATE_CHARS`, 20,000 characters), the rights holder and
the contact (at most :data:`MAX_DETAIL_CHARS`, 500 characters each) are kept in the
``state`` collection under :data:`TEMPLATE_STATE_KEY` and :data:`DETAILS_STATE_KEY`. Until
an admin saves one, the notice uses :data:`DEFAULT_TAKEDOWN_TEMPLATE` (Chinese and English)
and the placeholders :data:`PLACEHOLDERS` for an empty rights holder or contact.

The template is Jinja2 run in an immutable sandbox (no attribute starting with ``_``, no
changing the data, ranges of at most 100,000), with no loader (no ``include``/``import``),
strict about undefined names, and bounded: no ``*`` or ``**`` whose result would exceed
:data:`~admin.report.notice_sandbox.MAX_NOTICE_CHARS` (1,000,000) characters, no call with
an integer argument above it, output of at most that many characters, and a render of at
most :data:`RENDER_SECONDS` seconds and 1 GiB in a fresh process of its own
(:mod:`admin.report.notice_sandbox`, killed when over), so that a template cannot take the
server's memory or its time. The HTML variant autoescapes every value and the sandbox has
neither the ``safe`` filter nor the ``autoescape`` tag, so page text (URLs, excerpts) is
always escaped; the text variant is plain text. A template is tried on sample data before
it is saved (:func:`check_template`). Used by the admin's reports pages and the API alike.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from admin.report.notice_sandbox import NoticeError
from admin.report.selection import UNREVIEWED, Selection, find
from matcher.pages import fetched_url
from matcher.store import Store

__all__ = ["NoticeError"]

MAX_NOTICE_ITEMS = 1_000
EXCERPT_CHARS = 200
MAX_TEMPLATE_CHARS = 20_000
RENDER_SECONDS = 5.0
MAX_DETAIL_CHARS = 500
TEMPLATE_STATE_KEY = "takedown_template"
DETAILS_STATE_KEY = "takedown_details"
PLACEHOLDERS = {
    "rights_holder": "[权利人 / rights holder]",
    "contact": "[联系方式 / contact]",
}

DEFAULT_TAKEDOWN_TEMPLATE = """\
侵权通知 / Notice of Copyright Infringement

日期 / Date: {{ date }}
致 / To: {{ site }} 网站负责人 / operator of {{ site }}

{{ rights_holder }} 是下列作品的著作权人或其授权代表。贵网站的下列网页未经许可复制、\
传播了这些作品。依据《中华人民共和国著作权法》和《信息网络传播权保护条例》第十四条，\
请在收到本通知后立即删除上述内容或断开链接。

{{ rights_holder }} owns, or is authorised to act for the owner of, the copyright in the \
works listed below. The following pages of your site reproduce and distribute these works \
without permission. Under the Copyright Law of the People's Republic of China and Article 14 \
of the Regulations on the Protection of the Right to Network Dissemination of Information, \
please remove them or disable access to them as soon as you receive this notice.

作品 / Works: {{ works | join("；") }}
侵权网址 / Infringing URLs: {{ count }}{{ " (" ~ period ~ ")" if period else "" }}

{% for item in items %}
{{ loop.index }}. {{ item.url }}
   作品 / Work: {{ item.work }}
   首次发现 / First seen: {{ item.first_seen }}
   证据摘录 / Evidence: {{ item.excerpt }}

{% endfor %}
本人保证本通知内容真实、准确。
I state that the information in this notice is accurate.

联系方式 / Contact: {{ contact }}
{{ rights_holder }}
{{ date }}
"""
"""The notice until an admin saves another; its variables are those of :func:`notice_context`."""


def _today() -> date:
    return datetime.now(UTC).date()


def render_notice(source: str, context: dict[str, Any], *, html: bool) -> str:
    """``source`` rendered by :mod:`admin.report.notice_sandbox` in a process of its own, given
    :data:`RENDER_SECONDS`; any failure is a :class:`NoticeError`."""
    request = json.dumps({"source": source, "context": context, "html": html})
    try:
        done = subprocess.run(
            [sys.executable, "-m", "admin.report.notice_sandbox"],
            input=request.encode("utf-8"),
            capture_output=True,
            timeout=RENDER_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise NoticeError(f"the template took more than {RENDER_SECONDS:g} s to render") from None
    except OSError as exc:
        raise NoticeError(f"the template could not be rendered ({exc.strerror})") from None
    try:
        ok, value = json.loads(done.stdout)
    except ValueError:
        why = "out of memory" if b"MemoryError" in done.stderr else f"exit {done.returncode}"
        raise NoticeError(
            f"the template could not be rendered (its process ended: {why})"
        ) from None
    if not ok:
        raise NoticeError(value)
    return str(value)


def notice_template(store: Store) -> str:
    return store.state.get_state(TEMPLATE_STATE_KEY) or DEFAULT_TAKEDOWN_TEMPLATE


def notice_details(store: Store) -> dict[str, str]:
    kept = store.state.get_state(DETAILS_STATE_KEY) or {}
    return {k: str(kept.get(k, "")) if isinstance(kept, dict) else "" for k in PLACEHOLDERS}


def notice_items(store: Store, selection: Selection) -> tuple[list[dict[str, str]], bool]:
    """The notice's lines (newest :data:`MAX_NOTICE_ITEMS`, by URL) and whether more exist.
    A download stored in parts is named once per work, by the URL the site links
    (:func:`matcher.pages.fetched_url`)."""
    fields = ("url", "work_id", "work_title", "work_source", "first_seen", "evidence", "status")
    rows = list(find(store, selection, MAX_NOTICE_ITEMS + 1, fields))
    items = []
    named: set[tuple[str, str]] = set()
    for match in rows[:MAX_NOTICE_ITEMS]:
        url = fetched_url(str(match.get("url", "")))
        if (url, str(match.get("work_id"))) in named:
            continue
        named.add((url, str(match.get("work_id"))))
        evidence = match.get("evidence") or [{}]
        text = str(evidence[0].get("text", ""))
        if len(text) > EXCERPT_CHARS:
            text = text[:EXCERPT_CHARS] + "…"
        seen = match.get("first_seen")
        items.append(
            {
                "match_id": str(match.get("_id", "")),
                "url": url,
                "work": str(match.get("work_title", "")),
                "work_source": str(match.get("work_source", "")),
                "excerpt": " ".join(text.split()),
                "first_seen": seen.strftime("%Y-%m-%d") if isinstance(seen, datetime) else "",
                "status": str(match.get("status", "")),
            }
        )
    items.sort(key=lambda i: (i["url"], i["work"]))
    return items, len(rows) > MAX_NOTICE_ITEMS


def notice_context(
    site: str,
    items: list[dict[str, str]],
    details: dict[str, str],
    period: str = "",
    today: date | None = None,
) -> dict[str, Any]:
    """The template's variables: ``site``, ``date``, ``rights_holder``, ``contact``,
    ``period``, ``count``, ``works`` (titles) and ``items`` (``url``, ``work``,
    ``work_source``, ``excerpt``, ``first_seen``, ``status``, ``match_id``)."""
    return {
        "site": site,
        "date": (today or _today()).isoformat(),
        "rights_holder": details.get("rights_holder") or PLACEHOLDERS["rights_holder"],
        "contact": details.get("contact") or PLACEHOLDERS["contact"],
        "period": period,
        "count": len(items),
        "works": sorted({i["work"] for i in items}),
        "items": items,
    }


SAMPLE_ITEMS = [
    {
        "url": "http://pirate.example/book/1.html",
        "work": "示例作品 / Sample work",
        "work_source": "sample.txt",
        "excerpt": "示例摘录 <sample excerpt>",
        "first_seen": "2024-01-31",
        "status": "confirmed",
        "match_id": "0123456789abcdef01234567",
    },
    {
        "url": "http://pirate.example/book/2.html",
        "work": "示例作品 / Sample work",
        "work_source": "sample.txt",
        "excerpt": "另一段摘录 & more",
        "first_seen": "2024-02-01",
        "status": "takedown_sent",
        "match_id": "0123456789abcdef01234568",
    },
]


def sample_context(details: dict[str, str]) -> dict[str, Any]:
    """The variables of a template's preview and trial: :data:`SAMPLE_ITEMS` to a sample site."""
    return notice_context("pirate.example", SAMPLE_ITEMS, details, "2024-01-01 – 2024-02-29")


@dataclass(frozen=True)
class Notice:
    """A rendered notice, how many matches it lists, whether more were left out, the
    placeholders still in its text, and how many of its lines are unreviewed matches."""

    text: str
    count: int
    more: bool
    placeholders: tuple[str, ...] = ()
    unreviewed: int = 0


def notice(store: Store, selection: Selection, *, html: bool) -> Notice:
    """The notice of the selection's site with the stored template and details; a template
    that cannot be used is a :class:`NoticeError`."""
    items, more = notice_items(store, selection)
    context = notice_context(
        str(selection.filters.site), items, notice_details(store), selection.period()
    )
    text = render_notice(notice_template(store), context, html=html)
    unreviewed = sum(1 for i in items if i.get("status") == UNREVIEWED)
    return Notice(text, len(items), more, placeholders_in(text), unreviewed)


def placeholders_in(text: str) -> tuple[str, ...]:
    """The placeholders of :data:`PLACEHOLDERS` that ``text`` still holds (in any case)."""
    folded = text.casefold()
    return tuple(p for p in PLACEHOLDERS.values() if p.casefold() in folded)


def not_ready(done: Notice) -> str | None:
    """Why ``done`` may not be sent, marked sent or exported yet, else ``None``."""
    if not done.count:
        return "it names no match: nothing to notify"
    if done.placeholders:
        return (
            f"the notice still has the placeholder(s) {', '.join(done.placeholders)}: an admin "
            "sets the rights holder and the contact on the takedown template page first"
        )
    return None


def unusable(exc: NoticeError) -> str:
    """What a notice whose stored template fails says (a 500: the template was saved by
    other means than the admin's form, which tries it first)."""
    return f"the takedown template cannot be used ({exc}); an admin can fix it"


def check_template(source: str, details: dict[str, str]) -> str | None:
    """Why ``source`` cannot be saved, else ``None``."""
    if not source.strip():
        return "the template is empty (use “reset” for the default)"
    if len(source) > MAX_TEMPLATE_CHARS:
        return f"the template has more than {MAX_TEMPLATE_CHARS:,} characters"
    context = sample_context(details)
    for html in (True, False):
        try:
            render_notice(source, context, html=html)
        except NoticeError as exc:
            return f"the template was not saved, the previous one is kept: {exc}"
    return None

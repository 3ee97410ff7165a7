"""The search engines' delisting export (issue 41, part 3): a CSV of the infringing URLs with
the work each copies, in the shape the bulk delisting forms take (Google's copyright
removal form and its bulk submission, Bing's content removal form: the copyrighted work
named and described, where the original is, and the infringing URLs).

One row per URL and work (:data:`DELISTING_FIELDS`): ``url``, ``site``, ``work_title``,
``rights_holder`` (the work's owner when registered with one, else the notice's rights
holder), ``work_reference`` (the work's source when it is a web address or an ISBN, where a
form asks for the original: :func:`work_reference`), ``first_seen``, ``match_id`` and
``evidence_link`` (the match's page in the admin, with ``FPTRACK_ADMIN_URL``). Every cell
is made inert for spreadsheets (:func:`admin.report.to_csv_rows`). Pure: the rows are
built from the match records and works given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from admin.report import to_csv_rows
from matcher.alerts.notify import admin_link
from matcher.pages import fetched_url

DELISTING_FIELDS = (
    "url",
    "site",
    "work_title",
    "rights_holder",
    "work_reference",
    "first_seen",
    "match_id",
    "evidence_link",
)
ISBN = re.compile(r"^(?:isbn[:\s]*)?((?:97[89])?\d{9}[\dx])$", re.IGNORECASE)


def work_reference(work: Mapping[str, Any]) -> str:
    """The work's ``source`` or ``key`` when it is a web address or an ISBN (``ISBN
    978...``), else "".

    >>> work_reference({"source": "https://books.example/tea"})
    'https://books.example/tea'
    >>> work_reference({"source": "978-7-02-000220-7"}), work_reference({"source": "tea.txt"})
    ('ISBN 9787020002207', '')
    """
    for name in ("source", "key"):
        value = str(work.get(name) or "").strip()
        if value.startswith(("http://", "https://")):
            return value
        found = ISBN.match(value.replace("-", "").replace(" ", ""))
        if found:
            return f"ISBN {found.group(1).upper()}"
    return ""


def delisting_rows(
    matches: Iterable[Mapping[str, Any]],
    works: Mapping[str, Mapping[str, Any]],
    rights_holder: str,
    admin_url: str,
) -> list[dict[str, str]]:
    """The export's rows (see the module docstring) of ``matches`` (match records: ``url``,
    ``site``, ``work_id``, ``work_title``, ``first_seen``, ``_id``) and their ``works`` by
    id; a download stored in parts is named once per work, by the URL the site links;
    sorted by site, URL and work."""
    rows: dict[tuple[str, str], dict[str, str]] = {}
    for m in matches:
        url = fetched_url(str(m.get("url", "")))
        work = works.get(str(m.get("work_id")), {})
        seen = m.get("first_seen")
        rows.setdefault(
            (url, str(m.get("work_id"))),
            {
                "url": url,
                "site": str(m.get("site", "")),
                "work_title": str(m.get("work_title") or work.get("title") or ""),
                "rights_holder": str(work.get("owner") or rights_holder),
                "work_reference": work_reference(work),
                "first_seen": seen.strftime("%Y-%m-%d") if isinstance(seen, datetime) else "",
                "match_id": str(m.get("_id", "")),
                "evidence_link": admin_link(admin_url, m.get("_id", "")),
            },
        )
    return sorted(rows.values(), key=lambda r: (r["site"], r["url"], r["work_title"]))


def delisting_csv(rows: Iterable[dict[str, str]]) -> str:
    """The export as CSV text (:data:`DELISTING_FIELDS`)."""
    return to_csv_rows(rows, DELISTING_FIELDS)

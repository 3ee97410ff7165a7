"""Dashboard counters, kept up to date as works, pages and matches are written.

The admin dashboard reads these few documents instead of counting matches, so its cost does
not grow with the data. Each write of the store that
changes a figure sends the matching ``$inc`` (upserts, atomic per document in
MongoDB) right after its own write. Documents (``_id``: what they count):

In ``tallies`` (one document per site and per day, so a few hundred in all, each in stripes):

- ``total``: ``works``, ``pages``, ``matches_seen`` (match records ever created),
  ``active.<status>`` (active match records per review status) and ``infringing`` (active
  and not ``false_positive`` or ``authorised``);
- ``site|<name>``: the same for one site (and its ``pages``), with ``days.<YYYY-MM-DD>``
  (UTC) its matches first seen that day, and ``scope``, ``key``, ``label`` fields;
- ``day|<YYYY-MM-DD>``: ``matches`` first seen that day and ``pages`` fetched that day.

In ``tallies_works`` (one document per work): ``work|<id>`` with ``active.<status>``,
``infringing``, ``matches_seen``, ``key`` and ``label`` (the title).

The documents of ``tallies`` take a write for every page and match, so each is kept as
:data:`STRIPES` stripes: ``<id>#<k>`` (with ``base``: ``<id>``), and a write goes to one
stripe chosen at random, so that concurrent writers rarely update the same document (no
write hot spot, on one server or sharded by ``_id``). Readers add the stripes up
(:func:`total`, :func:`days`, :func:`top`); a stripe alone may hold negative counts. The
per-work documents are many and each takes few writes: they are not striped.

A crash between a write and its tally leaves the figures slightly off until
:func:`recount` (``fptrack admin recount``) rebuilds them from the data.

A worker gathers the tallies of the match records it writes, and a crawl those of the pages
it stores, over ``FPTRACK_TALLY_SECONDS`` (:class:`Sender`) and sends them together: a
write or two a second per process instead of one or two per page and per new match. The
dashboard is that much behind; a process killed by SIGKILL loses what it gathered in its
last interval (a warm shutdown, and a normal exit, send it), as a crash between a write and
its tally does.
"""

from __future__ import annotations

import atexit
import logging
import random
import threading
import time
import weakref
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from pymongo import DESCENDING, IndexModel, UpdateOne
from pymongo.errors import PyMongoError

log = logging.getLogger(__name__)

COLLECTION = "tallies"
WORKS_COLLECTION = "tallies_works"
COLLECTIONS = (COLLECTION, WORKS_COLLECTION)
NOT_INFRINGING = frozenset({"false_positive", "authorised"})
STRIPES = 16
INDEXES = [
    IndexModel([("base", 1)], name="base"),
    IndexModel([("scope", 1), ("day", 1)], name="scope_day"),
]
LEGACY_INDEXES = ((COLLECTION, "scope_infringing"),)
WORKS_INDEXES = [IndexModel([("infringing", DESCENDING)], name="infringing")]


def day_of(when: datetime) -> str:
    """The UTC day of a time, ``YYYY-MM-DD``."""
    return when.strftime("%Y-%m-%d")


class Changes:
    """Increments to many tally documents, sent together by :meth:`apply`."""

    def __init__(self) -> None:
        self.incs: dict[str, Counter[str]] = defaultdict(Counter)
        self.labels: dict[str, dict[str, Any]] = {}

    def add(self, doc_id: str, field: str, by: int = 1, **labels: Any) -> None:
        self.incs[doc_id][field] += by
        if labels:
            self.labels[doc_id] = labels

    def merge(self, other: Changes) -> None:
        """Add ``other``'s increments (and labels) to these."""
        for doc_id, counts in other.incs.items():
            self.incs[doc_id].update(counts)
        self.labels.update(other.labels)

    def __bool__(self) -> bool:
        return bool(self.incs or self.labels)

    def match(self, match: Mapping[str, Any], by: int, created: bool = False) -> None:
        """A match record entering (``by=1``) or leaving (``-1``) the active set."""
        status = match.get("status", "new")
        site, work = str(match.get("site", "")), str(match.get("work_id"))
        hit = 0 if status in NOT_INFRINGING else by
        for doc_id, labels in (
            ("total", {}),
            (f"site|{site}", {"scope": "site", "key": site, "label": site}),
            (f"work|{work}", {"scope": "work", "key": work, "label": match.get("work_title", "")}),
        ):
            self.add(doc_id, f"active.{status}", by, **labels)
            self.add(doc_id, "infringing", hit)
            if created:
                self.add(doc_id, "matches_seen")
        if created:
            day = day_of(match["first_seen"])
            self.add(f"day|{day}", "matches", scope="day", day=day)
            self.add(f"site|{site}", f"days.{day}")

    def status(self, match: Mapping[str, Any], old: str, new: str) -> None:
        """An active match record moving from one review status to another."""
        if old != new:
            self.match({**match, "status": old}, -1)
            self.match({**match, "status": new}, 1)

    def page(self, site: str, fetched: datetime, created: bool) -> None:
        """A page fetched (and stored for the first time when ``created``)."""
        day = day_of(fetched)
        self.add(f"day|{day}", "pages", scope="day", day=day)
        if created:
            self.add("total", "pages")
            self.add(f"site|{site}", "pages", scope="site", key=site, label=site)

    def work(self, by: int) -> None:
        self.add("total", "works", by)

    def apply(self, db: Any, stripe: int | None = None) -> None:
        """Send every increment, upserting the documents (those of ``tallies`` in stripe
        ``stripe``, by default one chosen at random): one unordered bulk write per
        collection, so a write's tallies cost one or two commands however many documents
        they touch. Those sent are cleared; when a write fails, the increments of the
        collections not written yet are kept."""
        stripe = random.randrange(STRIPES) if stripe is None else int(stripe) % STRIPES
        writes: dict[str, dict[str, UpdateOne]] = {COLLECTION: {}, WORKS_COLLECTION: {}}
        for doc_id, counts in self.incs.items():
            inc = {f: n for f, n in counts.items() if n}
            labels = self.labels.get(doc_id, {})
            if not inc and not labels:
                continue
            update: dict[str, Any] = {}
            if inc:
                update["$inc"] = inc
            if labels:
                update["$set"] = labels
            if doc_id.startswith("work|"):
                writes[WORKS_COLLECTION][doc_id] = UpdateOne({"_id": doc_id}, update, upsert=True)
                continue
            update.setdefault("$set", {})["base"] = doc_id
            writes[COLLECTION][doc_id] = UpdateOne(
                {"_id": f"{doc_id}#{stripe}"}, update, upsert=True
            )
        for name, requests in writes.items():
            if requests:
                db[name].bulk_write(list(requests.values()), ordered=False)
            for doc_id in requests:
                self.incs.pop(doc_id, None)
                self.labels.pop(doc_id, None)
        self.incs.clear()
        self.labels.clear()


class Sender:
    """Where one store's writes send their tallies: each write's right after it, or, once
    told to :meth:`gather`, gathered and sent together (see the module docstring): every
    ``seconds`` from a daemon thread started with the first, and by :meth:`flush`, which
    runs at process exit and on a worker process's shutdown (:func:`flush_all`). A send
    that fails keeps what was not sent for the next one. Gathering with ``seconds`` None
    starts no thread: only :meth:`flush` sends (a store that is not safe across threads,
    the embedded scan's)."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.gathering = False
        self.seconds: float | None = None
        self._pending = Changes()
        self._lock = threading.Lock()
        self._sending = threading.Lock()
        self._thread: threading.Thread | None = None
        _SENDERS.add(self)

    def gather(self, seconds: float | None) -> None:
        """From now on, gather the tallies and send them every ``seconds``."""
        with self._lock:
            self.gathering, self.seconds = True, seconds

    def send_each(self) -> bool:
        """Send what was gathered, and from now on each write's tallies after it; False
        when the store refused (what was gathered is kept for the next :meth:`flush`)."""
        with self._lock:
            self.gathering, self.seconds = False, None
        return self.flush()

    def add(self, changes: Changes) -> None:
        """Send ``changes``, or keep them (cleared) for the next send when gathering."""
        with self._lock:
            if self.gathering:
                self._pending.merge(changes)
                if self._thread is None and self.seconds is not None:
                    self._thread = threading.Thread(
                        target=self._loop, name="fptrack-tallies", daemon=True
                    )
                    self._thread.start()
                changes.incs.clear()
                changes.labels.clear()
                return
        changes.apply(self.db)

    def flush(self) -> bool:
        """Send what was gathered; False when the store refused (it is kept)."""
        with self._sending:
            with self._lock:
                taken, self._pending = self._pending, Changes()
            if not taken:
                return True
            try:
                taken.apply(self.db)
            except PyMongoError as exc:
                log.warning("dashboard tallies not sent, kept for the next try: %s", exc)
                with self._lock:
                    taken.merge(self._pending)
                    self._pending = taken
                return False
            return True

    def _loop(self) -> None:
        while self.seconds:
            time.sleep(self.seconds)
            self.flush()


_SENDERS: weakref.WeakSet[Sender] = weakref.WeakSet()


def flush_all() -> None:
    """Send the tallies every :class:`Sender` of this process gathered."""
    for sender in list(_SENDERS):
        sender.flush()


atexit.register(flush_all)


def recount(db: Any, titles: Mapping[str, str] | None = None) -> int:
    """Rebuild every tally from the works, pages and matches; returns the documents written."""
    changes = Changes()
    changes.work(db.works.count_documents({}))
    titles = dict(titles or {})
    if not titles:
        titles = {str(w["_id"]): w.get("title", "") for w in db.works.find({}, {"title": 1})}
    for page in db.pages.find({}, {"site": 1, "first_seen": 1, "fetched_at": 1}):
        when = page.get("fetched_at") or page.get("first_seen")
        if when is not None:
            changes.page(page.get("site", ""), when, created=True)
    projection = {"site": 1, "work_id": 1, "status": 1, "first_seen": 1, "active": 1}
    for match in db.matches.find({}, projection):
        record = {**match, "work_title": titles.get(str(match["work_id"]), "")}
        changes.match(record, 1 if match.get("active", True) else 0, created=True)
    for name in COLLECTIONS:
        db[name].delete_many({})
    written = len(changes.incs)
    changes.apply(db)
    return written


def counts(doc: Mapping[str, Any] | None) -> dict[str, int]:
    """The ``active.<status>`` counts of a tally document, every status present."""
    from matcher.store.statuses import STATUSES

    active = (doc or {}).get("active", {})
    return {s: int(active.get(s, 0)) for s in STATUSES}


def total(db: Any) -> dict[str, Any]:
    """The deployment-wide tally (its stripes added up; ``{}`` before the first write)."""
    merged = merge(db[COLLECTION].find({"base": "total"}))
    return merged[0] if merged else {}


def top(db: Any, scope: str, limit: int = 10) -> list[dict[str, Any]]:
    """The ``site`` or ``work`` tallies with the most infringing matches."""
    if scope == "work":
        cursor = db[WORKS_COLLECTION].find({"infringing": {"$gt": 0}})
        return list(cursor.sort("infringing", DESCENDING).limit(limit))
    found = [d for d in merge(db[COLLECTION].find({"scope": scope})) if d.get("infringing", 0) > 0]
    return sorted(found, key=lambda d: (-d["infringing"], d.get("key", "")))[:limit]


def sites(db: Any) -> list[dict[str, Any]]:
    """Every site's tally (``key``: the site), its stripes added up (index ``scope_day``)."""
    return sorted(merge(db[COLLECTION].find({"scope": "site"})), key=lambda d: d.get("key", ""))


def days(db: Any, first: str) -> list[dict[str, Any]]:
    """The daily tallies from ``first`` (``YYYY-MM-DD``) on."""
    found = merge(db[COLLECTION].find({"scope": "day", "day": {"$gte": first}}))
    return sorted(found, key=lambda d: d["day"])


def snapshot(db: Any) -> dict[str, dict[str, Any]]:
    """Every tally by ``_id``, its stripes added up (the per-work tallies as stored)."""
    merged = merge(db[COLLECTION].find({}))
    return {d["_id"]: d for d in [*merged, *db[WORKS_COLLECTION].find({})]}


def merge(stripes: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Stripe documents added up into one document per ``base`` (``_id`` = the base): the
    numbers summed, nested ones too, the labels kept."""
    merged: dict[str, dict[str, Any]] = {}
    for doc in stripes:
        base = doc.get("base") or str(doc["_id"]).split("#", 1)[0]
        _add(merged.setdefault(base, {"_id": base}), doc)
    return list(merged.values())


def _add(into: dict[str, Any], doc: Mapping[str, Any]) -> None:
    for name, value in doc.items():
        if name in ("_id", "base"):
            continue
        if isinstance(value, Mapping):
            _add(into.setdefault(name, {}), value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            into[name] = into.get(name, 0) + value
        else:
            into.setdefault(name, value)


def each(docs: Iterable[Mapping[str, Any]], field: str) -> dict[str, int]:
    """``{day: doc[field]}`` of daily tallies."""
    return {d["day"]: int(d.get(field, 0)) for d in docs}

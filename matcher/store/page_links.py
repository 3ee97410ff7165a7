"""The pages around a page (``pages``, by its links): those at its previous and next URLs
and those whose next page it is, read together where the page's
:data:`~matcher.store.pages.AROUND` field allows (:func:`matcher.matching.split.chain` walks
split chapters with them), and the migration of the earlier layout's pages to the fields
:data:`~matcher.store.pages.AROUND` and :data:`~matcher.store.pages.NAMES`."""

from __future__ import annotations

from collections.abc import Iterable

from pymongo import UpdateOne
from pymongo.database import Database

from matcher.store import ids
from matcher.store.common import checked_str, mongo_errors, page_key
from matcher.store.pages import (
    _LINKS,
    AROUND,
    AROUND_READ,
    LINKERS,
    NAMES,
    Around,
    LayoutCheck,
    around_ids,
    names_of,
)


class PageLinks:
    """The pages around a page, and the layout fields that find them."""

    def __init__(self, db: Database, layout_ready: LayoutCheck) -> None:
        self.db = db
        self.layout_ready = layout_ready
        """Whether every page carries a field (the pages' :class:`LayoutCheck`)."""

    @mongo_errors
    def pages_linking_to(self, url: str, projection: dict[str, int] | None = None) -> list[dict]:
        """Pages whose "next page" link leads to ``url`` (at most :data:`LINKERS`)."""
        query = {"next_url": checked_str(url, "url")}
        return list(self.db.pages.find(query, projection).limit(LINKERS))

    @mongo_errors
    def pages_around(self, doc: dict) -> Around | None:
        """What the first steps of a split chain from the page ``doc`` look at
        (:func:`matcher.matching.split.chain`): ``({url: page}`` of the pages stored at its previous
        and next URLs, ``[pages whose next page is its URL])``, in one read by id and one by
        ``next_url`` (not one ``$or``: a server may answer that with a collection scan);
        None when more pages link to it than :data:`LINKERS` (then each is looked up on its
        own)."""
        urls = {checked_str(u, "url") for u in (doc.get("prev_url"), doc.get("next_url")) if u}
        url = checked_str(doc["url"], "url")
        linking = list(self.db.pages.find({"next_url": url}).limit(LINKERS + 1))
        if len(linking) > LINKERS:
            return None
        slots = [slot for u in urls for slot in ids.candidates(ids.page_id(u))]
        found = list(self.db.pages.find({"_id": {"$in": slots}})) if slots else []
        return {d["url"]: d for d in found if d.get("url") in urls}, linking

    @mongo_errors
    def page_and_around(self, page_id: str | int) -> tuple[dict | None, Around | None]:
        """``(the page, what :meth:`pages_around` answers for it)`` (``(None, None)`` when
        there is no such page), in one read by :data:`AROUND` where it can: the page itself,
        the pages whose next page it is and those whose previous page it is (usually its
        next page), so that only a neighbour not linking back is read again, by id. Read as
        :meth:`get_page` then :meth:`pages_around` when pages of the earlier layout lack
        the field, when the page's URL is not at its first id candidate, or when more than
        :data:`AROUND_READ` pages name it."""
        key = page_key(page_id)
        doc = None
        if self.layout_ready(AROUND):
            found = list(self.db.pages.find({AROUND: key}).limit(AROUND_READ))
            doc = next((d for d in found if d["_id"] == key), None)
            if len(found) < AROUND_READ:
                if doc is None:
                    return None, None
                if ids.page_id(doc["url"]) == key:
                    return doc, self._around_from(doc, found)
        if doc is None:
            doc = self.db.pages.find_one({"_id": key})
            if doc is None:
                return None, None
        return doc, self.pages_around(doc)

    @mongo_errors
    def pages_and_around(
        self, page_ids: Iterable[str | int]
    ) -> dict[int, tuple[dict, Around | None]]:
        """:meth:`page_and_around` of each page, in one read by :data:`AROUND` for them all
        (the stored ones; those not stored are absent). A page named by as many pages as
        :meth:`page_and_around` reads at most, or whose URL is not at its first id
        candidate, is left out: its own read answers it. A neighbour among the pages read
        is not read again. Nothing when pages of the earlier
        layout lack the field, or when the read would hold more than :data:`AROUND_READ`
        pages a page."""
        keys = [page_key(p) for p in page_ids]
        if not keys or not self.layout_ready(AROUND):
            return {}
        named: dict[int, list[dict]] = {key: [] for key in keys}
        found_all = list(self.db.pages.find({AROUND: {"$in": keys}}).limit(AROUND_READ * len(keys)))
        if len(found_all) >= AROUND_READ * len(keys):
            return {}  # a page many name among them: each read on its own
        for doc in found_all:
            for key in doc.get(AROUND) or ():
                if key in named:
                    named[key].append(doc)
        out = {}
        for key, found in named.items():
            doc = next((d for d in found if d["_id"] == key), None)
            if doc is not None and len(found) < AROUND_READ and ids.page_id(doc["url"]) == key:
                out[key] = (doc, self._around_from(doc, found, found_all))
        return out

    def _around_from(
        self, doc: dict, found: list[dict], more: Iterable[dict] = ()
    ) -> Around | None:
        """:meth:`pages_around` of ``doc`` from ``found``, every page naming it in
        :data:`AROUND` (the neighbours not among them, nor among ``more``, read by id)."""
        url = doc["url"]
        linking = [d for d in found if d.get("next_url") == url]
        if len(linking) > LINKERS:
            return None
        urls = {u for u in (doc.get("prev_url"), doc.get("next_url")) if u}
        known = {d["url"]: d for group in (more, found) for d in group if d["url"] in urls}
        missing = urls - known.keys()
        slots = [slot for u in missing for slot in ids.candidates(ids.page_id(u))]
        if slots:
            for d in self.db.pages.find({"_id": {"$in": slots}}):
                if d.get("url") in missing:
                    known[d["url"]] = d
        return known, linking[:LINKERS]

    @mongo_errors
    def pages_without_around(self, batch: int) -> list[dict]:
        """Up to ``batch`` pages of the earlier layout, without :data:`AROUND`: their
        ``_id`` and links."""
        fields = {"_id": 1, **_LINKS}
        return list(self.db.pages.find({AROUND: None}, fields).limit(int(batch)))

    @mongo_errors
    def set_around(self, pages: list[dict]) -> int:
        """Set :data:`AROUND` on ``pages`` (as :meth:`pages_without_around` gives them) from
        the links stored now (a page whose links changed since is left for the next pass)."""
        ops = []
        for d in pages:
            links = {k: d.get(k, {"$exists": False}) for k in _LINKS}
            value = around_ids(d["_id"], d.get("next_url") or "", d.get("prev_url") or "")
            ops.append(UpdateOne({"_id": d["_id"], **links}, {"$set": {AROUND: value}}))
        return self.db.pages.bulk_write(ops, ordered=False).modified_count if ops else 0

    @mongo_errors
    def pages_without_names(self, batch: int) -> list[dict]:
        """Up to ``batch`` pages of the earlier layout, without :data:`NAMES`: their
        ``_id``, URL and aliases."""
        fields = {"_id": 1, "url": 1, "aliases": 1}
        return list(self.db.pages.find({NAMES: None}, fields).limit(int(batch)))

    @mongo_errors
    def set_names(self, pages: list[dict]) -> int:
        """Add :data:`NAMES` to ``pages`` (as :meth:`pages_without_names` gives them); an
        alias added since adds its own."""
        ops = [
            UpdateOne(
                {"_id": d["_id"]},
                {"$addToSet": {NAMES: {"$each": names_of(d["url"], d.get("aliases") or ())}}},
            )
            for d in pages
        ]
        return self.db.pages.bulk_write(ops, ordered=False).modified_count if ops else 0

"""Sites' configurations (``sites``), as operators save them (:mod:`matcher.sites.site_config`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pymongo import ASCENDING, ReturnDocument
from pymongo.database import Database

from matcher.sites.site_config import SiteConfig, SiteConfigError
from matcher.store.common import (
    StoreError,
    mongo_errors,
    now,
    site_name,
)


class Sites:
    """The ``sites`` collection."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @mongo_errors
    def save_site(self, site: SiteConfig) -> tuple[dict, bool]:
        """Create or replace a site's configuration; returns ``(document, created)``."""
        stamp = now()
        before = self.db.sites.find_one({"name": site.name}, {"_id": 1})
        doc = self.db.sites.find_one_and_update(
            {"name": site.name},
            {
                "$set": {**site.to_dict(), "updated_at": stamp},
                "$setOnInsert": {"created_at": stamp},
            },
            upsert=True,
            return_document=ReturnDocument.AFTER,
        )
        return doc, before is None

    @mongo_errors
    def get_site(self, name: str) -> SiteConfig | None:
        doc = self.db.sites.find_one({"name": site_name(name)})
        return None if doc is None else self._site(doc)

    @mongo_errors
    def list_sites(self) -> list[SiteConfig]:
        return [self._site(d) for d in self.db.sites.find({}).sort("name", ASCENDING)]

    @staticmethod
    def _site(doc: dict) -> SiteConfig:
        try:
            return SiteConfig.from_dict(doc)
        except SiteConfigError as exc:
            raise StoreError(f"stored site {doc.get('name')!r} is invalid: {exc}") from exc

    @mongo_errors
    def creation_times(self) -> dict[str, datetime | None]:
        """Every site's name and when it was first saved (None for a site saved before
        fptrack recorded it)."""
        found = self.db.sites.find({}, {"name": 1, "created_at": 1})
        return {d["name"]: d.get("created_at") for d in found}

    @mongo_errors
    def delete_site(self, name: str) -> bool:
        return self.db.sites.delete_one({"name": site_name(name)}).deleted_count == 1

    @mongo_errors
    def authorised_sites(self) -> set[str]:
        """Names of the sites licensed to carry the works (their matches are authorised)."""
        return {d["name"] for d in self.db.sites.find({"authorised": True}, {"name": 1})}

    # what crawls learn about a site (crawler.dust), kept for its later crawls -----------

    @mongo_errors
    def site_rules(self, name: str) -> dict[str, list[dict[str, Any]]]:
        """What crawls learnt of site ``name`` (collection ``site_rules``, by name):
        ``params`` (``{pattern, param, support}``: query parameters dropped from the links
        on a path pattern; support 0 when an operator added it), ``rejected`` (rules an
        operator deleted: never learnt again) and ``dead`` (``{pattern, misses}``: path
        patterns answering 404/410 that many times in a row)."""
        doc = self.db.site_rules.find_one({"_id": site_name(name)}) or {}
        return {key: list(doc.get(key) or []) for key in ("params", "rejected", "dead")}

    @mongo_errors
    def save_crawl_rules(
        self, name: str, learnt: list[dict[str, Any]], dead: list[dict[str, Any]]
    ) -> None:
        """Record a crawl's end: the rules it ``learnt`` (added unless known or rejected)
        and the dead link patterns as it leaves them (replacing the stored ones)."""
        name = site_name(name)
        known = self.site_rules(name)
        taken = {(r["pattern"], r["param"]) for r in known["params"] + known["rejected"]}
        new = [_rule(r) for r in learnt if (r["pattern"], r["param"]) not in taken]
        update: dict[str, Any] = {"$set": {"dead": [_dead(d) for d in dead], "updated_at": now()}}
        if new:
            update["$push"] = {"params": {"$each": new}}
        self.db.site_rules.update_one({"_id": name}, update, upsert=True)

    @mongo_errors
    def add_site_rule(self, name: str, pattern: str, param: str) -> bool:
        """An operator's rule: drop ``param`` from links on ``pattern`` (False: known)."""
        rule = _rule({"pattern": pattern, "param": param, "support": 0})
        name = site_name(name)
        if any(
            (r["pattern"], r["param"]) == (rule["pattern"], rule["param"])
            for r in self.site_rules(name)["params"]
        ):
            return False
        self.db.site_rules.update_one(
            {"_id": name},
            {
                "$push": {"params": rule},
                "$pull": {"rejected": {"pattern": rule["pattern"], "param": rule["param"]}},
                "$set": {"updated_at": now()},
            },
            upsert=True,
        )
        return True

    @mongo_errors
    def delete_site_rule(self, name: str, pattern: str, param: str) -> bool:
        """Delete a parameter rule; a crawl never learns it again (False: not there)."""
        name = site_name(name)
        key = {"pattern": str(pattern), "param": str(param)}
        if not any(
            (r["pattern"], r["param"]) == (key["pattern"], key["param"])
            for r in self.site_rules(name)["params"]
        ):
            return False
        self.db.site_rules.update_one(
            {"_id": name},
            {"$pull": {"params": key}, "$set": {"updated_at": now()}},
        )
        self.db.site_rules.update_one({"_id": name}, {"$addToSet": {"rejected": key}})
        return True

    @mongo_errors
    def delete_dead_pattern(self, name: str, pattern: str) -> bool:
        """Forget a dead link pattern (its links are asked for again)."""
        result = self.db.site_rules.update_one(
            {"_id": site_name(name)}, {"$pull": {"dead": {"pattern": str(pattern)}}}
        )
        return result.modified_count == 1


MAX_RULE_CHARS = 300


def _rule(rule: dict[str, Any]) -> dict[str, Any]:
    pattern, param = str(rule["pattern"]).strip(), str(rule["param"]).strip()
    if not pattern.startswith("/") or not param or len(pattern) + len(param) > MAX_RULE_CHARS:
        raise StoreError(f"not a parameter rule: pattern {pattern!r}, parameter {param!r}")
    return {"pattern": pattern, "param": param, "support": int(rule.get("support", 0))}


def _dead(entry: dict[str, Any]) -> dict[str, Any]:
    return {"pattern": str(entry["pattern"])[:MAX_RULE_CHARS], "misses": int(entry["misses"])}

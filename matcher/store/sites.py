"""Sites' configurations (``sites``), as operators save them (:mod:`matcher.sites`)."""

from __future__ import annotations

from pymongo import ASCENDING, ReturnDocument
from pymongo.database import Database

from matcher.sites import SiteConfig, SiteConfigError
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
    def delete_site(self, name: str) -> bool:
        return self.db.sites.delete_one({"name": site_name(name)}).deleted_count == 1

    @mongo_errors
    def authorised_sites(self) -> set[str]:
        """Names of the sites licensed to carry the works (their matches are authorised)."""
        return {d["name"] for d in self.db.sites.find({"authorised": True}, {"name": 1})}

"""The API's discovered pirate sites: the candidates found from the watched sites and
through a search engine, with their evidence."""

from __future__ import annotations

from typing import Any

from flask import jsonify

from admin.web import deps
from admin.web.api.blueprint import ok, route, when

LEAD_FIELDS = ("kind", "site", "url", "source", "words")


def candidate_json(doc: dict[str, Any]) -> dict[str, Any]:
    """A stored candidate (:mod:`matcher.store.discovery`) as the API gives it."""
    return {
        "host": doc["_id"],
        "home": doc.get("home", ""),
        "state": doc.get("state", "new"),
        "score": float(doc.get("score", 0.0)),
        "pirate": bool(doc.get("pirate")),
        "pages": int(doc.get("pages", 0)),
        "copying_pages": int(doc.get("copying_pages", 0)),
        "works": [{"work_id": w["work_id"], "title": w["title"]} for w in doc.get("works", [])],
        "leads": [{k: lead.get(k, "") for k in LEAD_FIELDS} for lead in doc.get("leads", [])],
        "lead_count": int(doc.get("lead_count", 0)),
        "first_seen": when(doc.get("first_seen")),
        "checked_at": when(doc.get("checked_at")),
    }


@route("GET", "/candidates", "viewer",
       "The pirate sites discovered, from the watched sites' links and through a search "
       "engine (leads of kind search): new ones first, then by score",
       responses=ok("CandidateList"))  # fmt: skip
def list_candidates() -> Any:
    return jsonify(candidates=[candidate_json(c) for c in deps.discovery().candidates()])

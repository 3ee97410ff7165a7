"""The OpenAPI 3.0 document of the HTTP API, built from its routes (each declared with its
:class:`Operation`, :data:`admin.web.api.blueprint.OPERATIONS`) and the schemas below, so the
document and the routes cannot drift apart. The API's modules import this one, never the
reverse: the limits its schemas state (:data:`MAX_TITLE_CHARS`, :data:`MAX_NOTE_CHARS`) are
defined here and enforced there.

The site schema is derived from :class:`matcher.sites.site_config.SiteConfig`'s fields: a field
added
there is in the API at once. Every operation answers its declared success codes, and any
other status with the ``Error`` schema (``default``); operations that need a token declare
the bearer scheme.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from admin.services.matches import STATUSES
from matcher.evidence.recipients import EMAILED, RECIPIENTS
from matcher.sites.rdap import NETWORK_FIELDS, REGISTRAR_FIELDS
from matcher.sites.site_config import MAX_INT, SiteConfig

VERSION = "1.0.0"
MAX_NOTE_CHARS = 2000
MAX_TITLE_CHARS = 500


@dataclass(frozen=True)
class Operation:
    """One route's OpenAPI operation (see :func:`document`)."""

    method: str
    path: str
    role: str | None
    summary: str
    params: tuple[dict[str, Any], ...] = ()
    body: dict[str, Any] | None = None
    responses: dict[str, Any] = field(default_factory=dict)
    operation_id: str = ""


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "nullable": True}


STRING = {"type": "string"}
WHEN = _nullable({"type": "string", "format": "date-time"})
STRINGS = {"type": "array", "items": STRING}
RECIPIENT = {"type": "string", "enum": list(RECIPIENTS)}
CSV = "text/csv"
"""A response schema name that stands for a CSV body (a string) instead of JSON."""
SPAN = {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}


def _obj(properties: dict[str, Any], required: tuple[str, ...] | None = None) -> dict[str, Any]:
    """An object schema; every property required unless ``required`` names them."""
    names = list(properties) if required is None else list(required)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if names:
        schema["required"] = names
    return schema


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def site_schema(require_name: bool = True, output: bool = False) -> dict[str, Any]:
    """The JSON schema of a site configuration (``output``: as the API returns it)."""
    properties: dict[str, Any] = {}
    for f in dataclasses.fields(SiteConfig):
        default = f.default if f.default is not dataclasses.MISSING else None
        if f.name == "extra":
            if output:
                properties["extra"] = {"type": "object"}
            continue
        if isinstance(default, tuple) or f.name == "start_urls":
            properties[f.name] = STRINGS
        elif isinstance(default, bool):
            properties[f.name] = {"type": "boolean"}
        elif isinstance(default, int):
            properties[f.name] = {"type": "integer", "minimum": 0, "maximum": MAX_INT}
        else:
            properties[f.name] = STRING
    if output:
        return _obj(properties)
    required = ("name", "start_urls") if require_name else ()
    schema = _obj(properties, required)
    schema["additionalProperties"] = False
    return schema


MATCH = {
    "id": STRING,
    "work_id": STRING,
    "work_title": STRING,
    "page_id": STRING,
    "site": STRING,
    "url": STRING,
    "score": {"type": "number"},
    "status": {"type": "string", "enum": list(STATUSES)},
    "active": {"type": "boolean"},
    "methods": STRINGS,
    "parts": {
        "type": "array",
        "items": {"type": "integer"},
        "description": "a whole-book download stored in parts: the parts copying the work",
    },
    "siblings": {
        "type": "array",
        "items": _obj({"work_id": STRING, "work_title": STRING, "tie": {"type": "boolean"}}),
        "description": "the other editions of the work that explain the page too, the best "
        "first; tie: it explains the page as well",
    },
    "first_seen": WHEN,
    "last_seen": WHEN,
    "archive": _nullable(
        _obj({"sha256": STRING, "fetched_at": WHEN, "bytes": {"type": "integer"}})
    ),
}
WORK = {
    "id": STRING,
    "title": STRING,
    "author": STRING,
    "source": STRING,
    "registered_at": WHEN,
    "same_text_as": _nullable(STRING),
    "near_twin": {"type": "boolean"},
}
HOSTING = _obj(
    {
        "looked_up_at": WHEN,
        "attempted_at": WHEN,
        "host": STRING,
        "addresses": STRINGS,
        "networks": {"type": "array", "items": _obj({k: STRING for k in NETWORK_FIELDS})},
        "domain": STRING,
        "registrar": _obj({k: STRING for k in REGISTRAR_FIELDS}),
        "errors": STRINGS,
    }
)
"""Who hosts a site, as its RDAP lookup found (:mod:`matcher.sites.hosting`): "" for a value
unknown or redacted."""

SCHEMAS: dict[str, Any] = {
    "Error": _obj({"error": STRING}),
    "Any": {},
    "Message": _obj({"message": STRING}),
    "Work": _obj(WORK),
    "WorkList": _obj(
        {"works": {"type": "array", "items": _ref("Work")}, "next": _nullable(STRING)}
    ),
    "WorkFiles": _obj(
        {"files": {"type": "array", "items": {"type": "string", "format": "binary"}}}
    ),
    "WorkText": {
        **_obj(
            {
                "title": {"type": "string", "minLength": 1, "maxLength": MAX_TITLE_CHARS},
                "text": {"type": "string", "minLength": 1},
                "author": {"type": "string", "maxLength": MAX_TITLE_CHARS},
                "source": {"type": "string", "maxLength": MAX_TITLE_CHARS},
            },
            ("title", "text"),
        ),
        "additionalProperties": False,
    },
    "Registered": _obj(
        {
            "added": {"type": "array", "items": _obj({"id": STRING, "title": STRING})},
            "problems": STRINGS,
        }
    ),
    "Site": site_schema(output=True),
    "SiteCreate": site_schema(),
    "SiteUpdate": site_schema(require_name=False),
    "SiteList": _obj({"sites": {"type": "array", "items": _ref("Site")}}),
    "SiteDetail": _obj({**site_schema(output=True)["properties"], "hosting": _nullable(HOSTING)}),
    "Candidate": _obj(
        {
            "host": STRING,
            "home": STRING,
            "state": {"type": "string", "enum": ["new", "watched", "dismissed"]},
            "score": {"type": "number"},
            "pirate": {"type": "boolean"},
            "pages": {"type": "integer"},
            "copying_pages": {"type": "integer"},
            "works": {"type": "array", "items": _obj({"work_id": STRING, "title": STRING})},
            "leads": {
                "type": "array",
                "items": _obj(
                    {
                        "kind": {
                            "type": "string",
                            "enum": ["link", "redirect", "announced", "search"],
                        },
                        "site": STRING,
                        "url": STRING,
                        "source": STRING,
                        "words": STRING,
                    }
                ),
                "description": "how it was found: a watched site's link, redirect or "
                "announced address, or a search engine's answer to the sentence in source",
            },
            "lead_count": {"type": "integer"},
            "first_seen": WHEN,
            "checked_at": WHEN,
        }
    ),
    "CandidateList": _obj({"candidates": {"type": "array", "items": _ref("Candidate")}}),
    "Match": _obj(MATCH),
    "MatchDetail": _obj(
        {
            **MATCH,
            "evidence": {
                "type": "array",
                "items": _obj(
                    {
                        "work_span": SPAN,
                        "page_span": SPAN,
                        "chars": {"type": "integer"},
                        "part": {"type": "integer"},
                    }
                ),
            },
        }
    ),
    "MatchList": _obj(
        {"matches": {"type": "array", "items": _ref("Match")}, "next": _nullable(STRING)}
    ),
    "StatusChange": {
        **_obj(
            {
                "status": {"type": "string", "enum": list(STATUSES)},
                "note": {"type": "string", "maxLength": MAX_NOTE_CHARS},
            },
            ("status",),
        ),
        "additionalProperties": False,
    },
    "QueryRequest": {
        **_obj({"text": STRING, "url": STRING}, ()),
        "additionalProperties": False,
    },
    "QueryResult": _obj(
        {
            "results": {
                "type": "array",
                "items": _obj(
                    {
                        "work_id": STRING,
                        "title": STRING,
                        "score": {"type": "number"},
                        "containment_work": {"type": "number"},
                        "containment_page": {"type": "number"},
                        "methods": STRINGS,
                        "passages": {
                            "type": "array",
                            "items": _obj({"page_span": SPAN, "chars": {"type": "integer"}}),
                        },
                    }
                ),
            }
        }
    ),
    "Summary": _obj(
        {
            "total": {"type": "integer"},
            "capped": {"type": "boolean"},
            "by_site": {
                "type": "array",
                "items": _obj({"site": STRING, "matches": {"type": "integer"}}),
            },
            "by_work": {
                "type": "array",
                "items": _obj({"work_id": STRING, "title": STRING, "matches": {"type": "integer"}}),
            },
        }
    ),
    "Takedowns": _obj(
        {
            "days": {"type": "number"},
            "sites": {"type": "array", "items": _ref("TakedownFigures")},
            "providers": {"type": "array", "items": _ref("TakedownFigures")},
            "recipients": {"type": "array", "items": _ref("TakedownFigures")},
        }
    ),
    "TakedownFigures": _obj(
        {
            "name": STRING,
            "notices": {"type": "integer"},
            "urls": {"type": "integer"},
            "rechecked": {"type": "integer"},
            "removed": {"type": "integer"},
            "reopened": {"type": "integer"},
            "removal_rate": _nullable({"type": "number"}),
            "median_days_to_removal": _nullable({"type": "number"}),
            "still_up": {"type": "integer"},
            "escalate": {
                "type": "array",
                "items": _obj(
                    {
                        "url": STRING,
                        "site": STRING,
                        "state": STRING,
                        "sent_at": WHEN,
                        "notices": {"type": "integer"},
                        "recipients": {"type": "array", "items": RECIPIENT},
                        "next_recipient": _nullable(RECIPIENT),
                    }
                ),
            },
        }
    ),
    "SendNotice": {
        **_obj(
            {"email": {"type": "boolean"}, "recipient": {"type": "string", "enum": list(EMAILED)}},
            (),
        ),
        "additionalProperties": False,
    },
    "Sent": _obj(
        {
            "notice_id": STRING,
            "site": STRING,
            "urls": {"type": "integer"},
            "via": STRING,
            "to": STRING,
            "provider": STRING,
            "unreviewed_named": {"type": "integer"},
            "recipient": RECIPIENT,
            "sites": STRINGS,
        }
    ),
    "Notice": _obj(
        {
            "site": STRING,
            "notice": STRING,
            "matches": {"type": "integer"},
            "more": {"type": "boolean"},
            "ready": {"type": "boolean"},
            "not_ready": _nullable(STRING),
            "placeholders": STRINGS,
            "unreviewed": {"type": "boolean"},
            "unreviewed_named": {"type": "integer"},
            "unreviewed_left_out": {"type": "integer"},
        }
    ),
}
BODY_SCHEMAS = {"Site": "SiteCreate"}
"""Request bodies that use another schema than the response of the same name."""


def _response(schema: str | None, description: str) -> dict[str, Any]:
    if schema is None:
        return {"description": description}
    if schema == CSV:
        return {"description": description, "content": {CSV: {"schema": STRING}}}
    return {"description": description, "content": {"application/json": {"schema": _ref(schema)}}}


def document(operations: Iterable[Operation], server: str = "") -> dict[str, Any]:
    """The OpenAPI document of ``operations``, with ``server`` (this server's URL) as its
    server."""
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        operation: dict[str, Any] = {
            "operationId": op.operation_id,
            "summary": op.summary,
            "responses": {
                code: _response(schema, "success" if code.startswith("2") else "refused")
                for code, schema in op.responses.items()
            },
        }
        operation["responses"]["default"] = _response("Error", "an error, in one line")
        if op.params:
            operation["parameters"] = list(op.params)
        if op.body:
            operation["requestBody"] = {
                "required": True,
                "content": {
                    mime: {"schema": _ref(BODY_SCHEMAS.get(name, name))}
                    for mime, name in op.body.items()
                },
            }
        if op.role is None:
            operation["security"] = []
        else:
            operation["description"] = f"Needs a token with the {op.role} role or a stronger one."
        paths.setdefault(f"/api/v1{op.path}", {})[op.method.lower()] = operation
    doc: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {
            "title": "fptrack API",
            "version": VERSION,
            "description": "Works, sites, matches, queries and reports of an fptrack "
            "deployment. Tokens are made in the admin (API tokens).",
        },
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
    if server:
        doc["servers"] = [{"url": server}]
    return doc

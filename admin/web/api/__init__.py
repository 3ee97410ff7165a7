"""The HTTP API, version 1: JSON under ``/api/v1``, described by its OpenAPI document.

Every route but ``/api/v1/openapi.json`` needs ``Authorization: Bearer <token>``, a token
made in the admin (:mod:`admin.services.api_tokens`); the session cookie is never read here,
so the API needs no CSRF token and a browser's ambient login cannot drive it. Each route
names the weakest role that may use it (``viewer`` reads, ``reviewer`` sets statuses,
queries URLs and starts crawls, ``admin`` registers works and edits sites), and each user's
tokens together are held to ``FPTRACK_API_RATE_PER_MINUTE`` requests a minute
(:mod:`admin.web.rate_limit`).
Errors are ``{"error": "<one line>"}`` with the HTTP status. Every value that reaches a
query is parsed first (ids as ObjectIds, filters by :class:`admin.filters.MatchFilters`),
so no request can carry a MongoDB operator. The routes and their OpenAPI operations are
declared together (:func:`admin.web.api.blueprint.route`) and the document is built from
them (:mod:`admin.web.api.spec`).

One blueprint (:mod:`~admin.web.api.blueprint`: the guard, errors, shared values), its routes
in one module per resource (:data:`RESOURCES`), each calling the admin's services
(:mod:`admin.services`) as the pages do.
"""

from __future__ import annotations

import importlib
from typing import Any

from flask import jsonify, request

from admin.web.api.blueprint import OPERATIONS, bp, error_response, guard, ok, route, serves
from admin.web.api.spec import document

__all__ = ["bp", "error_response", "guard", "serves"]

RESOURCES = ("works", "sites", "matches", "query", "reports", "takedowns", "discovery")
"""Modules of :mod:`admin.web.api` whose routes join :data:`bp` (in the document's order)."""

for _name in RESOURCES:
    importlib.import_module(f"{__name__}.{_name}")


@route("GET", "/openapi.json", None, "This document (no token needed)", responses=ok("Any"))
def openapi() -> Any:
    return jsonify(document(OPERATIONS, request.host_url.rstrip("/")))

"""``GET /metrics``: the deployment's Prometheus metrics (:mod:`admin.metrics`).

Who may read it: a request from an address of ``FPTRACK_METRICS_ALLOW`` (IPs or CIDR
networks, comma-separated; default none), or one with ``Authorization: Bearer <token>``, an
API token (:mod:`admin.services.api_tokens`) acting with the ``viewer`` role or a stronger one;
anyone else gets 401. Loopback is not let in by default: the admin is served behind a TLS
proxy on the same host (``deploy/``), through which every visitor comes from 127.0.0.1.
The session cookie is never read here (no CSRF, no login page). A token is checked against
the store; while the store does not answer, against the tokens this process last saw pass
(:class:`admin.services.api_tokens.KeptTokens`), so that Prometheus still reads the figures, and
``fptrack_metrics_source_up{source="mongodb"} 0`` among them; a token not seen yet gets
503 then.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from flask import Blueprint, Response, g, request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from admin.web import deps

bp = Blueprint("metrics", __name__)
PATH = "/metrics"
ROLE = "viewer"
RETRY_AFTER_S = 15
"""The ``Retry-After`` of a 503 (a token that cannot be checked): Prometheus' interval."""


def serves(path: str) -> bool:
    return path == PATH


def allowed(address: str | None, networks: tuple[Any, ...]) -> bool:
    """Whether ``address`` lies in one of ``networks`` (an IPv4-mapped IPv6 address as its
    IPv4 one).

    >>> allowed("::ffff:10.1.2.3", (ipaddress.ip_network("10.0.0.0/8"),))
    True
    >>> allowed("127.0.0.1", ())
    False
    """
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in net for net in networks)


def guard() -> Response | None:
    """Before ``/metrics``: let in an allowed address or a viewer's token, else 401."""
    g.user = None
    s = deps.services()
    if allowed(request.remote_addr, s.ctx.settings.metrics_networks):
        return None
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        passes = s.scrape_tokens.allows(secret.strip())
        if passes:
            return None
        if passes is None:
            return Response(
                "the store is not answering, and this token was not seen before: retry later\n",
                status=503,
                mimetype="text/plain",
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
    response = Response(
        f"metrics need an API token with the {ROLE} role: Authorization: Bearer <token>\n",
        status=401,
        mimetype="text/plain",
    )
    response.headers["WWW-Authenticate"] = 'Bearer realm="fptrack"'
    return response


@bp.get(PATH)
def metrics() -> Response:
    body = generate_latest(deps.services().metrics_registry)
    return Response(body, headers={"Content-Type": CONTENT_TYPE_LATEST})

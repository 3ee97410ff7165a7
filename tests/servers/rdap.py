"""Local RDAP services: IANA's bootstrap files and the RDAP servers they name, answering
with saved RFC 9083 answers shaped like the real services' (``tests/samples/rdap/``), and
failing as real ones do.

:class:`RdapServices` runs two servers: the **bootstrap** (``dns.json``, ``ipv4.json``,
``ipv6.json`` under ``/rdap/``, as ``https://data.iana.org/rdap/`` serves them) on
127.0.0.1, and the **RDAP servers** the files name on 127.0.0.2, one path prefix each (not
the operator's host, as IANA's files name other organisations' hosts):

- ``/arin/registry/ip/<address>``: ARIN's answer for 104.16.0.0/12 (Cloudflare; the abuse
  contact ``ABUSE2916-ARIN`` nested in the owner's entity, ``cidr0_cidrs``);
- ``/apnic/ip/<address>``: APNIC's for 220.181.0.0/16 (China Telecom, the
  ``IRT-CHINANET-CN`` abuse contact nested in the organisation, Chinese in ``fn``);
- ``/ripe/ip/<address>``: RIPE's for 185.220.100.0/22, a network naming no abuse contact;
- ``/verisign/com/v1/domain/<name>``: Verisign's thin .com registry: for
  ``fptrack-pirate-fixture.com`` the registrar (IANA ID, its abuse phone but no email) and a
  ``related`` link to the registrar's server; for ``fptrack-noabuse-fixture.com`` a
  registrar with no abuse contact and no link;
- ``/registrar/domain/fptrack-pirate-fixture.com``: the registrar's answer (NameSilo-like):
  the registrant redacted (``REDACTED FOR PRIVACY``, RFC 9537 ``redacted``), its abuse
  contact with email and phone;
- ``/broken/...``: the failures, by the name asked: ``gone-...``/``45.0.0.4`` 404 with an
  RFC 9083 error object, ``busy-...``/``45.0.0.1`` 429 with ``Retry-After``,
  ``garbled-...``/``45.0.0.3`` JSON cut off, ``slow-...``/``45.0.0.2`` no answer (until
  the server stops);
- anything else: 404 with the error object.

``{rdap}`` in a saved answer stands for the RDAP servers' base URL. ``asked`` records every
request of both servers, in order, as ``(server, path)``.
"""

from __future__ import annotations

import ipaddress
import threading
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from tests.servers.http_server import FixtureServer, Handler, QuietHandler

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "rdap"
NETWORKS = {
    "arin": (ipaddress.ip_network("104.16.0.0/12"), "arin_ip_network.json"),
    "apnic": (ipaddress.ip_network("220.181.0.0/16"), "apnic_ip_network.json"),
    "ripe": (ipaddress.ip_network("185.220.100.0/22"), "ripe_ip_network_no_abuse.json"),
}
DOMAINS = {
    ("verisign", "fptrack-pirate-fixture.com"): "verisign_domain.json",
    ("verisign", "fptrack-noabuse-fixture.com"): "verisign_domain_no_abuse.json",
    ("registrar", "fptrack-pirate-fixture.com"): "registrar_domain.json",
}
BROKEN = {"gone": "404", "busy": "429", "garbled": "garbled", "slow": "hang"}
BROKEN_IPS = {"45.0.0.1": "429", "45.0.0.2": "hang", "45.0.0.3": "garbled", "45.0.0.4": "404"}
RDAP_JSON = "application/rdap+json"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


class _Recording(FixtureServer):
    def __init__(self, services: RdapServices, name: str, host: str) -> None:
        self.services, self.name = services, name
        super().__init__(host=host)

    def make_handler(self) -> Handler:
        server = self

        class Answer(QuietHandler):
            def do_GET(self) -> None:
                path = unquote(urlsplit(self.path).path)
                server.services.asked.append((server.name, path))
                status, body, headers = server.services.answer(server.name, path)
                if status == 0:
                    server.services.released.wait(60)
                    return
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", headers.pop("Content-Type", RDAP_JSON))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Answer


class RdapServices:
    """The bootstrap on 127.0.0.1 and the RDAP servers on 127.0.0.2 (see the module
    docstring); ``bootstrap_url`` is what ``FPTRACK_RDAP_BOOTSTRAP_URL`` names."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self.released = threading.Event()
        self.bootstrap = _Recording(self, "bootstrap", "127.0.0.1")
        self.rdap = _Recording(self, "rdap", "127.0.0.2")
        self.base = self.rdap.url("").rstrip("/")
        self.bootstrap_url = self.bootstrap.url("/rdap/")

    def __enter__(self) -> RdapServices:
        self.bootstrap.start()
        self.rdap.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.released.set()  # a hanging answer ends
        self.rdap.stop()
        self.bootstrap.stop()

    def requests(self, server: str | None = None) -> list[str]:
        """The paths asked (of ``server`` only: ``bootstrap`` or ``rdap``)."""
        return [path for name, path in self.asked if server in (None, name)]

    def _fill(self, text: str) -> str:
        return text.replace("{rdap}", self.base)

    def answer(self, server: str, path: str) -> tuple[int, str, dict[str, str]]:
        """``(status, body, headers)`` for ``path`` (status 0: never answer)."""
        if server == "bootstrap":
            files = {"dns.json", "ipv4.json", "ipv6.json"}
            name = path.removeprefix("/rdap/")
            if path.startswith("/rdap/") and name in files:
                return (
                    200,
                    self._fill(sample(f"bootstrap_{name}")),
                    {"Content-Type": "application/json"},
                )
            return 404, "not found", {"Content-Type": "text/plain"}
        service, _, rest = path.strip("/").partition("/")
        kind, _, key = rest.rpartition("/")
        kind = kind.rsplit("/", 1)[-1]
        if service == "broken":
            mode = BROKEN_IPS.get(key) if kind == "ip" else BROKEN.get(key.split("-", 1)[0])
            return self._broken(mode or "404")
        if kind == "ip" and service in NETWORKS:
            network, name = NETWORKS[service]
            try:
                inside = ipaddress.ip_address(key) in network
            except ValueError:
                inside = False
            if inside:
                return 200, sample(name), {}
        if kind == "domain" and (service, key.lower()) in DOMAINS:
            return 200, self._fill(sample(DOMAINS[service, key.lower()])), {}
        return self._broken("404")

    def _broken(self, mode: str) -> tuple[int, str, dict[str, Any]]:
        if mode == "429":
            error = '{"errorCode": 429, "title": "Too Many Requests", "description": []}'
            return 429, error, {"Retry-After": "60"}
        if mode == "garbled":
            return 200, sample("malformed.json.txt"), {}
        if mode == "hang":
            return 0, "", {}
        return 404, sample("error_404.json"), {}

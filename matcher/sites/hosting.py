"""Who hosts a site: its addresses, their networks' owners and abuse contacts, and its
domain's registrar and abuse contact, looked up through RDAP (:mod:`matcher.sites.rdap`)
and kept on the site's ``site_contacts`` document (``hosting``,
:meth:`matcher.store.takedowns.Takedowns.set_hosting`), where takedown notices find them.

A site's lookup (:meth:`Lookups.look_up`):

1. its host is resolved (:func:`matcher.outbound.resolve`, within the deadline): its
   addresses, at most :data:`MAX_ADDRESSES`. Loopback, private and other internal
   addresses are kept and not looked up (an RIR knows nothing of them), said in one line;
2. each other address is asked of its RIR's RDAP server (``ip/<address>``), found in IANA's
   ``ipv4.json`` or ``ipv6.json``; an address inside a network already found is not asked
   again;
3. the registered domain of its host (:func:`matcher.sites.providers.registered_domain`) is
   asked of its registry's RDAP server (``domain/<name>``), found in ``dns.json``; when
   the registry refers to the registrar's own server (a ``related`` link: the thin .com and
   .net registries), that server is asked too, once (one hop), its values taken over the
   registry's.

Every request goes through :func:`matcher.outbound.request`: ``FPTRACK_RDAP_DEADLINE``
seconds each, at most :data:`MAX_BYTES`, :data:`REDIRECTS` redirects, and at most
``FPTRACK_RDAP_MAX_REQUESTS`` RDAP requests per site (the rest said, not made). The
bootstrap files come from ``FPTRACK_RDAP_BOOTSTRAP_URL`` (IANA's by default), a host the
operator named (:attr:`matcher.outbound.Policy.own`); the RDAP servers the files name are
not, and are reached on internal addresses only with ``FPTRACK_OUTBOUND_ALLOW_PRIVATE``. The
files are kept in the store (``rdap_bootstrap``) for :data:`BOOTSTRAP_MAX_AGE` and read
once per run: a site's lookup costs its own RDAP requests only (one per address's network,
one or two for its domain). A bootstrap file that cannot be fetched again is used as kept.

Each failure is one line of the lookup's ``errors`` ("ip rdap 104.16.0.1: 429 Too Many
Requests (rate-limited) from https://...", "domain pirate.xyz: no RDAP service in the
bootstrap for .xyz"). A lookup that found nothing keeps what an earlier one found
(:func:`merged`): its contacts, with the new errors and the time tried (``attempted_at``);
a part that failed alone (the networks, the registrar) keeps its earlier values the same way.

When the RDAP data names a network's owner, it becomes the site's provider (``provider_from``
``resolved``) unless an operator edited it, which is never replaced.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

from matcher import outbound
from matcher.outbound import OutboundError, Policy
from matcher.sites.providers import registered_domain
from matcher.sites.rdap import (
    BOOTSTRAP_FILES,
    Bootstrap,
    Network,
    RdapError,
    Registrar,
    load,
    parse_domain,
    parse_network,
)

DEFAULT_BOOTSTRAP_URL = "https://data.iana.org/rdap/"
BOOTSTRAP_MAX_AGE = timedelta(days=7)
"""How long a bootstrap file kept in the store is used before it is fetched again."""
MAX_AGE = timedelta(days=7)
"""A site's hosting is looked up again when its last try is older than this."""
MAX_BYTES = 2 * 1024 * 1024
"""The largest RDAP answer or bootstrap file read (IANA's files are under 100 KB; an RIR's
answer about a network with many contacts a few hundred KB)."""
REDIRECTS = 3
"""Redirects an RDAP request follows (RFC 7480 lets a server redirect to another's)."""
MAX_ADDRESSES = 8
"""A site's addresses kept and looked up at most."""
ACCEPT = {"Accept": "application/rdap+json, application/json", "User-Agent": "fptrack-rdap"}


@dataclass
class Looked:
    """One site's lookup: the ``hosting`` document made, and the HTTP requests it cost
    (RDAP requests, and bootstrap files fetched for it)."""

    site: str
    hosting: dict[str, Any]
    requests: int = 0
    bootstrap_requests: int = 0
    failed: bool = False
    """The lookup found nothing (no network owner or abuse contact, no registrar) and
    something failed; a site on internal addresses only, with no domain, has nothing to
    find and did not fail. What is kept may still be an earlier lookup's (:func:`merged`)."""


@dataclass
class _Budget:
    left: int
    spent: int = 0
    errors: list[str] = field(default_factory=list)
    notes: int = 0
    """Lines of ``errors`` that say what was not asked, not what failed."""


class Lookups:
    """RDAP lookups of sites under one policy, sharing the bootstrap files (kept in
    ``store``) of ``bootstrap_url``."""

    def __init__(
        self,
        store: Any,
        bootstrap_url: str,
        policy: Policy,
        max_requests: int,
    ) -> None:
        self.store = store
        self.bootstrap_url = bootstrap_url if bootstrap_url.endswith("/") else bootstrap_url + "/"
        self.bootstrap_policy = policy.owning(self.bootstrap_url)
        self.policy = policy
        self.max_requests = max_requests
        self.deadline = policy.deadline
        self._files: dict[Any, Bootstrap] = {}
        self.bootstrap_requests = 0

    @classmethod
    def from_settings(cls, store: Any, settings: Any) -> Lookups:
        """Lookups of ``FPTRACK_RDAP_BOOTSTRAP_URL``'s files, ``FPTRACK_RDAP_DEADLINE``
        seconds a request, internal RDAP servers with ``FPTRACK_OUTBOUND_ALLOW_PRIVATE``."""
        policy = Policy(
            settings.rdap_deadline, MAX_BYTES, settings.outbound_allow_private, REDIRECTS
        )
        return cls(store, settings.rdap_bootstrap_url, policy, settings.rdap_max_requests)

    # bootstrap ---------------------------------------------------------------------------

    def bootstrap(self, kind: str | int, at: datetime) -> Bootstrap:
        """The bootstrap file of ``kind`` (``dns``, 4 or 6): as read earlier in this run,
        else as kept in the store when fresh, else fetched and kept; :class:`RdapError`."""
        if kind in self._files:
            return self._files[kind]
        name = BOOTSTRAP_FILES[kind]
        kept = self.store.takedowns.bootstrap_file(name)
        if kept is not None and kept["fetched_at"] > at - BOOTSTRAP_MAX_AGE:
            parsed = Bootstrap.parse(kept["body"], name)
        else:
            try:
                body = self._fetch_bootstrap(name)
                parsed = Bootstrap.parse(body, name)
            except RdapError:
                if kept is None:
                    raise
                parsed = Bootstrap.parse(kept["body"], name)  # stale, but what there is
            else:
                self.store.takedowns.save_bootstrap_file(name, body.decode("utf-8"), at)
        self._files[kind] = parsed
        return parsed

    def _fetch_bootstrap(self, name: str) -> bytes:
        url = self.bootstrap_url + name
        self.bootstrap_requests += 1
        try:
            answer = outbound.request("GET", url, self.bootstrap_policy, headers=ACCEPT)
        except OutboundError as exc:
            reason = exc.detail.removeprefix(f"{url}: ")
            raise RdapError(f"the bootstrap file {url}: {reason}") from None
        if answer.status != 200:
            raise RdapError(f"the bootstrap file {url}: {answer.status} {answer.reason}")
        try:
            answer.body.decode("utf-8")
        except UnicodeDecodeError:
            raise RdapError(f"the bootstrap file {url} is not UTF-8 JSON") from None
        return answer.body

    # RDAP requests -----------------------------------------------------------------------

    def _get(self, url: str, budget: _Budget) -> dict[str, Any]:
        """One RDAP request within the site's ``budget``; the answer's JSON object, or
        :class:`RdapError` saying in one line what failed."""
        if budget.left <= 0:
            raise RdapError(
                f"not asked: the site's {self.max_requests} RDAP requests are spent "
                "(FPTRACK_RDAP_MAX_REQUESTS)"
            )
        budget.left -= 1
        budget.spent += 1
        try:
            answer = outbound.request("GET", url, self.policy, headers=ACCEPT)
        except OutboundError as exc:
            reason = exc.detail.removeprefix(f"{url}: ").removeprefix(f"cannot fetch {url}: ")
            if "no whole answer within" in reason:
                reason = f"timed out after {self.deadline:g} s"
            raise RdapError(f"{reason} ({url})") from None
        if answer.status == 404:
            raise RdapError(f"not found (404) at {url}")
        if answer.status == 429:
            raise RdapError(f"rate-limited (429 Too Many Requests) at {url}")
        if answer.status != 200:
            raise RdapError(f"{answer.status} {answer.reason} at {url}")
        return load(answer.body, f"the answer of {url}")

    # one site ----------------------------------------------------------------------------

    def look_up(self, site: str, url: str, at: datetime) -> Looked:
        """Look up who hosts the site at ``url`` (see the module docstring), now ``at``."""
        before = self.bootstrap_requests
        budget = _Budget(self.max_requests)
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
        addresses = self._addresses(host, budget.errors)
        networks = self._networks(addresses, at, budget)
        domain = _domain_of(host)
        registrar = self._registrar(domain, at, budget) if domain else Registrar()
        hosting = {
            "looked_up_at": at,
            "attempted_at": at,
            "host": host,
            "addresses": [str(a) for a in addresses],
            "networks": [n.as_doc() for n in networks],
            "domain": domain,
            "registrar": registrar.as_doc(),
            "errors": budget.errors,
        }
        spent = self.bootstrap_requests - before
        failed = not found_anything(hosting) and len(budget.errors) > budget.notes
        return Looked(site, hosting, budget.spent, spent, failed)

    def _addresses(self, host: str, errors: list[str]) -> list[ipaddress._BaseAddress]:
        if not host:
            errors.append("addresses: the site's URL names no host")
            return []
        try:
            found = outbound.resolve(host, 80, allow_private=True, deadline=self.deadline)
        except OutboundError as exc:
            errors.append(f"addresses of {host}: {exc.detail}")
            return []
        except TimeoutError:
            errors.append(f"addresses of {host}: no answer within {self.deadline:g} s")
            return []
        out: list[ipaddress._BaseAddress] = []
        for _, sockaddr in found:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            if address not in out:
                out.append(address)
        return out[:MAX_ADDRESSES]

    def _networks(
        self, addresses: Iterable[ipaddress._BaseAddress], at: datetime, budget: _Budget
    ) -> list[Network]:
        networks: list[Network] = []
        for address in addresses:
            if outbound.internal(address):
                budget.errors.append(f"ip rdap {address}: {_internal_kind(address)}, not looked up")
                budget.notes += 1
                continue
            known = next((n for n in networks if n.holds(address)), None)
            if known is not None:
                networks.append(Network(**{**known.as_doc(), "address": str(address)}))
                continue
            try:
                base = self.bootstrap(address.version, at).address_service(address)
                if not base:
                    raise RdapError(f"no RDAP service in the bootstrap for {address}")
                query = base + "ip/" + str(address)
                network = parse_network(self._get(query, budget), str(address), query)
            except RdapError as exc:
                budget.errors.append(f"ip rdap {address}: {exc.detail}")
                continue
            if not network.abuse_email:
                named = network.handle or network.name or "the network"
                budget.errors.append(f"ip rdap {address}: {named} names no abuse contact")
            networks.append(network)
        return networks

    def _registrar(self, domain: str, at: datetime, budget: _Budget) -> Registrar:
        try:
            base = self.bootstrap("dns", at).domain_service(domain)
            if not base:
                tld = domain.rsplit(".", 1)[-1]
                raise RdapError(f"no RDAP service in the bootstrap for .{tld}")
            query = base + "domain/" + quote(domain)
            found = parse_domain(self._get(query, budget), query)
        except RdapError as exc:
            budget.errors.append(f"domain {domain}: {exc.detail}")
            return Registrar()
        registrar = found.registrar
        if found.related and found.related.rstrip("/") != query:
            try:  # the registrar's own server: one hop, never its referrals
                own = parse_domain(self._get(found.related, budget), found.related)
            except RdapError as exc:
                budget.errors.append(f"registrar rdap {domain}: {exc.detail}")
            else:
                registrar = own.registrar.over(registrar)
        if registrar.known() and not registrar.abuse_email:
            budget.errors.append(f"domain {domain}: the registrar names no abuse email")
        return registrar


def _internal_kind(address: ipaddress._BaseAddress) -> str:
    if address.is_loopback:
        return "a loopback address (this machine)"
    if address.is_private:
        return "a private address"
    return "an internal address"


def _domain_of(host: str) -> str:
    """The registered domain of ``host``; "" for an address or a name of one label."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return ""
    return registered_domain(host) if "." in host.strip(".") else ""


def found_anything(hosting: dict[str, Any] | None) -> bool:
    """Whether ``hosting`` names a network owner or abuse contact, or a registrar."""
    if not hosting:
        return False
    return _networks_found(hosting) or _registrar_found(hosting)


def _networks_found(hosting: dict[str, Any]) -> bool:
    return any(n.get("name") or n.get("abuse_email") for n in hosting.get("networks") or ())


def _registrar_found(hosting: dict[str, Any]) -> bool:
    registrar = hosting.get("registrar") or {}
    return bool(registrar.get("name") or registrar.get("iana_id") or registrar.get("abuse_email"))


def merged(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """The ``hosting`` to keep after the lookup ``new``, given the kept ``old``: ``new``,
    but a part it did not find (the networks, the registrar) kept from ``old`` when ``old``
    found it, and ``old``'s ``looked_up_at`` when ``new`` found nothing at all; its errors
    and ``attempted_at`` are always the new ones."""
    if not old:
        return new
    out = dict(new)
    if not _networks_found(new) and _networks_found(old):
        out["networks"] = old.get("networks", [])
        out["addresses"] = new.get("addresses") or old.get("addresses", [])
    if not _registrar_found(new) and _registrar_found(old):
        out["registrar"] = old["registrar"]
        out["domain"] = old.get("domain", new.get("domain", ""))
    if not found_anything(new) and old.get("looked_up_at") is not None:
        out["looked_up_at"] = old["looked_up_at"]
    return out


def owner(hosting: dict[str, Any]) -> str:
    """The first network owner the lookup names ("" for none)."""
    return next((n["name"] for n in hosting.get("networks") or () if n.get("name")), "")


def sites_with_matches(store: Any) -> dict[str, str]:
    """The watched sites with active matches: name -> the URL to look up (its first start
    URL)."""
    out = {}
    for site in store.sites.list_sites():
        if site.start_urls and store.matches.count(site=site.name, active_only=True):
            out[site.name] = site.start_urls[0]
    return out


def look_up_sites(
    store: Any,
    lookups: Lookups,
    sites: dict[str, str],
    at: datetime,
) -> list[Looked]:
    """Look up each of ``sites`` (name -> URL), keep each result merged with the one kept
    (:func:`merged`), and make a named network owner the site's resolved provider (unless
    an operator edited it). The lookups, in order."""
    done = []
    for name, url in sites.items():
        looked = lookups.look_up(name, url, at)
        kept = merged(store.takedowns.hosting(name), looked.hosting)
        store.takedowns.set_hosting(name, kept)
        provider = owner(kept)
        if provider:
            store.takedowns.set_resolved_provider(name, provider)
        looked.hosting = kept
        done.append(looked)
    return done


def due_sites(store: Any, at: datetime, limit: int, max_age: timedelta = MAX_AGE) -> dict[str, str]:
    """The sites with matches whose hosting was never looked up, or last tried before
    ``max_age`` ago, the longest waiting first, at most ``limit``."""
    candidates = sites_with_matches(store)
    due = store.takedowns.hosting_due(list(candidates), at - max_age, limit)
    return {name: candidates[name] for name in due}

"""Registration data of a site's network and domain: RDAP answers read, and the IANA
bootstrap that says which RDAP server to ask. Pure: no request is made here (the lookups,
through :mod:`matcher.outbound`, are :mod:`matcher.sites.hosting`'s).

- **Bootstrap** (RFC 9224, :class:`Bootstrap`): IANA's ``dns.json``, ``ipv4.json`` and
  ``ipv6.json`` list, for each TLD or address block, the base URLs of its RDAP service. A
  domain's service is the one of its longest matching label suffix, an address's the one of
  its longest matching prefix; an https URL is taken before an http one.
- **Answers** (RFC 9083): an IP network (:func:`parse_network`: handle, owner, CIDR from the
  ``cidr0_cidrs`` extension or ``startAddress``/``endAddress``, country, abuse contact) and a
  domain (:func:`parse_domain`: the registrar's name, its IANA Registrar ID from
  ``publicIds``, its abuse email and phone, and the ``related`` link by which a thin
  registry such as Verisign's for .com refers to the registrar's own RDAP server). Entities
  are read with their nested entities (ARIN puts the abuse contact inside the network owner's
  entity, APNIC its ``IRT-...`` incident-response team), their contact data from the jCard
  of ``vcardArray`` (RFC 7095: ``fn``, ``org``, ``email``, ``tel``).
- **Redaction**: registries redact personal data (RFC 9537: a ``redacted`` member lists what
  was removed, emptied or replaced) and many write placeholders such as ``REDACTED FOR
  PRIVACY`` instead; a removed or emptied value, or such a placeholder, is read as ""
  (unknown), never as a contact.

No RDAP library is used. ``whoisit`` parses raw answers, but only the entities at the top
of an answer (not the nested abuse contacts above), no phone, no registrar ID, no
redaction, and it fetches with ``requests`` on its own; ``whodap`` and ``asyncwhois`` fetch
through ``httpx``, ``ipwhois`` through ``urllib``, with their own bootstrap requests: none
lets every request go through :func:`matcher.outbound.request` (one deadline, a size cap,
internal addresses refused), which every request of fptrack outside the crawl does. The
format read here is the small, stable part of RFC 9083 those libraries read.

Every value read is remote data: strings only, one line, at most :data:`MAX_CHARS`.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from matcher.errors import OneLineError

MAX_CHARS = 200
"""The longest value kept of any field."""
MAX_DEPTH = 4
"""Nested entities read at most this deep."""
REDACTED = re.compile(
    r"^(redacted|redacted for privacy|redacted for gdpr|data redacted|non-public data|"
    r"not disclosed|data protected|privacy protected|withheld for privacy|"
    r"redacted for privacy purposes|please query the rdds service of the registrar.*)\.?$",
    re.IGNORECASE,
)
"""Placeholders registries write where they withheld a value."""
BOOTSTRAP_FILES = {"dns": "dns.json", 4: "ipv4.json", 6: "ipv6.json"}
"""The IANA bootstrap file of each kind of query."""
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class RdapError(OneLineError):
    """An answer or a bootstrap file that cannot be read; ``detail`` says why, in one line."""


@dataclass(frozen=True)
class Network:
    """The network an address is in, as its RIR's RDAP server describes it."""

    address: str
    handle: str = ""
    name: str = ""
    """The network's owner (its registrant entity's name), else the network's own name."""
    cidr: str = ""
    country: str = ""
    abuse_name: str = ""
    abuse_email: str = ""
    source: str = ""
    """The URL asked."""

    def as_doc(self) -> dict[str, str]:
        return asdict(self)

    def holds(self, address: Address) -> bool:
        """Whether ``address`` is in this network's CIDR blocks (so needs no query of its own)."""
        for block in self.cidr.split(","):
            try:
                if address in ipaddress.ip_network(block.strip(), strict=False):
                    return True
            except ValueError:
                continue
        return False


@dataclass(frozen=True)
class Registrar:
    """A domain's registrar, as its registry's (and the registrar's) RDAP server describes it."""

    name: str = ""
    iana_id: str = ""
    abuse_email: str = ""
    abuse_phone: str = ""
    source: str = ""

    def as_doc(self) -> dict[str, str]:
        return asdict(self)

    def known(self) -> bool:
        return any((self.name, self.iana_id, self.abuse_email, self.abuse_phone))

    def over(self, other: Registrar) -> Registrar:
        """This registrar's values, ``other``'s where this one has none (the registrar's own
        answer over its registry's)."""
        mine, theirs = asdict(self), asdict(other)
        return Registrar(**{k: mine[k] or theirs[k] for k in mine})


NETWORK_FIELDS = tuple(f.name for f in fields(Network))
"""The fields of a network as kept (``hosting.networks``), each a string ("" when unknown)."""
REGISTRAR_FIELDS = tuple(f.name for f in fields(Registrar))
"""The fields of a registrar as kept (``hosting.registrar``), each a string."""


@dataclass(frozen=True)
class Domain:
    """What a domain answer says: its registrar, and the registrar's RDAP URL for it (a thin
    registry's referral, rel ``related``; "" when none)."""

    registrar: Registrar
    related: str = ""


@dataclass
class Contact:
    """One entity's contact data read from its jCard."""

    handle: str = ""
    roles: tuple[str, ...] = ()
    name: str = ""
    emails: list[str] = field(default_factory=list)
    phones: list[str] = field(default_factory=list)
    public_ids: dict[str, str] = field(default_factory=dict)


def text(value: Any) -> str:
    """``value`` as one line of at most :data:`MAX_CHARS`; "" for anything not a string,
    and for a redaction placeholder (:data:`REDACTED`).

    >>> text("  REDACTED FOR PRIVACY "), text("abuse@example.net"), text(["x"])
    ('', 'abuse@example.net', '')
    """
    if not isinstance(value, str):
        return ""
    value = " ".join(value.split())[:MAX_CHARS]
    return "" if REDACTED.match(value) else value


def load(body: bytes, what: str) -> dict[str, Any]:
    """An RDAP answer's JSON object; :class:`RdapError` when it is not one."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RdapError(f"{what} is not RDAP JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RdapError(f"{what} is not RDAP JSON: not an object")
    return data


def jcard(card: Any) -> tuple[str, list[str], list[str]]:
    """The name (``fn``, else ``org``), emails and phones of a jCard (RFC 7095:
    ``["vcard", [[name, params, type, value], ...]]``); a ``tel`` URI loses its ``tel:``.

    >>> jcard(["vcard", [["version", {}, "text", "4.0"], ["fn", {}, "text", "Abuse"],
    ...   ["email", {}, "text", "abuse@example.net"],
    ...   ["tel", {"type": ["voice"]}, "uri", "tel:+1.5555550100"]]])
    ('Abuse', ['abuse@example.net'], ['+1.5555550100'])
    """
    if not (isinstance(card, list) and len(card) == 2 and isinstance(card[1], list)):
        return "", [], []
    fn = org = ""
    emails: list[str] = []
    phones: list[str] = []
    for prop in card[1]:
        if not (isinstance(prop, list) and len(prop) >= 4 and isinstance(prop[0], str)):
            continue
        name, value = prop[0].lower(), prop[3]
        if name == "org" and isinstance(value, list):  # structured: the first part
            value = value[0] if value else ""
        one = text(value)
        if not one:
            continue
        if name == "fn" and not fn:
            fn = one
        elif name == "org" and not org:
            org = one
        elif name == "email" and one not in emails:
            emails.append(one)
        elif name == "tel":
            phone = one.removeprefix("tel:").split(";", 1)[0]
            if phone and phone not in phones:
                phones.append(phone)
    return fn or org, emails, phones


def contacts(data: dict[str, Any]) -> Iterator[Contact]:
    """Every entity of ``data`` and its nested ones (at most :data:`MAX_DEPTH` deep),
    outermost first."""

    def walk(entities: Any, depth: int) -> Iterator[Contact]:
        if depth > MAX_DEPTH or not isinstance(entities, list):
            return
        nested = []
        for entity in entities:
            if not isinstance(entity, dict):
                continue
            roles = entity.get("roles")
            roles = tuple(text(r).lower() for r in roles) if isinstance(roles, list) else ()
            name, emails, phones = jcard(entity.get("vcardArray"))
            ids = {}
            for public in entity.get("publicIds") or ():
                if isinstance(public, dict) and text(public.get("type")):
                    ids[text(public.get("type")).lower()] = text(public.get("identifier"))
            yield Contact(text(entity.get("handle")), roles, name, emails, phones, ids)
            nested.append(entity.get("entities"))
        for inner in nested:
            yield from walk(inner, depth + 1)

    yield from walk(data.get("entities"), 1)


def _with_role(data: dict[str, Any], role: str) -> list[Contact]:
    return [c for c in contacts(data) if role in c.roles]


def _abuse(found: list[Contact]) -> tuple[str, str, str]:
    """The name, email and phone of the first abuse contact with an email (else the first)."""
    best = next((c for c in found if c.emails), found[0] if found else Contact())
    return (
        best.name,
        best.emails[0] if best.emails else "",
        best.phones[0] if best.phones else "",
    )


def _kind(data: dict[str, Any], expected: str, what: str) -> None:
    kind = text(data.get("objectClassName")).lower()
    if kind != expected:
        if "errorCode" in data:
            title = text(data.get("title")) or "an error"
            raise RdapError(f"{what} answered {title} (errorCode {text(str(data['errorCode']))})")
        raise RdapError(f"{what} is not an RDAP {expected} (objectClassName {kind!r})")


def network_cidr(data: dict[str, Any]) -> str:
    """The network's CIDR blocks, comma-separated: from the ``cidr0_cidrs`` extension, else
    from ``startAddress`` and ``endAddress``."""
    blocks = []
    for item in data.get("cidr0_cidrs") or ():
        if not isinstance(item, dict):
            continue
        prefix = text(item.get("v4prefix")) or text(item.get("v6prefix"))
        length = item.get("length")
        try:
            blocks.append(str(ipaddress.ip_network(f"{prefix}/{int(length)}", strict=False)))
        except (TypeError, ValueError):
            continue
    if blocks:
        return ", ".join(blocks)
    try:
        start = ipaddress.ip_address(text(data.get("startAddress")))
        end = ipaddress.ip_address(text(data.get("endAddress")))
        found = ipaddress.summarize_address_range(start, end)  # type: ignore[arg-type]
        return ", ".join(str(n) for n in list(found)[:8])
    except (TypeError, ValueError):
        return ""


def parse_network(data: dict[str, Any], address: str, source: str) -> Network:
    """The :class:`Network` of an ``ip network`` answer about ``address`` asked at
    ``source``; :class:`RdapError` when ``data`` is none."""
    _kind(data, "ip network", source)
    owners = _with_role(data, "registrant")
    owner = next((c.name for c in owners if c.name), "")
    abuse_name, abuse_email, _ = _abuse(_with_role(data, "abuse"))
    return Network(
        address=address,
        handle=text(data.get("handle")),
        name=owner or text(data.get("name")),
        cidr=network_cidr(data),
        country=text(data.get("country")).upper()[:2],
        abuse_name=abuse_name,
        abuse_email=abuse_email,
        source=source,
    )


def related_link(data: dict[str, Any]) -> str:
    """The ``related`` RDAP link of a domain answer (the registrar's answer for it), "" when
    none: an http(s) URL typed ``application/rdap+json`` (or untyped) naming a domain."""
    for link in data.get("links") or ():
        if not isinstance(link, dict) or text(link.get("rel")).lower() != "related":
            continue
        href, kind = text(link.get("href")), text(link.get("type")).lower()
        is_domain = href.startswith(("http://", "https://")) and "/domain/" in href.lower()
        if is_domain and kind in ("", "application/rdap+json"):
            return href
    return ""


def parse_domain(data: dict[str, Any], source: str) -> Domain:
    """The registrar of a ``domain`` answer asked at ``source`` (its ``registrar`` entity, the
    abuse contact nested in it, else any abuse contact), and its ``related`` link;
    :class:`RdapError` when ``data`` is none."""
    _kind(data, "domain", source)
    registrars = _with_role(data, "registrar")
    registrar = registrars[0] if registrars else Contact()
    nested = []
    for entity in data.get("entities") or ():
        if isinstance(entity, dict) and "registrar" in (entity.get("roles") or ()):
            nested = _with_role({"entities": entity.get("entities")}, "abuse")
            break
    _, email, phone = _abuse(nested or _with_role(data, "abuse"))
    iana = registrar.public_ids.get("iana registrar id", "")
    found = Registrar(registrar.name, iana, email, phone, source)
    return Domain(found, related_link(data))


@dataclass(frozen=True)
class Bootstrap:
    """One IANA bootstrap file (RFC 9224): its services, each a list of entries (TLDs or
    address blocks) and the base URLs of their RDAP service."""

    services: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]

    @classmethod
    def parse(cls, body: bytes | str, name: str) -> Bootstrap:
        """The bootstrap file ``name``; :class:`RdapError` when it is not one."""
        raw = body.encode("utf-8") if isinstance(body, str) else body
        data = load(raw, f"the bootstrap file {name}")
        services = data.get("services")
        if not isinstance(services, list):
            raise RdapError(f"the bootstrap file {name} has no list of services")
        out = []
        for service in services:
            if not (isinstance(service, list) and len(service) >= 2):
                continue
            entries, urls = service[0], service[-1]
            if isinstance(entries, list) and isinstance(urls, list):
                out.append(
                    (
                        tuple(text(e).lower() for e in entries if text(e)),
                        tuple(u for u in (text(x) for x in urls) if u.startswith("http")),
                    )
                )
        return cls(tuple(out))

    def _base(self, urls: tuple[str, ...]) -> str:
        chosen = next((u for u in urls if u.startswith("https://")), urls[0] if urls else "")
        return chosen if not chosen or chosen.endswith("/") else chosen + "/"

    def domain_service(self, domain: str) -> str:
        """The base URL of ``domain``'s RDAP service (its longest matching suffix), "" when
        the file lists none."""
        labels = domain.lower().rstrip(".").split(".")
        for start in range(len(labels)):
            suffix = ".".join(labels[start:])
            for entries, urls in self.services:
                if suffix in entries and urls:
                    return self._base(urls)
        return ""

    def address_service(self, address: Address) -> str:
        """The base URL of the RDAP service of ``address`` (its longest matching block), ""
        when the file lists none."""
        best, best_length = "", -1
        for entries, urls in self.services:
            for entry in entries:
                try:
                    block = ipaddress.ip_network(entry, strict=False)
                except ValueError:
                    continue
                if (
                    block.version == address.version
                    and address in block
                    and block.prefixlen > best_length
                    and urls
                ):
                    best, best_length = self._base(urls), block.prefixlen
        return best

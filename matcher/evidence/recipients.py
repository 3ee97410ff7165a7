"""Who a takedown notice is addressed to: the site's operator, its hosting provider's abuse
desk, its domain's registrar, or the search engines' delisting channel (issue 41, part 3).

- **Kinds** (:data:`~matcher.store.recipient_kinds.RECIPIENTS`, in the order a URL still
  up is escalated: :func:`next_recipient`): ``operator`` (the site's own contact,
  ``site_contacts.contact``), ``host`` (the abuse address of the network its address
  belongs to), ``registrar`` (the abuse address of its domain's registrar) and ``search``
  (no email: an export for the search engines' bulk delisting forms,
  :mod:`admin.report.delisting`).
- **Addresses** (:func:`address`): an operator's edit (``host_email``/``host_name``,
  ``registrar_email``/``registrar_name`` on the site's ``site_contacts`` document, set by
  ``fptrack takedowns contact`` or the admin) comes first and is never replaced by a
  lookup; else the RDAP lookup's ``hosting`` field on the same document: the host is the
  first of its ``networks`` with an ``abuse_email`` (named by the network's name), the
  registrar its ``registrar``.
- **Earlier records**: a notice or case kept before recipients existed has none; it was
  sent to the operator (:func:`recipient_of`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from matcher.store.recipient_kinds import RECIPIENTS

EMAILED = ("operator", "host", "registrar")
"""The kinds a notice is emailed to (``search`` is exported)."""
ROLES = {
    "operator": "the site's operator",
    "host": "the hosting provider's abuse desk",
    "registrar": "the domain's registrar",
    "search": "the search engines' delisting forms",
}


def recipient_of(doc: Mapping[str, Any]) -> str:
    """The recipient kind of a notice or a case (its latest notice's); ``operator`` for the
    ones kept before recipients existed.

    >>> recipient_of({}), recipient_of({"recipient": "host"})
    ('operator', 'host')
    """
    kind = doc.get("recipient") or "operator"
    return kind if kind in RECIPIENTS else "operator"


def sent_to(case: Mapping[str, Any]) -> dict[str, Any]:
    """When each recipient was first told of a case's URL (``{kind: datetime}``); a case
    kept before recipients existed was told the operator at its first notice."""
    kept = case.get("sent_to")
    if isinstance(kept, Mapping) and kept:
        return {k: v for k, v in kept.items() if k in RECIPIENTS}
    return {"operator": case.get("first_sent_at")}


def next_recipient(told: Iterable[str]) -> str | None:
    """The recipient to escalate to after those ``told``: the first kind after the furthest
    one told, ``None`` when the search engines were told already.

    >>> next_recipient(["operator"]), next_recipient(["operator", "registrar"])
    ('host', 'search')
    >>> next_recipient([]), next_recipient(["search"]) is None
    ('operator', True)
    """
    furthest = max((RECIPIENTS.index(k) for k in told if k in RECIPIENTS), default=-1)
    return RECIPIENTS[furthest + 1] if furthest + 1 < len(RECIPIENTS) else None


@dataclass(frozen=True)
class Address:
    """Where a recipient of one site is reached: its kind, email ("" when unknown), name,
    where the email came from (``edited``, ``lookup`` or ""), and for a host the site's
    addresses (IPs)."""

    kind: str
    email: str = ""
    name: str = ""
    source: str = ""
    addresses: tuple[str, ...] = ()


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def address(contact: Mapping[str, Any], kind: str) -> Address:
    """Where ``kind`` is reached for the site whose ``site_contacts`` document is
    ``contact`` (see the module docstring)."""
    if kind not in RECIPIENTS:
        raise ValueError(f"recipient must be one of {', '.join(RECIPIENTS)}, got {kind!r}")
    hosting = contact.get("hosting") if isinstance(contact.get("hosting"), Mapping) else {}
    ips = tuple(str(a) for a in hosting.get("addresses") or () if isinstance(a, str))
    if kind == "operator":
        email = _text(contact.get("contact"))
        return Address(kind, email, "", "edited" if email else "")
    if kind == "search":
        return Address(kind, "", "search engines")
    edited = _text(contact.get(f"{kind}_email"))
    if kind == "host":
        networks = [n for n in hosting.get("networks") or () if isinstance(n, Mapping)]
        found = next((n for n in networks if _text(n.get("abuse_email"))), {})
        name = _text(contact.get("host_name")) or _text(found.get("name"))
        if edited:
            return Address(kind, edited, name, "edited", ips)
        email = _text(found.get("abuse_email"))
        return Address(kind, email, name, "lookup" if email else "", ips)
    registrar = hosting.get("registrar") if isinstance(hosting.get("registrar"), Mapping) else {}
    name = _text(contact.get("registrar_name")) or _text(registrar.get("name"))
    if edited:
        return Address(kind, edited, name, "edited")
    email = _text(registrar.get("abuse_email"))
    return Address(kind, email, name, "lookup" if email else "")


def domain_of(contact: Mapping[str, Any]) -> str:
    """The site's registered domain as the lookup found it ("" when not looked up)."""
    hosting = contact.get("hosting") if isinstance(contact.get("hosting"), Mapping) else {}
    return _text(hosting.get("domain"))

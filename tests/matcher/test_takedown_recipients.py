"""Notices to the right party (issue 41, part 3), below the admin: where each recipient is
reached (an operator's edit before the RDAP lookup's ``hosting``, never replaced by it), the
order a URL is escalated in, the store's record of the recipients told of each URL (on both
backends), and the figures per recipient kind with a removal credited to the recipient of the
URL's latest notice before it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from bson import ObjectId

from matcher.evidence.recipients import address, next_recipient, recipient_of, sent_to
from matcher.evidence.takedowns import figures
from matcher.store import Store
from matcher.store.common import StoreError

STORE_BACKENDS = ("server", "memory")
T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


def hosting(
    net_email: str,
    registrar_email: str,
    *,
    name: str = "HOSTONE-NET",
    ip: str = "203.0.113.7",
    host: str = "pirate-a.example",
) -> dict[str, Any]:
    """A lookup's ``hosting`` as the RDAP lookup stores it: a first network without an abuse
    address, then the one with it."""
    return {
        "looked_up_at": T0,
        "host": host,
        "addresses": [ip],
        "networks": [
            {"address": ip, "handle": "NET-0", "name": "UPSTREAM",
             "cidr": "203.0.0.0/16", "country": "US", "abuse_name": "", "abuse_email": "",
             "source": "rdap.arin.net"},
            {"address": ip, "handle": "NET-1", "name": name, "cidr": "203.0.113.0/24",
             "country": "US", "abuse_name": "Abuse", "abuse_email": net_email,
             "source": "rdap.arin.net"},
        ],
        "domain": host.partition(".")[2] or host,
        "registrar": {"name": "Registrar One", "iana_id": "1", "abuse_email": registrar_email,
                      "abuse_phone": "", "source": "rdap.verisign.com"},
        "errors": [],
    }  # fmt: skip


def test_each_recipient_is_reached_at_the_edited_address_else_the_lookups() -> None:
    looked = {
        "contact": "ops@pirate-a.example",
        "hosting": hosting("abuse@hostone.example", "abuse@reg.example"),
    }
    host, registrar = address(looked, "host"), address(looked, "registrar")
    assert (host.email, host.name, host.source) == (
        "abuse@hostone.example",
        "HOSTONE-NET",
        "lookup",
    )
    assert host.addresses == ("203.0.113.7",)
    assert (registrar.email, registrar.name, registrar.source) == (
        "abuse@reg.example", "Registrar One", "lookup",
    )  # fmt: skip
    assert address(looked, "operator").email == "ops@pirate-a.example"
    edited = {**looked, "host_email": "noc@hostone.example", "registrar_email": "legal@reg.example"}
    assert (address(edited, "host").email, address(edited, "host").source) == (
        "noc@hostone.example", "edited",
    )  # fmt: skip
    assert address(edited, "registrar").email == "legal@reg.example"
    assert address({}, "host").email == "" and address({}, "registrar").source == ""
    assert address({"hosting": "not a mapping"}, "host").email == ""
    assert address(looked, "search").email == ""
    with pytest.raises(ValueError, match="recipient must be one of"):
        address(looked, "webmaster")


def test_escalation_goes_operator_host_registrar_search() -> None:
    assert next_recipient([]) == "operator"
    assert next_recipient(["operator"]) == "host"
    assert next_recipient(["operator", "host"]) == "registrar"
    assert next_recipient(["host"]) == "registrar"  # the furthest told decides
    assert next_recipient(["registrar"]) == "search"
    assert next_recipient(["operator", "search"]) is None
    assert recipient_of({}) == "operator" and recipient_of({"recipient": "search"}) == "search"


def case(url: str, site: str, told: dict[str, datetime], state: str, **more: Any) -> dict[str, Any]:
    """A case as the store keeps it, told ``told`` (kind: first notice) in that order."""
    kinds = list(told)
    return {
        "url": url, "site": site, "provider": "hostone", "first_sent_at": min(told.values()),
        "sent_at": max(told.values()), "recipient": kinds[-1], "recipients": kinds,
        "sent_to": told, "state": state, "notices": len(kinds), **more,
    }  # fmt: skip


def check(at: datetime, kind: str) -> dict[str, Any]:
    return {"at": at, "kind": kind, "status": 200, "detail": ""}


def test_a_removal_counts_for_the_latest_notices_recipient() -> None:
    """Three URLs: one the operator took down; one the operator ignored and the host took
    down; one still up after operator, host and registrar (to escalate to the search
    engines); and a case kept before recipients existed, read as the operator's."""
    d = timedelta(days=1)
    cases = [
        case("http://a/1", "a", {"operator": T0}, "removed", removed_at=T0 + d,
             checks=[check(T0 + d, "gone")]),
        case("http://a/2", "a", {"operator": T0, "host": T0 + 8 * d}, "removed",
             removed_at=T0 + 11 * d,
             checks=[check(T0 + d, "copies"), check(T0 + 9 * d, "copies"),
                     check(T0 + 11 * d, "gone")]),
        case("http://b/1", "b", {"operator": T0, "host": T0 + 8 * d, "registrar": T0 + 16 * d},
             "up", checks=[check(T0 + d, "copies"), check(T0 + 9 * d, "unreachable"),
                           check(T0 + 17 * d, "copies")]),
        {"url": "http://c/1", "site": "c", "provider": "hosttwo", "first_sent_at": T0,
         "sent_at": T0, "state": "removed", "removed_at": T0 + 3 * d,
         "checks": [check(T0 + 3 * d, "no_copy")]},
    ]  # fmt: skip
    notices = [
        {"site": "a", "provider": "hostone", "sent_at": T0},  # before recipients existed
        {"site": "b", "provider": "hostone", "sent_at": T0, "recipient": "operator"},
        {"site": "c", "provider": "hosttwo", "sent_at": T0},
        {"site": "a", "sites": ["a", "b"], "providers": ["hostone"], "recipient": "host",
         "sent_at": T0 + 8 * d},
        {"site": "b", "sites": ["b"], "provider": "hostone", "recipient": "registrar",
         "sent_at": T0 + 16 * d},
    ]  # fmt: skip
    found = figures(cases, notices, T0 + 30 * d, 7)
    by = {f.name: f for f in found["recipients"]}
    operator, host, registrar = by["operator"], by["host"], by["registrar"]
    assert (operator.notices, operator.urls, operator.rechecked, operator.removed) == (3, 4, 4, 2)
    assert operator.removal_rate == 0.5 and operator.median_days == 2.0  # days 1 and 3
    assert (host.notices, host.urls, host.removed) == (1, 2, 1)
    assert host.rechecked == 2  # b/1's recheck after the host's notice was unreachable, then up
    assert host.removal_rate == 0.5 and host.median_days == 3.0  # from the host's notice
    assert (registrar.notices, registrar.urls, registrar.rechecked, registrar.removed) == (
        1,
        1,
        1,
        0,
    )
    [late] = registrar.escalate
    assert late["url"] == "http://b/1" and late["next_recipient"] == "search"
    assert late["recipients"] == ["operator", "host", "registrar"]
    assert operator.escalate == [] and host.escalate == []  # listed under its latest only
    assert "search" not in by
    sites = {f.name: f for f in found["sites"]}
    assert (sites["a"].notices, sites["b"].notices, sites["c"].notices) == (2, 3, 1)
    assert sites["a"].removed == 2 and sites["a"].median_days == 6.0  # days 1 and 11 from T0
    assert [e["url"] for e in sites["b"].escalate] == ["http://b/1"]
    providers = {f.name: f for f in found["providers"]}
    assert providers["hostone"].notices == 4 and providers["hosttwo"].urls == 1
    # the URL still up is not late a week after its latest notice (the registrar's, day 16)
    assert figures(cases, notices, T0 + 22 * d, 7)["sites"][0].escalate == []
    assert sent_to(cases[3]) == {"operator": T0}


def site_page(store: Store, site: str, path: str) -> dict[str, Any]:
    return {
        "url": f"http://{site}.example{path}", "page_id": None, "work_ids": [ObjectId()],
        "match_ids": [ObjectId()], "content_hash": "h", "site": site, "provider": f"p-{site}",
    }  # fmt: skip


def test_the_store_keeps_who_was_told_of_each_url(store: Store) -> None:
    d = timedelta(days=1)
    one, two = site_page(store, "a", "/1"), site_page(store, "b", "/1")
    store.takedowns.record_notice(
        "a", [one], sent_at=T0, via="email", to="ops@a.example", provider="p-a", due=[T0 + d]
    )
    notice = store.takedowns.record_notice(
        "a", [one, two], sent_at=T0 + 8 * d, via="email", to="abuse@hostone.example",
        provider="p-a", due=[T0 + 9 * d], recipient="host",
    )  # fmt: skip
    store.takedowns.record_notice(
        "a",
        [one],
        sent_at=T0 + 10 * d,
        via="marked",
        to="",
        provider="p-a",
        due=[],
        recipient="host",
    )
    kept = {(c["site"], c["url"]): c for c in store.takedowns.cases()}
    first, second = kept[("a", one["url"])], kept[("b", two["url"])]
    assert first["recipients"] == ["operator", "host"] and first["recipient"] == "host"
    assert first["sent_to"] == {"operator": T0, "host": T0 + 8 * d}  # the first of each
    assert first["notices"] == 3 and first["first_sent_at"] == T0
    assert second["recipients"] == ["host"] and second["provider"] == "p-b"
    [*_, host] = sorted(store.takedowns.notices(), key=lambda n: n["sent_at"])[:2]
    assert host["_id"] == notice and host["sites"] == ["a", "b"]
    assert host["providers"] == ["p-a", "p-b"] and host["recipient"] == "host"
    assert host["urls"] == 2
    with pytest.raises(StoreError, match="recipient must be one of"):
        store.takedowns.record_notice(
            "a", [one], sent_at=T0, via="email", to="", provider="", due=[], recipient="$ne"
        )

    # the lookup's hosting sits beside the operator's edits: neither replaces the other
    store.takedowns.set_contact("a", contact="ops@a.example", host_email="noc@hostone.example")
    store.takedowns.set_hosting("a", hosting("abuse@hostone.example", "abuse@reg.example"))
    kept_contact = store.takedowns.contact("a")
    assert kept_contact["host_email"] == "noc@hostone.example"
    assert kept_contact["hosting"]["registrar"]["abuse_email"] == "abuse@reg.example"
    assert address(kept_contact, "host").email == "noc@hostone.example"
    assert address(store.takedowns.contacts()["a"], "registrar").source == "lookup"
    assert store.takedowns.contact("nosuch")["hosting"] == {}

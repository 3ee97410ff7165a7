"""Who hosts a site (:mod:`matcher.sites.rdap`, :mod:`matcher.sites.hosting`): saved RDAP
answers shaped like ARIN's, APNIC's, RIPE's, Verisign's and a registrar's read as they are;
whole lookups against local RDAP services through the outbound policy, counting the HTTP
requests each site costs (the bootstrap fetched once, then kept in the store); every failure
one line; a failed refresh keeping the contacts found before; an edited provider never
replaced. The store's part runs on both backends."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from itertools import count

import pytest
from bson import ObjectId

from matcher.settings import Settings
from matcher.sites import hosting
from matcher.sites.hosting import Lookups, due_sites, look_up_sites, merged
from matcher.sites.rdap import (
    Bootstrap,
    RdapError,
    jcard,
    load,
    network_cidr,
    parse_domain,
    parse_network,
    text,
)
from matcher.sites.site_config import SiteConfig
from matcher.store import Store
from tests.servers.rdap import RdapServices, sample

STORE_BACKENDS = ("server", "memory")
AT = datetime(2025, 3, 3, 8, 0, tzinfo=UTC)
SITES = {
    "cdn-pirate": "http://104.16.132.229/book/",
    "cn-pirate": "http://220.181.38.148/",
    "com-pirate": "http://www.fptrack-pirate-fixture.com/",
}
_pages = count(1)


def answer(name: str, base: str = "http://rdap.test") -> dict:
    return json.loads(sample(name).replace("{rdap}", base))


def lookups(store: Store, services: RdapServices, **overrides: object) -> Lookups:
    """Lookups as ``fptrack sites hosting`` makes them, against the local services (their
    RDAP servers on 127.0.0.2: FPTRACK_OUTBOUND_ALLOW_PRIVATE=true)."""
    given = {"rdap_deadline": 2.0, "outbound_allow_private": True, **overrides}
    settings = Settings(rdap_bootstrap_url=services.bootstrap_url, **given)  # type: ignore[arg-type]
    return Lookups.from_settings(store, settings)


def watched(store: Store, sites: dict[str, str], matches: bool = True) -> None:
    """Watch ``sites``, each with an active match unless not ``matches``."""
    for name, url in sites.items():
        store.sites.save_site(SiteConfig.from_dict({"name": name, "start_urls": [url]}))
        if matches:
            record = {"page_id": next(_pages), "work_id": ObjectId(), "site": name, "url": url}
            store.matches.upsert_match(record)


# the answers read ------------------------------------------------------------------------


def test_an_arin_network_gives_its_owner_and_the_abuse_contact_nested_in_it() -> None:
    found = parse_network(answer("arin_ip_network.json"), "104.16.132.229", "http://x/ip")
    assert found.as_doc() == {
        "address": "104.16.132.229",
        "handle": "NET-104-16-0-0-1",
        "name": "Cloudflare, Inc.",  # the registrant entity, not the network's name
        "cidr": "104.16.0.0/12",
        "country": "",  # ARIN gives none for a network
        "abuse_name": "Abuse",
        "abuse_email": "abuse@cloudflare.com",  # ABUSE2916-ARIN, inside the org's entity
        "source": "http://x/ip",
    }


def test_an_apnic_network_gives_the_irt_nested_in_its_organisation() -> None:
    found = parse_network(answer("apnic_ip_network.json"), "220.181.38.148", "http://x/ip")
    assert (found.name, found.country, found.cidr) == (
        "中国电信 China Telecom",
        "CN",
        "220.181.0.0/16",
    )
    assert (found.abuse_name, found.abuse_email) == ("IRT-CHINANET-CN", "anti-spam@chinatelecom.cn")


def test_a_network_without_abuse_contact_and_without_cidr0_is_read_from_its_range() -> None:
    data = answer("ripe_ip_network_no_abuse.json")
    found = parse_network(data, "185.220.101.7", "http://x/ip")
    assert (found.name, found.abuse_email, found.abuse_name) == ("LEGACY-HOSTING-NET", "", "")
    del data["cidr0_cidrs"]
    assert network_cidr(data) == "185.220.100.0/22"  # from startAddress and endAddress
    data["startAddress"], data["endAddress"] = "10.0.0.0", "10.0.2.255"
    assert network_cidr(data) == "10.0.0.0/23, 10.0.2.0/24"


def test_a_thin_registry_names_the_registrar_and_refers_to_its_server() -> None:
    found = parse_domain(answer("verisign_domain.json"), "http://x/domain")
    assert found.registrar.as_doc() == {
        "name": "NameSilo, LLC",
        "iana_id": "1479",  # publicIds "IANA Registrar ID"
        "abuse_email": "",  # the registry gives the abuse phone only here
        "abuse_phone": "+1.4805240066",  # a tel: URI
        "source": "http://x/domain",
    }
    assert found.related == "http://rdap.test/registrar/domain/FPTRACK-PIRATE-FIXTURE.COM"


def test_the_registrars_answer_gives_its_abuse_contact_and_never_a_redacted_value() -> None:
    data = answer("registrar_domain.json")
    found = parse_domain(data, "http://x/r")
    assert (found.registrar.name, found.registrar.abuse_email) == (
        "NameSilo, LLC",
        "abuse@namesilo.com",
    )
    registrant = data["entities"][0]
    assert jcard(registrant["vcardArray"]) == ("", [], [])  # REDACTED FOR PRIVACY, emptied
    assert "redacted" in data and data["redacted"][0]["method"] == "emptyValue"  # RFC 9537
    assert text("Redacted for Privacy.") == text("Data Protected") == ""
    no_abuse = parse_domain(answer("verisign_domain_no_abuse.json"), "http://x/d")
    assert no_abuse.registrar.known() and not no_abuse.registrar.abuse_email
    assert no_abuse.related == ""


def test_an_error_object_and_a_cut_off_answer_are_one_line_errors() -> None:
    with pytest.raises(RdapError, match=r"^http://x answered Not Found \(errorCode 404\)$"):
        parse_domain(json.loads(sample("error_404.json")), "http://x")
    with pytest.raises(RdapError) as cut:
        load(sample("malformed.json.txt").encode(), "the answer of http://x")
    assert cut.value.detail.startswith("the answer of http://x is not RDAP JSON: Unterminated")
    with pytest.raises(RdapError, match="is not an RDAP ip network"):
        parse_network(answer("verisign_domain.json"), "104.16.0.1", "http://x")


def test_the_bootstrap_takes_the_longest_match_and_https_first() -> None:
    dns = Bootstrap.parse(sample("bootstrap_dns.json").replace("{rdap}", "http://r"), "dns.json")
    assert dns.domain_service("www.pirate.com") == "http://r/verisign/com/v1/"
    assert dns.domain_service("pirate.cn") == ""
    ipv4 = Bootstrap.parse(
        '{"services": [[["104.0.0.0/8"], ["http://a/", "https://a/"]],'
        ' [["104.16.0.0/12"], ["https://b"]]]}',
        "ipv4.json",
    )
    from ipaddress import ip_address

    assert ipv4.address_service(ip_address("104.16.1.1")) == "https://b/"
    assert ipv4.address_service(ip_address("104.200.1.1")) == "https://a/"
    assert ipv4.address_service(ip_address("8.8.8.8")) == ""
    with pytest.raises(RdapError, match="has no list of services"):
        Bootstrap.parse("{}", "ipv6.json")


# whole lookups ---------------------------------------------------------------------------


def test_a_sites_lookup_costs_its_own_requests_the_bootstrap_kept_a_week(store: Store) -> None:
    with RdapServices() as services:
        watched(store, SITES)
        first = look_up_sites(store, lookups(store, services), due_sites(store, AT, 100), AT)
        cost = {d.site: (d.requests, d.bootstrap_requests) for d in first}
        # an address: its network; a .com name: the registry, then the registrar it names;
        # the cold run fetches ipv4.json for the first address, dns.json for the first name
        assert cost == {"cdn-pirate": (1, 1), "cn-pirate": (1, 0), "com-pirate": (2, 1)}
        assert services.requests("bootstrap") == ["/rdap/ipv4.json", "/rdap/dns.json"]
        assert services.requests("rdap") == [
            "/arin/registry/ip/104.16.132.229",
            "/apnic/ip/220.181.38.148",
            "/verisign/com/v1/domain/fptrack-pirate-fixture.com",
            "/registrar/domain/FPTRACK-PIRATE-FIXTURE.COM",
        ]
        com = store.takedowns.hosting("com-pirate")
        assert com["domain"] == "fptrack-pirate-fixture.com"
        assert com["registrar"] == {
            "name": "NameSilo, LLC",
            "iana_id": "1479",
            "abuse_email": "abuse@namesilo.com",  # from the registrar's own server
            "abuse_phone": "+1.4805240066",
            "source": f"{services.base}/registrar/domain/FPTRACK-PIRATE-FIXTURE.COM",
        }
        cdn = store.takedowns.hosting("cdn-pirate")
        assert cdn["addresses"] == ["104.16.132.229"] and cdn["errors"] == []
        assert cdn["networks"][0]["abuse_email"] == "abuse@cloudflare.com"
        assert store.takedowns.contact("cn-pirate")["provider"] == "中国电信 China Telecom"

        # a new run within the week: the bootstrap kept in the store, not fetched again
        later = AT + timedelta(days=6)
        again = look_up_sites(store, lookups(store, services), SITES, later)
        assert [d.bootstrap_requests for d in again] == [0, 0, 0]
        assert [d.requests for d in again] == [1, 1, 2]
        assert len(services.requests("bootstrap")) == 2
        # nothing due until a week after; then the bootstrap is fetched again, once a file
        assert due_sites(store, later + timedelta(days=6), 100) == {}
        week = later + timedelta(days=8)
        assert list(due_sites(store, week, 100)) == list(SITES)
        look_up_sites(store, lookups(store, services), due_sites(store, week, 100), week)
        assert len(services.requests("bootstrap")) == 4


def test_only_sites_with_matches_are_due_the_never_looked_up_first(store: Store) -> None:
    watched(store, {"quiet": "http://104.16.0.9/"}, matches=False)
    watched(store, SITES)
    store.takedowns.set_hosting("cn-pirate", {"looked_up_at": AT - timedelta(days=9)})
    store.takedowns.set_hosting("cdn-pirate", {"looked_up_at": AT - timedelta(days=1)})
    assert list(due_sites(store, AT, 100)) == ["com-pirate", "cn-pirate"]
    assert list(due_sites(store, AT, 1)) == ["com-pirate"]


def test_each_failure_is_one_line_and_the_lookup_bounded(store: Store) -> None:
    sites = {
        "gone": "http://gone-pirate-fixture.org/",
        "busy": "http://busy-pirate-fixture.org/",
        "garbled": "http://garbled-pirate-fixture.org/",
        "slow": "http://slow-pirate-fixture.org/",
        "cn-tld": "http://pirate-fixture.cn/",
        "no-abuse": "http://185.220.101.7/",
        "no-abuse-registrar": "http://fptrack-noabuse-fixture.com/",
        "rate-limited-ip": "http://45.0.0.1/",
        "loopback": "http://127.0.0.2:8080/",
        "private": "http://10.20.30.40/",
    }
    with RdapServices() as services:
        started = time.monotonic()
        done = look_up_sites(store, lookups(store, services, rdap_deadline=1.0), sites, AT)
        took = time.monotonic() - started
    errors = {d.site: [e for e in d.hosting["errors"] if not e.startswith("addresses of")]
              for d in done}  # fmt: skip
    at = f"{services.base}/broken/domain/"
    too_many = "rate-limited (429 Too Many Requests)"
    assert errors == {
        "gone": [f"domain gone-pirate-fixture.org: not found (404) at {at}gone-pirate-fixture.org"],
        "busy": [f"domain busy-pirate-fixture.org: {too_many} at {at}busy-pirate-fixture.org"],
        "garbled": [
            f"domain garbled-pirate-fixture.org: the answer of {at}garbled-pirate-fixture.org is"
            " not RDAP JSON: Unterminated string starting at: line 1 column 154 (char 153)"
        ],
        "slow": [
            f"domain slow-pirate-fixture.org: timed out after 1 s ({at}slow-pirate-fixture.org)"
        ],
        "cn-tld": ["domain pirate-fixture.cn: no RDAP service in the bootstrap for .cn"],
        "no-abuse": [
            "ip rdap 185.220.101.7: 185.220.100.0 - 185.220.103.255 names no abuse contact"
        ],
        "no-abuse-registrar": [
            "domain fptrack-noabuse-fixture.com: the registrar names no abuse email"
        ],
        "rate-limited-ip": [
            f"ip rdap 45.0.0.1: {too_many} at {services.base}/broken/ip/45.0.0.1"
        ],
        "loopback": ["ip rdap 127.0.0.2: a loopback address (this machine), not looked up"],
        "private": ["ip rdap 10.20.30.40: a private address, not looked up"],
    }  # fmt: skip
    for d in done:
        assert all("\n" not in e and len(e) < 400 for e in d.hosting["errors"]), d.hosting
    assert took < 10  # the hanging server cost its deadline, 1 s, not more
    assert store.takedowns.hosting("loopback")["addresses"] == ["127.0.0.2"]  # kept, not asked
    assert [d.site for d in done if d.failed] == [  # on internal addresses: nothing to find
        "gone", "busy", "garbled", "slow", "cn-tld", "rate-limited-ip"
    ]  # fmt: skip


def test_rdap_servers_on_internal_addresses_need_the_setting(store: Store) -> None:
    """The bootstrap's host is the operator's (reached on 127.0.0.1); the servers its files
    name are not: on 127.0.0.2 they are refused without FPTRACK_OUTBOUND_ALLOW_PRIVATE."""
    with RdapServices() as services:
        refused = lookups(store, services, outbound_allow_private=False)
        done = refused.look_up("cdn-pirate", SITES["cdn-pirate"], AT)
    assert services.requests("rdap") == [] and services.requests("bootstrap") == ["/rdap/ipv4.json"]
    [error] = done.hosting["errors"]
    assert error.startswith("ip rdap 104.16.132.229: 127.0.0.2 is a private, loopback or reserved")


def test_a_sites_requests_are_bounded(store: Store) -> None:
    with RdapServices() as services:
        done = lookups(store, services, rdap_max_requests=1).look_up(
            "com-pirate", SITES["com-pirate"], AT
        )
    assert done.requests == 1 and services.requests("rdap") == [
        "/verisign/com/v1/domain/fptrack-pirate-fixture.com"
    ]
    assert done.hosting["registrar"]["name"] == "NameSilo, LLC"  # the registry's answer
    assert done.hosting["errors"][-2:] == [
        "registrar rdap fptrack-pirate-fixture.com: not asked: the site's 1 RDAP requests are "
        "spent (FPTRACK_RDAP_MAX_REQUESTS)",
        "domain fptrack-pirate-fixture.com: the registrar names no abuse email",
    ]


def test_a_failed_refresh_keeps_the_contacts_and_an_edited_provider_stays(store: Store) -> None:
    watched(store, SITES)
    store.takedowns.set_contact("cdn-pirate", provider="CDN we know", provider_from="edited")
    with RdapServices() as services:
        good = lookups(store, services)
        look_up_sites(store, good, SITES, AT)
    assert store.takedowns.contact("cdn-pirate")["provider"] == "CDN we know"  # edited: kept
    assert store.takedowns.contact("cn-pirate")["provider"] == "中国电信 China Telecom"
    before = {name: store.takedowns.hosting(name) for name in SITES}

    # the services are gone: every RDAP request is refused (the bootstrap kept in the store)
    later = AT + timedelta(days=8)
    done = look_up_sites(store, lookups(store, services), SITES, later)
    assert all(d.failed for d in done)
    for name in SITES:
        kept = store.takedowns.hosting(name)
        assert kept["networks"] == before[name]["networks"]
        assert kept["registrar"] == before[name]["registrar"]
        assert kept["looked_up_at"] == AT and kept["attempted_at"] == later
        assert kept["errors"] and all("Connection refused" in e or "resolve" in e
                                      for e in kept["errors"]), kept["errors"]  # fmt: skip
    assert store.takedowns.hosting("cdn-pirate")["networks"][0]["abuse_email"] == (
        "abuse@cloudflare.com"
    )


def test_a_part_that_failed_alone_keeps_its_earlier_values() -> None:
    network = {"address": "104.16.0.1", "name": "Cloudflare, Inc.", "abuse_email": "a@b"}
    registrar = {"name": "NameSilo, LLC", "abuse_email": "abuse@namesilo.com"}
    old = {"looked_up_at": AT, "networks": [network], "registrar": registrar, "domain": "x.com"}
    new = {
        "looked_up_at": AT + timedelta(days=7),
        "attempted_at": AT + timedelta(days=7),
        "addresses": ["104.16.0.1"],
        "networks": [],
        "domain": "x.com",
        "registrar": {"name": "Other Registrar", "abuse_email": "abuse@other.example"},
        "errors": ["ip rdap 104.16.0.1: timed out after 10 s (http://r/ip/104.16.0.1)"],
    }
    kept = merged(old, new)
    assert kept["networks"] == [network] and kept["registrar"] == new["registrar"]
    assert kept["looked_up_at"] == new["looked_up_at"] and kept["errors"] == new["errors"]
    assert merged(None, new) is new
    assert hosting.found_anything(kept) and not hosting.found_anything({"networks": []})

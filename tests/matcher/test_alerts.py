"""Alerts of new matches, end to end without a broker: pages matched by the real engine on
the test servers, rules in MongoDB, webhooks POSTed to a real HTTP receiver on 127.0.0.1
that checks the signature, email sent to a real SMTP server (aiosmtpd)."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from matcher.alerts import notify
from matcher.alerts.channels import CHANNELS, Channel
from matcher.alerts.rules import AlertRule, AlertRuleError
from matcher.errors import SettingsError
from matcher.matching.engine import Engine
from matcher.settings import Settings
from matcher.store.alerts import AlertStore
from matcher.worker import alert_delivery as alerts
from tests.matcher.conftest import crawl, page_of, sample
from tests.servers.alerts import closed_port_url, smtp_server, text_of, webhook_receiver

SECRET = "a-shared-secret"


@pytest.fixture
def store(engine: Engine) -> AlertStore:
    return AlertStore(engine.store)


@pytest.fixture
def settings(engine: Engine) -> Settings:
    """Fast retries; the receivers are on 127.0.0.1, so with the opt-in for internal ones."""
    return replace(
        engine.settings, alert_backoff=0.05, alert_backoff_max=0.4, alert_timeout=5.0,
        alert_allow_private=True,
    )  # fmt: skip


@pytest.fixture
def lighthouse(engine: Engine) -> str:
    return engine.add_work(sample("lighthouse.txt"), title="lighthouse", source="lighthouse.txt")


@pytest.fixture
def river(engine: Engine) -> str:
    return engine.add_work(sample("river-town.txt"), title="river town", source="river-town.txt")


def hook(store: AlertStore, url: str, **fields) -> AlertRule:
    data = {"name": fields.pop("name", "hook"), "url": url, "secret": SECRET, **fields}
    return store.save_rule(AlertRule.from_dict(data))


def settle(store: AlertStore, settings: Settings, rounds: int = 50) -> list[dict]:
    """Run the delivery as beat and the task's own retries would, until nothing waits."""
    results = []
    for _ in range(rounds):
        results.append(alerts.deliver_due(store, settings))
        if results[-1]["next_due"] is None:
            return results
        time.sleep(results[-1]["next_due"] + 0.01)
    raise AssertionError(f"alerts still waiting after {rounds} rounds: {results[-1]}")


def test_a_new_match_is_posted_once_signed_and_never_again(engine, store, settings, lighthouse):
    with webhook_receiver(SECRET) as receiver:
        rule = hook(store, receiver.url)
        [match] = crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
        assert match["alert"] == "pending"  # written with the match itself
        settle(store, settings)
        [got] = receiver.requests
        assert got.signed
        assert got.headers["X-Fptrack-Delivery"] == got.data["delivery"]
        assert got.data["mode"] == "immediate" and got.data["rule"]["id"] == rule.id
        [sent] = got.data["matches"]
        assert sent["id"] == str(match["_id"]) and sent["work_id"] == lighthouse
        assert (sent["url"], sent["site"], sent["work_title"]) == (
            "http://pirate.test/1",
            "pirate",
            "lighthouse",
        )
        assert 0 < sent["score"] <= 1 and sent["admin_url"] == ""
        # the same page crawled again, changed, and the work matched again: nothing new
        crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")) + "\n再访")
        engine.process_stored_page(str(match["page_id"]))
        engine.match_work_against_pages(lighthouse)
        settle(store, settings)
        assert len(receiver.requests) == 1
        [log] = store.recent_log()
        assert (log["ok"], log["status"], log["attempt"]) == (True, 204, 1)


class Pager(Channel):
    """A channel the house does not have: a pager reached by a number (in ``url``)."""

    name = "pager"

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, list[dict]]] = []

    def fields(self, data: dict) -> dict:
        number = str(data.get("url", ""))
        if not number.isdigit():
            raise AlertRuleError(f"a pager rule needs a number, got {number!r}")
        return {"url": number}

    def target(self, rule) -> str:
        return f"pager {rule.url}"

    def send(self, rule, delivery, mode, matches, settings, clock=time.time) -> notify.Outcome:
        self.sent.append((rule.url, mode, matches))
        return notify.Outcome(True, None)


def test_a_new_channel_is_one_class(engine, store, settings, lighthouse, monkeypatch):
    """Registered in CHANNELS, a channel's class alone validates, names and sends a rule's
    messages: the rules, the delivery and its log take it from there."""
    pager = Pager()
    monkeypatch.setitem(CHANNELS, "pager", pager)
    with pytest.raises(AlertRuleError, match="needs a number"):
        AlertRule.from_dict({"name": "night", "channel": "pager", "url": "x"})
    rule = store.save_rule(AlertRule.from_dict({"name": "night", "channel": "pager", "url": "7"}))
    assert store.rule(rule.id).describe() == "every match, immediate, pager pager 7"
    [match] = crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
    settle(store, settings)
    [(number, mode, [sent])] = pager.sent
    assert (number, mode, sent["id"], sent["work_id"]) == (
        "7",
        "immediate",
        str(match["_id"]),
        lighthouse,
    )
    [log] = store.recent_log()
    assert (log["channel"], log["target"], log["ok"]) == ("pager", "pager 7", True)


def test_a_tampered_body_fails_the_receivers_check(engine, store, settings, lighthouse):
    with webhook_receiver("another secret") as receiver:
        hook(store, receiver.url)
        crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
        settle(store, settings)
        [got] = receiver.requests
        assert not got.signed  # signed with the rule's secret, not the receiver's


def test_failures_are_retried_with_backoff_and_logged(engine, store, settings, lighthouse):
    with webhook_receiver(SECRET, fail_first=2) as receiver:
        hook(store, receiver.url, name="flaky")
        crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
        results = settle(store, settings)
        assert len(receiver.requests) == 3 and len(receiver.delivered()) == 1
        assert len({r.headers["X-Fptrack-Delivery"] for r in receiver.requests}) == 1
        assert [r["retry"] for r in results if r["retry"]] == [1, 1]
    log = sorted(store.recent_log(), key=lambda e: e["attempt"])
    assert [(e["attempt"], e["ok"], e["status"]) for e in log] == [
        (1, False, 500),
        (2, False, 500),
        (3, True, 204),
    ]
    assert "HTTP 500" in log[0]["error"] and log[0]["rule"] == "flaky"
    [entry] = store.entries()
    assert (entry["state"], entry["attempts"]) == ("delivered", 3)


def test_a_receiver_that_is_down_exhausts_the_attempts(engine, store, settings, lighthouse):
    settings = replace(settings, alert_max_attempts=3)
    hook(store, closed_port_url())
    crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
    results = settle(store, settings)
    assert sum(r["failed"] for r in results) == 1
    log = store.recent_log()
    assert sorted(e["attempt"] for e in log) == [1, 2, 3]
    assert all(not e["ok"] and "refused" in e["error"].lower() for e in log)
    [entry] = store.entries()
    assert entry["state"] == "failed" and "after 3 attempt(s)" in entry["last_error"]


def test_rules_fire_only_for_their_scope(engine, store, settings, lighthouse, river):
    with webhook_receiver(SECRET) as receiver:
        url = receiver.url
        hook(store, url + "?r=pirate", name="site pirate", scope="site", target="pirate")
        hook(store, url + "?r=other", name="site other", scope="site", target="other")
        hook(store, url + "?r=light", name="lighthouse", scope="work", target=lighthouse)
        hook(store, url + "?r=river", name="river", scope="work", target=river)
        crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
        crawl(engine, "http://other.test/9", page_of(sample("river-town.txt")), site="other")
        settle(store, settings)
        by_rule: dict[str, list[tuple[str, str]]] = {}
        for got in receiver.requests:
            for m in got.data["matches"]:
                by_rule.setdefault(got.data["rule"]["name"], []).append((m["site"], m["work_id"]))
    assert by_rule == {
        "site pirate": [("pirate", lighthouse)],
        "site other": [("other", river)],
        "lighthouse": [("pirate", lighthouse)],
        "river": [("other", river)],
    }


def test_daily_rules_wait_for_the_digest(engine, store, settings, lighthouse, river):
    with webhook_receiver(SECRET) as now_hook, webhook_receiver(SECRET) as daily_hook:
        hook(store, now_hook.url, name="now")
        hook(store, daily_hook.url, name="daily", mode="daily")
        crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
        crawl(engine, "http://pirate.test/2", page_of(sample("river-town.txt")))
        settle(store, settings)
        assert len(now_hook.requests) == 2 and daily_hook.requests == []
        result = alerts.send_digests(store, settings)
        assert result["digests"] == 1 and result["delivered"] == 1
        [digest] = daily_hook.requests
        assert digest.signed and digest.data["mode"] == "digest"
        assert {m["work_id"] for m in digest.data["matches"]} == {lighthouse, river}
        assert alerts.send_digests(store, settings)["digests"] == 0  # nothing new queued
        assert len(daily_hook.requests) == 1 and len(now_hook.requests) == 2


def test_a_long_day_is_cut_into_several_digests(engine, store, settings, lighthouse, river):
    with webhook_receiver(SECRET) as receiver:
        rule = hook(store, receiver.url, mode="daily")
        crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
        crawl(engine, "http://pirate.test/2", page_of(sample("river-town.txt")))
        alerts.take_new_matches(store)
        assert store.make_digest(rule, limit=1) is not None
        assert alerts.send_digests(store, settings)["digests"] == 1  # the other one
        assert sorted(len(r.data["matches"]) for r in receiver.requests) == [1, 1]


def test_a_digest_interrupted_between_its_writes_is_made_again_once(engine, store, lighthouse):
    rule = hook(store, closed_port_url(), mode="daily")
    crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
    alerts.take_new_matches(store)
    first = store.make_digest(rule)
    # as if the process died after the digest was written, before its entries were marked
    engine.store.db.alert_outbox.update_many({"state": "digested"}, {"$set": {"state": "queued"}})
    assert store.make_digest(rule) == first
    assert store.make_digest(rule) is None
    digests = [e for e in store.entries() if e["mode"] == "digest"]
    assert len(digests) == 1 and len(digests[0]["match_ids"]) == 1


def test_taking_new_matches_twice_queues_one_message(engine, store, lighthouse):
    hook(store, closed_port_url())
    crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
    # the taker died before clearing the match's mark: the next one takes it again
    assert store.take_new_matches() == 1
    engine.store.db.matches.update_many({}, {"$set": {"alert": "pending"}})
    assert store.take_new_matches() == 1
    assert store.take_new_matches() == 0
    assert len(store.entries()) == 1


def test_a_sender_that_died_mid_attempt_is_replaced_when_its_lease_ends(engine, store, settings):
    engine.add_work(sample("lighthouse.txt"), title="lighthouse")
    with webhook_receiver(SECRET) as receiver:
        hook(store, receiver.url)
        crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
        alerts.take_new_matches(store)
        assert store.claim(lease=0.2) is not None  # and then nothing: its sender died
        assert alerts.deliver_due(store, settings)["delivered"] == 0  # still leased
        time.sleep(0.3)
        assert alerts.deliver_due(store, settings)["delivered"] == 1
        assert len(receiver.requests) == 1


def test_matches_of_authorised_sites_raise_no_alert(engine, store, settings, lighthouse):
    with webhook_receiver(SECRET) as receiver:
        hook(store, receiver.url)
        queued_page = crawl(engine, "http://partner.test/1", page_of(sample("lighthouse.txt")))
        page_id = str(queued_page[0]["page_id"])
        engine.store.matches.delete_all()
        engine.process_stored_page(page_id, authorised_sites={"pirate"})
        [match] = engine.store.matches.matches_for("page_id", page_id)
        assert match["status"] == "authorised" and "alert" not in match
        settle(store, settings)
        assert receiver.requests == []


def test_removed_and_disabled_rules_send_nothing(engine, store, settings, lighthouse):
    with webhook_receiver(SECRET) as receiver:
        gone = hook(store, receiver.url, name="gone")
        off = hook(store, receiver.url, name="off")
        crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
        alerts.take_new_matches(store)
        store.remove_rule(gone.id)
        store.set_enabled(off.id, False)
        settle(store, settings)
        assert receiver.requests == []
    assert sorted(e["state"] for e in store.entries()) == ["dropped", "dropped"]


def test_email_alerts_reach_a_real_smtp_server(engine, store, settings):
    title = '<b onmouseover="x">灯塔</b>'
    work = engine.add_work(sample("lighthouse.txt"), title=title)
    with smtp_server() as (url, received):
        settings = replace(
            settings, smtp_url=url, smtp_from="fptrack@example.com", admin_url="https://fp.test/"
        )
        emails = "a@example.com, b@example.com"
        store.save_rule(AlertRule.from_dict({"name": "team", "channel": "email", "emails": emails}))
        [match] = crawl(engine, "http://pirate.test/<1>", page_of(sample("lighthouse.txt")))
        settle(store, settings)
        [(recipients, message)] = received
    assert recipients == ["a@example.com", "b@example.com"]
    assert message["From"] == "fptrack@example.com" and "1 new match" in message["Subject"]
    plain, html = text_of(message, "plain"), text_of(message, "html")
    assert "http://pirate.test/<1>" in plain and title in plain
    assert f"https://fp.test/matches/{match['_id']}" in plain
    assert "&lt;b onmouseover=&quot;x&quot;&gt;" in html and "<b " not in html
    assert "http://pirate.test/&lt;1&gt;" in html
    assert work == str(match["work_id"])


def test_a_daily_email_digest_groups_matches_by_work(engine, store, settings, lighthouse, river):
    with smtp_server() as (url, received):
        settings = replace(settings, smtp_url=url, smtp_from="fptrack@example.com")
        rule = {"name": "digest", "channel": "email", "emails": ["a@example.com"], "mode": "daily"}
        store.save_rule(AlertRule.from_dict(rule))
        crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
        crawl(engine, "http://pirate.test/2", page_of(sample("river-town.txt")))
        settle(store, settings)
        assert received == []
        alerts.send_digests(store, settings)
        [(_, message)] = received
    plain = text_of(message, "plain")
    assert "2 new matches" in message["Subject"]
    assert "lighthouse on pirate: 1" in plain and "river town on pirate: 1" in plain


def test_email_without_smtp_fails_at_once_and_says_why(engine, store, settings, lighthouse):
    store.save_rule(AlertRule.from_dict({"name": "m", "channel": "email", "emails": "a@x.org"}))
    crawl(engine, "http://pirate.test/1", page_of(sample("lighthouse.txt")))
    settle(store, settings)
    [log] = store.recent_log()
    assert not log["ok"] and "FPTRACK_SMTP_URL" in log["error"]
    assert store.entries()[0]["state"] == "failed"


def test_send_test_reaches_the_receiver(store, settings):
    with webhook_receiver(SECRET) as receiver:
        rule = hook(store, receiver.url)
        assert alerts.send_test(store, settings, rule).ok
        [got] = receiver.requests
    assert got.signed and got.data["mode"] == "test"
    assert store.recent_log()[0]["mode"] == "test"


@pytest.mark.parametrize(
    "data",
    [
        {"name": "x", "url": "ftp://example.com/hook"},
        {"name": "x", "url": "javascript:alert(1)"},
        {"name": "x", "url": "http:///nohost"},
        {"name": "x", "url": {"$ne": ""}},
        {"name": "", "url": "http://example.com/"},
        {"name": "x", "url": "http://example.com/", "scope": "work", "target": "nope"},
        {"name": "x", "url": "http://example.com/", "scope": "site", "target": "a b"},
        {"name": "x", "url": "http://example.com/", "mode": "weekly"},
        {"name": "x", "channel": "email", "emails": "not-an-address"},
        {"name": "x", "channel": "email", "emails": ""},
        {"name": "x", "channel": "sms"},
    ],
)
def test_bad_rules_are_refused(data: dict) -> None:
    with pytest.raises(AlertRuleError):
        AlertRule.from_dict(data)


def test_a_webhook_rule_gets_a_secret_of_its_own() -> None:
    one = AlertRule.from_dict({"name": "a", "url": "https://example.com/h"})
    two = AlertRule.from_dict({"name": "a", "url": "https://example.com/h"})
    assert len(one.secret) == 64 and one.secret != two.secret


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"smtp_url": "http://mail"}, "FPTRACK_SMTP_URL"),
        ({"smtp_url": "smtp://mail:99999", "smtp_from": "a@b.c"}, "port"),
        ({"smtp_url": "smtp://mail"}, "FPTRACK_SMTP_FROM"),
        ({"digest_at": "25:00"}, "digest_at"),
        ({"alert_backoff": 0.0}, "alert_backoff"),
        ({"admin_url": "fp.example"}, "admin_url"),
    ],
)
def test_bad_alert_settings_are_refused(fields: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings(**fields)

"""``GET /metrics`` (:mod:`admin.web.metrics`, :mod:`admin.metrics`): figures computed from
the store and Redis of the test servers, read back with Prometheus' own parser; who may
read it; and the Grafana dashboard shipped in ``deploy/`` asking only for what it exposes."""

from __future__ import annotations

import json
import re
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import redis
import yaml
from flask import Flask
from prometheus_client.parser import text_string_to_metric_families
from pymongo.database import Database

from admin.context import Context
from admin.services.accounts import User, Users
from admin.services.api_tokens import ApiTokens
from admin.services.dispatch import InlineDispatch
from admin.web.app import create_app
from matcher.index.integrity import Integrity
from matcher.index.redis_clients import COMMAND, SERVICE, Patience
from matcher.keys import TAG_GROUPS
from matcher.matching.engine import Engine
from matcher.settings import Settings
from matcher.sites.site_config import SiteConfig
from matcher.store import now
from matcher.worker.kept_failures import KeptFailures
from tests.servers.raw_servers import hanging_up_redis
from tests.support.web import PASSWORDS, login, sample_text, seed_match

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "fptrack-dashboard.json"
OUTSIDE = {"REMOTE_ADDR": "198.51.100.7"}
"""A client address in no allow-list."""


def make_app(
    redis_client: redis.Redis, mongo_db: Database, patience: Patience = COMMAND, **settings: Any
) -> Flask:
    """The admin app on the test servers (broker and frontiers on the session's Redis);
    ``patience``: its context's (``SERVICE``: the served admin's)."""
    ctx_settings = Settings.from_env(
        redis_prefix="fptrack-test-metrics", mongo_db=mongo_db.name, **settings
    )
    engine = Engine.open(ctx_settings, mongo_client=mongo_db.client, redis_client=redis_client)
    ctx = Context(settings=ctx_settings, engine=engine, patience=patience)
    users = Users(engine.store)
    for name, (role, password) in PASSWORDS.items():
        users.create(name, password, role)
    dispatch = InlineDispatch(ctx, threading.RLock(), {})
    return create_app(ctx, dispatch=dispatch, secret_key="test-secret", schedules=False)


def scrape(app: Flask, token: str | None = None, environ: dict | None = None) -> dict:
    """``/metrics`` parsed: ``{(sample name, sorted labels): value}``."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = app.test_client().get("/metrics", headers=headers, environ_base=environ or OUTSIDE)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "text/plain"
    found = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for s in family.samples:
            found[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return found


def token_of(app: Flask, username: str) -> str:
    ctx = app.extensions["fptrack"].ctx
    role = PASSWORDS[username][0]
    return ApiTokens(ctx.engine.store).create(User(username, role), "prometheus", role).secret


def seed(ctx: Context, broker: redis.Redis) -> None:
    """Two sites, three pages, two matches (one confirmed), a failed and a finished crawl
    run, a failure record, two queued tasks, a crawl frontier, a lost index tag group."""
    store, engine = ctx.store, ctx.engine
    for name in ("pirate", "other"):
        store.sites.save_site(SiteConfig(name=name, start_urls=(f"http://{name}.example/",)))
    match, _ = seed_match(ctx, "http://pirate.example/1", site="pirate")
    text = sample_text()
    assert engine.process_page(
        "http://pirate.example/2", "转载\n" + text[len(text) // 3 :], site="pirate", title="二"
    )
    assert not engine.process_page(
        "http://other.example/1", "今天天气很好，我们去公园散步吧。" * 20, site="other", title="x"
    )
    assert store.matches.set_status(str(match["_id"]), "confirmed", by="rita")

    started = now() - timedelta(hours=1)
    store.crawls.record_crawl_process(
        "run-pirate", "pirate", "a1b2c3d4", run_started_at=started, outcome="failed",
        error="boom", finished_at=now(), stats={"fptrack/pages": 2},
    )  # fmt: skip
    store.crawls.record_crawl_process(
        "run-other", "other", "e5f6a7b8", run_started_at=started, outcome="finished",
        ended_run=True, finished_at=now(), stats={"fptrack/pages": 1},
    )  # fmt: skip
    store.failure_log.record_failure("fptrack.process_page", "0" * 24, "UnusableText: no text", 0)

    ctx.app.send_task("fptrack.index_work", args=["0" * 24])
    ctx.app.send_task("fptrack.crawl_site", args=["pirate"])
    frontier = redis.Redis.from_url(ctx.settings.redis_url)
    frontier.sadd(engine.keys.crawl_frontiers, "pirate")
    frontier.zadd(engine.keys.crawl("pirate").queue, {b"r1": 0, b"r2": 0, b"r3": 1})

    engine.redis.delete(engine.keys.marker(7))
    Integrity(engine).ready()  # rebuilds group 7, recording the heal
    engine.redis.delete(engine.keys.marker(5))
    # what the workers count (tests/e2e/test_worker.py): three retries and a failure
    engine.redis.hincrby(engine.keys.task_events, "retry|fptrack.process_page", 3)
    engine.redis.hincrby(engine.keys.task_events, "failure|fptrack.process_page", 1)
    # a failure record MongoDB could not take, waiting in Redis (matcher/worker/kept_failures.py)
    kept = KeptFailures(engine.redis, engine.keys.kept_failures)
    kept.keep("fptrack.index_work", "1" * 24, "StoreFailing: disk full", 8, now())


def test_metrics_count_what_was_seeded(
    redis_client: redis.Redis, mongo_db: Database, broker: redis.Redis
) -> None:
    app = make_app(redis_client, mongo_db)
    seed(app.extensions["fptrack"].ctx, broker)
    m = scrape(app, token_of(app, "victor"))

    def value(name: str, **labels: str) -> float:
        return m[(name, tuple(sorted(labels.items())))]

    assert value("fptrack_works") == 1
    assert value("fptrack_pages_stored", site="pirate") == 2
    assert value("fptrack_pages_stored", site="other") == 1
    assert value("fptrack_matches", site="pirate", status="new") == 1
    assert value("fptrack_matches", site="pirate", status="confirmed") == 1
    assert value("fptrack_matches", site="pirate", status="false_positive") == 0
    assert value("fptrack_matches_infringing", site="pirate") == 2
    assert value("fptrack_matches_created_total", site="pirate") == 2
    assert value("fptrack_matches_created_total", site="other") == 0
    assert value("fptrack_pages_pending") == 0
    # The runs' pages are counted from the store: the site's pages seen since each started.
    assert value("fptrack_crawl_pages_total", site="pirate") == 2
    assert value("fptrack_crawl_pages_total", site="other") == 1
    assert value("fptrack_crawl_runs", site="pirate", outcome="failed") == 1
    assert value("fptrack_crawl_runs", site="other", outcome="finished") == 1
    assert value("fptrack_crawl_last_outcome", site="pirate", outcome="failed") == 1
    assert value("fptrack_crawl_last_start_timestamp_seconds", site="pirate") > 0
    assert value("fptrack_task_failures", task="fptrack.process_page") == 1
    assert value("fptrack_task_retries_total", task="fptrack.process_page") == 3
    assert value("fptrack_task_failed_total", task="fptrack.process_page") == 1
    assert value("fptrack_task_failures_waiting") == 1
    assert value("fptrack_queue_messages", queue="fptrack") == 1
    assert value("fptrack_queue_messages", queue="fptrack.crawl") == 1
    assert value("fptrack_queue_unacked") == 0
    assert value("fptrack_crawl_frontier_requests", site="pirate") == 3
    assert value("fptrack_index_group_present", group="5") == 0
    assert value("fptrack_index_group_present", group="7") == 1
    assert sum(value("fptrack_index_group_present", group=str(g)) for g in range(TAG_GROUPS)) == 31
    assert value("fptrack_index_groups_lost") == 1
    assert value("fptrack_index_last_heal_timestamp_seconds") > 0
    assert value("fptrack_index_rematch_pending") == 1
    assert value("fptrack_index_rebuilding") == 0
    assert value("fptrack_alert_outbox", state="pending") == 0
    for source in ("mongodb", "index_redis", "redis", "broker"):
        assert value("fptrack_metrics_source_up", source=source) == 1
    assert value("fptrack_store_internal_errors") == 0


def test_metrics_are_cached_then_computed_again(
    redis_client: redis.Redis, mongo_db: Database, broker: redis.Redis
) -> None:
    app = make_app(redis_client, mongo_db, metrics_cache_seconds=3600.0)
    token = token_of(app, "victor")
    works = ("fptrack_works", ())
    assert scrape(app, token)[works] == 0
    app.extensions["fptrack"].ctx.engine.add_work(sample_text(), title="茶史", source="t.txt")
    assert scrape(app, token)[works] == 0  # within FPTRACK_METRICS_CACHE_SECONDS
    app.extensions["fptrack"].metrics.cache_seconds = 0
    assert scrape(app, token)[works] == 1


def test_a_source_down_is_reported_not_fatal(redis_client: redis.Redis, mongo_db: Database) -> None:
    """The served admin (its clients ride out restarts) asks for metrics with clients that
    give up at once: a Redis down does not hold the scrape past Prometheus' timeout."""
    with hanging_up_redis() as (dead, connections):
        app = make_app(redis_client, mongo_db, SERVICE, broker_url=dead, index_redis_url=dead)
        token = token_of(app, "victor")
        m = scrape(app, token)
    # Two sources, each given up after COMMAND's one retry, of the command and of redis-py's
    # health check before it (SERVICE's 12 retries each would take about 20 s).
    assert 2 <= len(connections) <= 2 * (COMMAND.retries + 1) ** 2
    up = {labels[0][1]: v for (name, labels), v in m.items() if name.endswith("source_up")}
    assert up == {"mongodb": 1, "redis": 1, "index_redis": 0, "broker": 0}
    assert not any(name == "fptrack_queue_messages" for name, _ in m)
    assert m[("fptrack_works", ())] == 0


def test_the_served_admin_reads_the_indexes_with_its_own_client(
    redis_client: redis.Redis, mongo_db: Database, broker: redis.Redis
) -> None:
    app = make_app(redis_client, mongo_db, SERVICE)
    seed(app.extensions["fptrack"].ctx, broker)
    m = scrape(app, token_of(app, "victor"))
    assert m[("fptrack_index_groups_lost", ())] == 1
    assert m[("fptrack_task_retries_total", (("task", "fptrack.process_page"),))] == 3


def test_metrics_need_a_viewer_token_by_default(
    redis_client: redis.Redis, mongo_db: Database
) -> None:
    app = make_app(redis_client, mongo_db)
    client = app.test_client()
    loopback = {"REMOTE_ADDR": "127.0.0.1"}  # the TLS proxy's address: not trusted by default
    refused = client.get("/metrics", environ_base=loopback)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")
    assert "fptrack_" not in refused.get_data(as_text=True)
    bad = client.get("/metrics", headers={"Authorization": "Bearer fpt_" + "x" * 43})
    assert bad.status_code == 401
    session = app.test_client()
    assert login(session, "alice").status_code == 302
    assert session.get("/metrics", environ_base=loopback).status_code == 401  # no cookie login
    for user in ("victor", "rita", "alice"):
        assert ("fptrack_works", ()) in scrape(app, token_of(app, user), loopback)


def test_allowed_addresses_need_no_token(redis_client: redis.Redis, mongo_db: Database) -> None:
    app = make_app(redis_client, mongo_db, metrics_allow="203.0.113.0/24, ::1")
    assert ("fptrack_works", ()) in scrape(app, environ={"REMOTE_ADDR": "203.0.113.9"})
    assert ("fptrack_works", ()) in scrape(app, environ={"REMOTE_ADDR": "::1"})
    client = app.test_client()
    assert client.get("/metrics", environ_base=OUTSIDE).status_code == 401
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "127.0.0.1"}).status_code == 401


def test_grafana_dashboard_asks_only_for_exposed_metrics(
    redis_client: redis.Redis, mongo_db: Database, broker: redis.Redis
) -> None:
    app = make_app(redis_client, mongo_db)
    seed(app.extensions["fptrack"].ctx, broker)
    exposed = {name for name, _ in scrape(app, token_of(app, "victor"))}
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = [
        target["expr"]
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
        if "expr" in target
    ]
    assert len(exprs) >= 10
    asked = {name for expr in exprs for name in re.findall(r"\bfptrack_[a-z_]+", expr)}
    assert asked, "the dashboard asks for no fptrack metric"
    assert asked <= exposed, f"not exposed: {sorted(asked - exposed)}"
    assert {"fptrack_queue_messages", "fptrack_index_group_present"} <= asked


def test_the_prometheus_examples_scrape_metrics_with_a_token_file() -> None:
    """``deploy/prometheus/``: each job asks for ``/metrics`` with a bearer token read from a
    file; under compose, that file and the configuration are mounted where the job reads
    them, and the target is the admin service's port."""
    deploy = DASHBOARD.parents[1]
    compose = yaml.safe_load((deploy / "compose.yaml").read_text(encoding="utf-8"))["services"]
    mounts = dict(v.split(":")[:2] for v in compose["prometheus"]["volumes"])
    unit = (deploy / "fptrack-admin.service").read_text(encoding="utf-8")
    unit_bind = re.search(r"--bind (\S+)", unit)[1]
    admin_port = compose["admin"]["command"][compose["admin"]["command"].index("--bind") + 1]
    for name, target in (
        ("prometheus.yml", f"admin:{admin_port.rsplit(':', 1)[1]}"),
        ("prometheus-systemd.yml", unit_bind),
    ):
        [job] = yaml.safe_load((deploy / "prometheus" / name).read_text())["scrape_configs"]
        assert job["metrics_path"] == "/metrics"
        assert job["authorization"]["type"] == "Bearer"
        assert job["static_configs"] == [{"targets": [target]}]
        if name == "prometheus.yml":
            assert mounts[f"./prometheus/{name}"] == "/etc/prometheus/prometheus.yml"
            token_file = job["authorization"]["credentials_file"]
            assert mounts["./prometheus/metrics-token"] == token_file
    assert compose["prometheus"]["profiles"] == ["monitoring"]

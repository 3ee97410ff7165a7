"""Compose's start-up sequence, run as a script against empty stores (no Docker engine here).

The commands come from ``deploy/compose.yaml`` itself: ``init`` must succeed on a new
deployment's empty MongoDB and Redis, then the services that wait for it (worker, beat,
admin) must start and be healthy (``fptrack check`` passes, the admin answers
``/healthz``, and each service's own health check passes). Only what compose would change
is changed: the servers' addresses, and the admin's published port. The file's other
promises are read from it: a health check for every long-running service, a worker stop
that fits the crawl lease, an ``init`` that rebuilds only an incomplete index.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from pymongo.database import Database

from matcher.settings import Settings
from tests.servers.net import free_port
from tests.support.cli import fptrack
from tests.support.e2e import ROOT
from tests.support.waits import eventually

COMPOSE = ROOT / "deploy" / "compose.yaml"
SERVICES = ("worker", "beat", "admin")
VARIABLE = re.compile(r"\$\{(\w+)(?::([-?])([^}]*))?\}")


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}``."""

    def one(match: re.Match[str]) -> str:
        name, kind, rest = match.groups()
        if env.get(name):
            return env[name]
        if kind == "?":
            pytest.fail(f"compose requires {name}: {rest}")
        return rest if kind == "-" else ""

    return VARIABLE.sub(one, value)


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]


def command(name: str, env: dict[str, str]) -> list[str]:
    return [interpolate(str(part), env) for part in compose()[name]["command"]]


def healthcheck(name: str, env: dict[str, str], port: int) -> list[str]:
    """The argv of a service's health check, as this machine runs it."""
    test = [interpolate(str(part), env) for part in compose()[name]["healthcheck"]["test"]]
    assert test[0] == "CMD", test  # no shell in the image's health checks
    argv = [part.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for part in test[1:]]
    if argv[0] == "fptrack":
        return [sys.executable, "-m", "admin.cli", *argv[1:]]
    assert argv[0] == "python", argv
    return [sys.executable, *argv[1:]]


def seconds(value: str) -> int:
    """Compose's duration (``150s``, ``2m30s``) in seconds."""
    parts = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", value)
    assert parts is not None and value, value
    return int(parts[1] or 0) * 60 + int(parts[2] or 0)


def test_every_service_has_a_health_check_and_the_worker_a_stop_fitting_the_lease() -> None:
    services = compose()
    for name in ("mongo", "redis", *SERVICES):
        assert services[name]["healthcheck"]["test"], name
    worker = services["worker"]
    lease = Settings().crawl_lease
    assert seconds(worker["stop_grace_period"]) >= lease + 30  # a crawl's lease, downloads
    assert worker["init"] is True and worker["environment"]["TINI_KILL_PROCESS_GROUP"] == "1"
    assert services["init"]["command"] == ["index", "rebuild", "--if-incomplete"]


def test_the_services_start_after_init_and_init_after_the_databases() -> None:
    services = compose()
    assert services["init"]["depends_on"] == {
        "mongo": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }
    for name in SERVICES:
        assert services[name]["depends_on"] == {
            "init": {"condition": "service_completed_successfully"}
        }, name
    assert services["init"]["restart"] == "no"


def test_init_then_services_on_empty_stores(
    mongo_db: Database, redis_client: redis.Redis, broker: redis.Redis
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "MONGO_ROOT_PASSWORD": "not-used-here",
        "FPTRACK_ADMIN_SECRET": "a-test-secret-of-enough-length",
    }
    init = command("init", env)
    ran = fptrack(*init, env=env, timeout=120)
    assert ran.status == 0, ran.err

    port = free_port()
    for name in ("worker", "beat"):  # nothing runs yet: their health checks fail
        idle = subprocess.run(healthcheck(name, env, port), cwd=ROOT, env=env, capture_output=True)
        assert idle.returncode == 1, (name, idle.stdout, idle.stderr)
    processes: list[subprocess.Popen] = []
    try:
        for name in SERVICES:
            argv = command(name, env)
            if name == "admin":  # compose publishes 0.0.0.0:8000 on 127.0.0.1:ADMIN_PORT
                argv[argv.index("--bind") + 1] = f"127.0.0.1:{port}"
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "admin.cli", *argv],
                    cwd=ROOT,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        checks = []

        def healthy() -> bool:
            assert all(p.poll() is None for p in processes), "a service exited"
            checks.append(fptrack("check", env=env, timeout=60))
            return checks[-1].status == 0

        eventually(healthy, 90, "fptrack check to pass")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as answer:
            assert answer.status == 200
        for name in SERVICES:
            ran = subprocess.run(
                healthcheck(name, env, port), cwd=ROOT, env=env, capture_output=True, timeout=60
            )
            assert ran.returncode == 0, (name, ran.stdout, ran.stderr)
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)


def test_services_refuse_to_start_without_the_stores(tmp_path: Path) -> None:
    """What compose's depends_on guards against: started early, a service says why and exits."""
    env = {
        "FPTRACK_MONGO_URI": "mongodb://127.0.0.1:1",
        "FPTRACK_REDIS_URL": "redis://127.0.0.1:1/0",
    }
    for name in SERVICES:
        ran = fptrack(*command(name, {**os.environ, "FPTRACK_ADMIN_SECRET": "x"}), env=env)
        assert ran.status == 1 and ran.one_line_error(), (name, ran.err)
        assert "MongoDB unreachable at mongodb://127.0.0.1:1" in ran.err

"""The hostile benchmark's cases of the served admin: ``fptrack admin serve`` (gunicorn, its
default 2 workers x 4 threads) under hostile clients and outages.

Each run starts a ``redis-server`` and a SecantusDB of its own on free ports of 127.0.0.1
(its data in the run's folder), one admin account, and the admin as the console command
runs it, in a process group of its own; it then drives it over raw sockets and HTTP:

- ``login-10mb``: one anonymous URL-encoded ``POST /login`` of 10 MB (``a=1&`` repeated);
- ``form-parallel-190mb``: three anonymous ``POST /works/upload`` of 190 MB at once, sent
  chunked (no ``Content-Length``: the server learns the size only by reading);
- ``slow-clients-40``: 40 connections, 30 sending a request's headers one byte every
  ``drip`` seconds and 10 a login form's body one byte every ``drip`` seconds, while another
  user opens ``/login`` and logs in;
- ``store-down-page``: a logged-in user's dashboard, matches list and a form, once
  SecantusDB is stopped (SIGTERM, for real);
- ``metrics-store-down``: Prometheus' scrape of ``/metrics`` with a viewer's token once
  SecantusDB is stopped.

Every run returns ``ok`` (the case's outcome held), ``status`` (the HTTP status of the
answer that matters), ``wall_s`` (how long it took; for ``slow-clients-40`` the slower of
the other user's ``GET /login`` and its login), ``reason`` (what the answer said),
the admin's memory: ``scan_rss_mb`` the largest resident size of one admin process (the
gunicorn master or a worker, ``VmRSS`` read from ``/proc`` every 20 ms), ``tree_rss_mb``
their sum, and
``rise_mb``, the largest rise of one process's resident size above what it was before the
case's requests (target: at most :data:`RISE_TARGET_MB` for any anonymous request).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.servers.hostile_clients import (
    DRIVER_WORDS,
    PASSWORD,
    Browser,
    Rise,
    message,
    raw_request,
    slow_clients,
)
from tests.servers.net import free_port, wait_for_port, wait_until

ROOT = Path(__file__).resolve().parents[1]
RISE_TARGET_MB = 50
"""The issue's target: no anonymous request raises an admin process's RSS more than this."""
ANSWERED_WITHIN_S = 1.0
"""The issue's target: another user's ``/login`` under slow clients."""
SECRET = "a-bench-secret-of-enough-length"


# -- the deployment -----------------------------------------------------------------------


def _start(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    with log.open("ab") as out:
        return subprocess.Popen(
            argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip


def _stop(proc: subprocess.Popen | None, group: bool = False) -> None:
    """SIGTERM (to the process group with ``group``), SIGKILL after 20 s."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM) if group else proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL) if group else proc.kill()
        proc.wait(10)


@dataclass
class Served:
    """A served admin over a Redis and a SecantusDB of its own."""

    folder: Path
    env: dict[str, str] = field(default_factory=dict)
    base: str = ""
    redis: subprocess.Popen | None = None
    mongo: subprocess.Popen | None = None
    admin: subprocess.Popen | None = None
    mongo_port: int = 0
    token: str = ""
    """A viewer's API token, when one was made."""

    def start(self, extra_env: dict[str, str] | None = None, viewer_token: bool = False) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        redis_port, self.mongo_port, admin_port = free_port(), free_port(), free_port()
        self.redis = _start(
            [shutil.which("redis-server") or "redis-server", "--port", str(redis_port),
             "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
             str(self.folder)],
            self.folder / "redis.log",
        )  # fmt: skip
        self.start_mongo()
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("FPTRACK_")}
        self.env = {
            **base_env,
            "PYTHONPATH": str(ROOT),
            "FPTRACK_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "FPTRACK_BROKER_URL": f"redis://127.0.0.1:{redis_port}/1",
            "FPTRACK_MONGO_URI": f"mongodb://127.0.0.1:{self.mongo_port}",
            "FPTRACK_MONGO_DB": "hostile_service",
            "FPTRACK_ADMIN_SECRET": SECRET,
            **(extra_env or {}),
        }
        if not wait_for_port("127.0.0.1", redis_port, 30, process=self.redis):
            raise RuntimeError("hostile_bench: redis-server did not start")
        created = subprocess.run(
            [*fptrack(), "admin", "create-user", "alice", "--role", "admin", "--password-stdin"],
            input=PASSWORD + "\n", env=self.env, cwd=ROOT, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        if created.returncode != 0:
            raise RuntimeError(f"hostile_bench: create-user failed: {created.stderr.strip()}")
        if viewer_token:
            self.token = make_token(self.env)
        self.base = f"http://127.0.0.1:{admin_port}/"
        argv = [*fptrack(), "admin", "serve", "--bind", f"127.0.0.1:{admin_port}"]
        self.admin = _start(argv, self.folder / "admin.log", self.env)
        if not wait_until(lambda: _answers(self.base + "healthz"), 90, interval=0.2):
            raise RuntimeError(f"hostile_bench: the admin did not serve: {self.log()[-500:]}")
        wait_until(lambda: len(self.pids()) >= 3, 30, interval=0.1)  # master and 2 workers

    def start_mongo(self) -> None:
        data = self.folder / "mongodb"
        data.mkdir(exist_ok=True)
        self.mongo = _start(
            [shutil.which("secantusd-py") or "secantusd-py", "--host", "127.0.0.1", "--port",
             str(self.mongo_port), "--storage-path", str(data), "--standalone", "--log-level",
             "WARNING"],
            self.folder / "mongodb.log",
        )  # fmt: skip
        if not wait_for_port("127.0.0.1", self.mongo_port, 60, process=self.mongo):
            raise RuntimeError("hostile_bench: SecantusDB did not start")

    def stop_mongo(self) -> None:
        _stop(self.mongo)

    def pids(self) -> list[int]:
        """The admin's processes: the gunicorn master and its workers."""
        if self.admin is None:
            return []
        found = [self.admin.pid]
        stack = [self.admin.pid]
        while stack:
            pid = stack.pop()
            try:
                for task in Path(f"/proc/{pid}/task").iterdir():
                    kids = [int(c) for c in (task / "children").read_text().split()]
                    found += kids
                    stack += kids
            except OSError:
                continue
        return found

    def log(self) -> str:
        try:
            return (self.folder / "admin.log").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        _stop(self.admin, group=True)
        _stop(self.mongo)
        _stop(self.redis)


def make_token(env: dict[str, str]) -> str:
    """A viewer's API token of alice, made in the store of ``env``."""
    from admin.services.accounts import User
    from admin.services.api_tokens import ApiTokens
    from matcher.settings import Settings
    from matcher.store import Store, mongo_client

    settings = Settings.from_env(env)
    client = mongo_client(settings.mongo_uri)
    try:
        store = Store(client[settings.mongo_db])
        return ApiTokens(store).create(User("alice", "admin"), "prometheus", "viewer").secret
    finally:
        client.close()


def fptrack() -> list[str]:
    return [sys.executable, "-c", "import sys; from admin.cli import main; sys.exit(main())"]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def served(
    folder: Path, extra_env: dict[str, str] | None = None, viewer_token: bool = False
) -> Iterator[Served]:
    """A :class:`Served` admin (``viewer_token``: with a viewer's API token made before it
    starts, as Prometheus' token was made long before an outage), stopped at the end."""
    admin = Served(folder)
    try:
        admin.start(extra_env, viewer_token)
        yield admin
    finally:
        admin.stop()


# -- the cases ------------------------------------------------------------------------------


def login_10mb(folder: Path) -> dict[str, Any]:
    """An anonymous URL-encoded ``POST /login`` of 10 MB: 413 at once, no process grows."""
    with served(folder) as admin:
        host = urllib.parse.urlsplit(admin.base).netloc
        body = b"a=1&" * (10 * 1024 * 1024 // 4)
        head = (
            f"POST /login HTTP/1.1\r\nHost: {host}\r\n"
            f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}"
        )
        with Rise(admin.pids) as rise:
            started = time.perf_counter()
            status, answer = raw_request(admin.base, head, body)
            took = time.perf_counter() - started
        after, _, _ = Browser(admin.base).request("login")
    ok = status == 413 and rise.rise <= RISE_TARGET_MB and after == 200
    return {"ok": ok, "status": status, "wall_s": took, "reason": message(answer),
            **rise.figures()}  # fmt: skip


def form_parallel_190mb(folder: Path) -> dict[str, Any]:
    """Three anonymous chunked ``POST /works/upload`` of 190 MB at once: each 413, no
    process grows."""
    with served(folder) as admin:
        host = urllib.parse.urlsplit(admin.base).netloc
        boundary = "hostilebench"
        head = (
            f"POST /works/upload HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}"
        )
        part = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="a.txt"'
            "\r\nContent-Type: text/plain\r\n\r\n"
        ).encode()
        block = b"x" * (1024 * 1024)

        def body() -> Iterator[bytes]:
            yield part
            for _ in range(190):
                yield block
            yield f"\r\n--{boundary}--\r\n".encode()

        results: list[tuple[int, str]] = []

        def send() -> None:
            results.append(raw_request(admin.base, head, body()))

        with Rise(admin.pids) as rise:
            started = time.perf_counter()
            threads = [threading.Thread(target=send) for _ in range(3)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            took = time.perf_counter() - started
        after, _, _ = Browser(admin.base).request("login")
    statuses = sorted(status for status, _ in results)
    ok = statuses == [413, 413, 413] and rise.rise <= RISE_TARGET_MB and after == 200
    return {"ok": ok, "status": statuses[-1] if statuses else 0, "wall_s": took,
            "reason": message(results[0][1]) if results else "", **rise.figures()}  # fmt: skip


def slow_clients_40(folder: Path, drip: float) -> dict[str, Any]:
    """40 slow clients (headers, and bodies, one byte every ``drip`` seconds) on the admin,
    then another user's ``GET /login`` (within :data:`ANSWERED_WITHIN_S`) and login (within
    that of the same login with no slow client, measured first, plus
    :data:`ANSWERED_WITHIN_S`: most of a login is its password's argon2id hash, whose time
    is the machine's load, not the clients')."""
    with served(folder) as admin:
        alone_s, alone = _timed(Browser(admin.base).login)
        if alone != 200:
            raise RuntimeError("hostile_bench: could not log in to the admin")
        stop = threading.Event()
        with Rise(admin.pids) as rise:
            clients = slow_clients(admin.base, 40, drip, stop)
            try:
                for client in clients:
                    client.connected.wait(10)
                time.sleep(drip * 2.5)  # each has sent a few bytes and holds its connection
                held = sum(1 for c in clients if c.is_alive())
                browser = Browser(admin.base)
                page_s, (page_status, _, _) = _timed(lambda: browser.request("login"))
            except BaseException:
                stop.set()
                raise
        try:
            with Rise(admin.pids) as hashing:  # the login hashes its password (argon2id)
                login_s, logged_in = _timed(browser.login)
            still = sum(1 for c in clients if c.is_alive())
        finally:
            stop.set()
            for client in clients:
                client.join(10)
    ok = (
        held == still == 40 and page_status == 200 and logged_in == 200
        and page_s < ANSWERED_WITHIN_S and login_s < alone_s + ANSWERED_WITHIN_S
    )  # fmt: skip
    reason = (
        f"GET /login {page_s:.3f} s, login {login_s:.3f} s (alone {alone_s:.3f} s; rise "
        f"{hashing.rise:.0f} MB: its argon2id hash); {still} slow clients held"
    )
    took = max(page_s, login_s)
    return {"ok": ok, "status": page_status, "wall_s": took, "reason": reason, **rise.figures()}


def store_down_page(folder: Path) -> dict[str, Any]:
    """A logged-in user's pages once SecantusDB is stopped: 503 with ``Retry-After``, one line
    naming the store, no driver text; the admin keeps running."""
    with served(folder) as admin:
        browser = Browser(admin.base)
        if browser.login() != 200:
            raise RuntimeError("hostile_bench: could not log in to the admin")
        admin.stop_mongo()
        with Rise(admin.pids) as rise:
            started = time.perf_counter()
            status, page, headers = browser.request("")
            took = time.perf_counter() - started
            matches, matches_page, _ = browser.request("matches/")
            form, form_page, _ = browser.request("tokens/", {"name": "t", "role": "viewer"})
        running = admin.admin is not None and admin.admin.poll() is None
        logged = "answered 503" in admin.log()
    pages = page + matches_page + form_page
    shown = [word for word in DRIVER_WORDS if word in pages]
    ok = (
        status == matches == form == 503 and headers.get("retry-after") == "5"
        and headers.get("refresh") == "5"
        and "not answering" in page and not shown and running and logged
    )  # fmt: skip
    reason = message(page) + (f" (driver text: {', '.join(shown)})" if shown else "")
    return {"ok": ok, "status": status, "wall_s": took, "reason": reason, **rise.figures()}


def metrics_store_down(folder: Path) -> dict[str, Any]:
    """Prometheus' scrape with a viewer's token, once SecantusDB is stopped: 200, the
    figures of the other sources, ``fptrack_metrics_source_up{source="mongodb"} 0``."""
    with served(folder, {"FPTRACK_METRICS_CACHE_SECONDS": "1"}, viewer_token=True) as admin:
        secret = admin.token
        status, text, _ = Browser(admin.base).request(
            "metrics", headers={"Authorization": f"Bearer {secret}"}
        )
        if status != 200:
            raise RuntimeError(f"hostile_bench: /metrics answered {status} with the store up")
        admin.stop_mongo()
        time.sleep(1.5)  # past the metrics' cache
        with Rise(admin.pids) as rise:
            started = time.perf_counter()
            status, text, _ = Browser(admin.base).request(
                "metrics", headers={"Authorization": f"Bearer {secret}"}
            )
            took = time.perf_counter() - started
    down = re.search(r'fptrack_metrics_source_up\{source="mongodb"\} (\S+)', text)
    redis_up = re.search(r'fptrack_metrics_source_up\{source="redis"\} (\S+)', text)
    ok = (
        status == 200 and down is not None and float(down.group(1)) == 0
        and redis_up is not None and float(redis_up.group(1)) == 1
    )  # fmt: skip
    reason = f'source_up{{source="mongodb"}} {down.group(1) if down else "missing"}'
    return {"ok": ok, "status": status, "wall_s": took, "reason": reason, **rise.figures()}


def _timed(call: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = call()
    return time.perf_counter() - started, value

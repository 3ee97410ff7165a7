"""The one-machine deployment, started and driven as the README's quick start says.

supervisord runs ``deploy/local/supervisord.conf``: SecantusDB started on a free local port
(nothing answers there) with its data on disk in a temporary folder, a worker, beat and the
admin server, on the test Redis. Then the quick start's commands, each in a fresh process:
the health check until it passes, the first admin account, the sample works, the sample
site, a crawl through the worker; the admin shows the matches in the real browser, and the
HTML report is exported. The README must carry every command run here
(:data:`QUICK_START`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from playwright.sync_api import Page, expect

from admin.scan import serve_directory
from tests.support.browser import ROOT, PageLog, log_in
from tests.support.cli import Ran, fptrack
from tests.support.one_machine import supervisord_start
from tests.support.waits import eventually

README_SITE = "http://127.0.0.1:8080/"
QUICK_START = (
    "pip install -c constraints.txt -e '.[local]'",
    "mkdir -p fptrack-data/logs",
    "supervisord -c deploy/local/supervisord.conf",
    "supervisorctl -c deploy/local/supervisord.conf status",
    "fptrack check",
    "fptrack admin create-user alice --role admin",
    "fptrack works add samples/works",
    "python -m http.server 8080 --bind 127.0.0.1 -d samples/site",
    f"fptrack sites add {README_SITE} --name sample --schedule never",
    "fptrack crawl sample",
    "fptrack matches list",
    "fptrack report --format html --out report.html",
)
"""The quick start's commands, as the README writes them."""
PASSWORD = "a long enough password"
SAMPLE_MATCHES = 9  # samples/site/README.md


def test_the_readme_carries_the_quick_start() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for command in QUICK_START:
        assert command in readme, command


@pytest.fixture
def deployment(tmp_path: Path, redis_client: redis.Redis) -> Iterator[dict[str, str]]:
    """supervisord with ``deploy/local/supervisord.conf``, on empty stores; yields the
    environment of the commands (the processes are stopped afterwards, and must stop)."""
    with supervisord_start(tmp_path, FPTRACK_MONGO_DB=None) as (env, _):
        yield env


def run(env: dict[str, str], *argv: str, stdin: str = "") -> Ran:
    ran = fptrack(*argv, env=env, stdin=stdin, timeout=120)
    assert ran.status == 0, (argv, ran.out, ran.err)
    return ran


def test_quick_start_on_one_machine(
    deployment: dict[str, str], page: Page, page_log: PageLog, artifacts: Path, tmp_path: Path
) -> None:
    env = deployment
    started = time.monotonic()
    checks: list[Ran] = []

    def healthy() -> bool:
        checks.append(fptrack("check", env=env, timeout=60))
        return checks[-1].status == 0

    eventually(healthy, 120, "fptrack check to pass")
    health = {line.split()[1]: line for line in checks[-1].out.splitlines()}
    services = {"mongodb", "redis", "broker", "workers", "beat", "indexes", "schedules"}
    assert set(health) == services | {"crawls", "evidence"}
    assert env["FPTRACK_MONGO_URI"] in health["mongodb"]
    assert any((Path(env["FPTRACK_DATA_DIR"]) / "mongodb").iterdir())  # SecantusDB, on disk

    run(env, "admin", "create-user", "alice", "--role", "admin", "--password-stdin", stdin=PASSWORD)
    assert "7 work(s) registered" in run(env, "works", "add", "samples/works").err
    with serve_directory(ROOT / "samples" / "site") as site:
        run(env, "sites", "add", site, "--name", "sample", "--schedule", "never")
        assert "crawl of sample enqueued" in run(env, "crawl", "sample").out

        def matched() -> bool:
            ran = fptrack("matches", "list", "--json", env=env)
            return ran.status == 0 and len(json.loads(ran.out)) == SAMPLE_MATCHES

        eventually(matched, 120, "the worker to crawl the sample site and record its matches")
    seconds_to_matches = time.monotonic() - started

    admin = "http://" + env["FPTRACK_ADMIN_BIND"]
    log_in(page, admin, "alice", PASSWORD)

    def counted() -> bool:  # the workers send its tallies every FPTRACK_TALLY_SECONDS
        page.reload()
        return page.locator("#total-infringing").inner_text() == str(SAMPLE_MATCHES)

    eventually(counted, 15, "the dashboard to count every match")
    expect(page.locator("#total-infringing")).to_have_text(str(SAMPLE_MATCHES))
    page.goto(admin + "/matches/")
    expect(page.locator("#match-list tbody tr")).to_have_count(SAMPLE_MATCHES)
    expect(page.locator("#match-list")).to_contain_text("lighthouse")
    page.screenshot(path=str(artifacts / "one-machine-matches.png"), full_page=True)
    page.locator("#match-list tbody tr a").first.click()
    expect(page.locator("#passages .passage").first).to_be_visible()
    assert page_log.unexpected_errors() == []

    report = tmp_path / "report.html"
    run(env, "report", "--format", "html", "--out", str(report))
    assert f"{SAMPLE_MATCHES} match(es)" in report.read_text(encoding="utf-8")
    assert seconds_to_matches < 120, f"{seconds_to_matches:.0f} s from start to the matches"

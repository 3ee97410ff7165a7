"""What a new deployment runs first, on the test servers: the schedules, the first index
rebuild, ``fptrack check``, a crawl nobody takes. Each command runs in this process
(``admin.cli.main`` with its own :class:`~admin.context.Context` read from ``FPTRACK_*``, as the
console script does; :func:`~tests.support.cli.run_cli`); a few smoke tests at the end
run the installed ``fptrack`` and ``python -m admin.cli`` in a fresh process, as an operator
does."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta
from importlib.metadata import version

import redis
from pymongo.database import Database

from admin.health import this_host
from matcher.keys import Keys
from matcher.pages import CrawledPage
from matcher.store import Store, now
from tests.support.cli import DEAD_MONGO, DEAD_REDIS, ROOT, fptrack, run_cli


def test_schedules_without_a_beat(mongo_db: Database, redis_client: redis.Redis) -> None:
    """redbeat's settings are made on first use (each command makes its Celery app), not only
    by a running beat."""
    added = run_cli(
        "sites", "add", "http://127.0.0.1:9/", "--name", "pirate", "--schedule", "hourly"
    )
    assert added.status == 0, added.err
    listed = run_cli("schedules", "--json")
    assert listed.status == 0, listed.err
    [entry] = json.loads(listed.out)
    assert (entry["name"], entry["task"], entry["args"]) == (
        "crawl:pirate",
        "fptrack.crawl_site",
        ["pirate"],
    )
    due = datetime.fromisoformat(entry["due_at"])
    assert timedelta(0) <= due - datetime.now(UTC) <= timedelta(hours=1)  # hourly: next hour
    [line] = run_cli("schedules").out.splitlines()
    assert re.fullmatch(
        r"crawl:pirate\tfptrack\.crawl_site\tcron \d+ \* \* \* \* \(UTC\)\t"
        r"next \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(in \d+(\.\d)? (min|s)( \d+ s)?\)",
        line,
    ), line


def test_index_rebuild_on_empty_stores(mongo_db: Database, redis_client: redis.Redis) -> None:
    """A new deployment's first command (compose's ``init``): nothing to index is no error."""
    ran = run_cli("index", "rebuild")
    assert ran.status == 0, ran.err
    assert "rebuilt: 0 work segment(s), 0 page(s)" in ran.out


def check_lines(out: str) -> dict[str, str]:
    """``fptrack check``'s lines by check name."""
    return {line.split()[1]: line for line in out.splitlines()}


def test_check_names_what_is_not_running(mongo_db: Database, redis_client: redis.Redis) -> None:
    ran = run_cli("check")
    assert ran.status == 1 and ran.err.strip() == "3 problem(s)"
    lines = check_lines(ran.out)
    assert list(lines) == [
        *("mongodb", "redis", "broker", "workers", "beat", "indexes", "schedules", "crawls"),
        "evidence",
    ]
    assert lines["mongodb"].startswith("ok") and f"database {mongo_db.name}" in lines["mongodb"]
    assert lines["redis"].startswith("ok") and lines["broker"].startswith("ok")
    assert lines["workers"].startswith("FAIL") and "start fptrack worker" in lines["workers"]
    assert lines["beat"].startswith("FAIL") and "start fptrack beat" in lines["beat"]
    assert lines["indexes"].startswith("ok")  # nothing stored, nothing indexed
    assert lines["schedules"].startswith("FAIL") and "daily:match-new-works" in lines["schedules"]
    assert "daily:prune-archive" in lines["schedules"]
    assert lines["crawls"].startswith("ok") and "no crawl failed in the last 1 d" in lines["crawls"]
    assert lines["evidence"].startswith("ok") and "no trusted timestamps" in lines["evidence"]


def test_check_reports_failed_and_stale_crawls(mongo_db: Database) -> None:
    store = Store(mongo_db)
    reason = "start URL http://127.0.0.1:9/nosuch/: answered 404 Not Found"
    long_ago = now() - timedelta(days=3)
    store.crawls.record_crawl(
        "old", "typo", outcome="failed", finished_at=long_ago, error="old reason"
    )
    ran = run_cli("check", "crawls")
    assert ran.status == 0 and check_lines(ran.out)["crawls"].startswith("ok")  # 3 days ago
    added = run_cli("sites", "add", "http://127.0.0.1:9/nosuch/", "--name", "typo")
    assert added.status == 0, added.err
    store.crawls.record_crawl("r1", "typo", outcome="failed", finished_at=now(), error=reason)
    store.crawls.record_crawl_process(
        "r2", "stuck", "a1" * 16, run_started_at=long_ago, started_at=long_ago,
        outcome="running", slot=0,
    )  # fmt: skip
    old_page = CrawledPage("http://p/1", "stuck", "", "正文", fetched_at=now() - timedelta(hours=1))
    store.pages.store_crawled_page(old_page, "h1")  # pending: never matched
    store.pages.store_crawled_page(CrawledPage("http://p/2", "stuck", "", "正文二"), "h2")  # recent
    ran = run_cli("check", "crawls", "--json")
    assert ran.status == 1
    [crawls] = [c for c in json.loads(ran.out)["checks"] if c["name"] == "crawls"]
    assert crawls["state"] == "FAIL"
    assert f"1 crawl(s) failed in the last 1 d (typo); last: typo: {reason}" in crawls["detail"]
    assert (
        "1 crawl run(s) still recorded running past their time and lease (stuck)"
        in (crawls["detail"])
    )
    assert "1 page(s) waiting for their match for over 30 min" in crawls["detail"]
    assert "old reason" not in crawls["detail"]


def test_a_failed_crawl_is_cleared_by_ack_removal_or_a_later_success(mongo_db: Database) -> None:
    """``fptrack check crawls`` (the real command, in a process of its own) reports a failed
    crawl until it is seen to: acknowledged with ``--ack`` (who and when recorded), its site
    removed (and a site added again under that name does not inherit it), or the site
    crawled successfully since."""
    store = Store(mongo_db)
    for name in ("fixed", "gone", "typo"):
        url = f"http://127.0.0.1:9/{name}/"
        assert run_cli("sites", "add", url, "--name", name, "--schedule", "never").status == 0
        at = now()
        error = f"start URL {url}: answered 404 Not Found"
        store.crawls.record_crawl(
            name, name, outcome="failed", started_at=at, finished_at=at, error=error
        )
    ran = fptrack("check", "crawls")
    line = check_lines(ran.out)["crawls"]
    assert ran.status == 1 and "3 crawl(s) failed in the last 1 d (fixed, gone, typo)" in line
    assert "(once seen to: fptrack check --ack fixed --ack gone --ack typo)" in line
    assert run_cli("sites", "remove", "gone").status == 0
    later = at + timedelta(seconds=1)
    store.crawls.record_crawl(
        "fixed-2", "fixed", outcome="finished", started_at=later, finished_at=later
    )
    line = check_lines(fptrack("check", "crawls").out)["crawls"]
    assert "1 crawl(s) failed in the last 1 d (typo)" in line, line
    ran = fptrack("check", "crawls", "--ack", "typo", "--by", "alice")
    assert ran.status == 0, (ran.out, ran.err)
    assert ran.err.splitlines() == [
        "acknowledged 1 failed crawl(s) of typo (by alice)",
        "all healthy",
    ]
    assert "no crawl failed in the last 1 d but 3 seen to" in check_lines(ran.out)["crawls"]
    [run] = store.crawls.last_crawls("typo")
    assert run["acknowledged_by"] == "alice" and now() - run["acknowledged_at"] < timedelta(1)
    assert run_cli("sites", "add", "http://127.0.0.1:9/gone/", "--name", "gone").status == 0
    assert fptrack("check", "crawls").status == 0  # the removed site's failure stays cleared
    again = fptrack("check", "--ack", "typo", "crawls")
    assert again.status == 0 and "no failed crawl of typo left to acknowledge" in again.err
    unknown = fptrack("check", "--ack", "nosuch")
    assert (unknown.status, unknown.out) == (2, "") and unknown.one_line_error(), unknown.err
    assert "--ack nosuch: no site named nosuch" in unknown.err


def test_check_says_catching_up_while_crawled_pages_wait(mongo_db: Database) -> None:
    """Pages stored by a crawl and not matched yet (the workers are behind, or were away
    through an outage): not "all healthy" but ``catching-up`` with their count, exit status
    4; FAIL once one waited over 30 min; ok once they are matched."""
    store = Store(mongo_db)
    pages = [CrawledPage(f"http://p/{n}", "pirate", "", f"正文{n}") for n in range(3)]
    stored = [store.pages.store_crawled_page(page, f"h{n}")[0] for n, page in enumerate(pages)]
    ran = run_cli("check", "crawls")
    line = check_lines(ran.out)["crawls"]
    assert (ran.status, ran.err) == (4, "0 problem(s), catching up\n"), (ran.out, ran.err)
    assert line.startswith("catching-up") and "catching up: 3 page(s) crawled waiting" in line
    [crawls] = [c for c in json.loads(run_cli("check", "crawls", "--json").out)["checks"]
                if c["name"] == "crawls"]  # fmt: skip
    assert (crawls["state"], crawls["ok"]) == ("catching-up", False)
    for doc, n in zip(stored[:2], range(2), strict=True):
        assert store.page_marks.mark_processed(doc["_id"], f"h{n}")
    assert "catching up: 1 page(s)" in check_lines(run_cli("check", "crawls").out)["crawls"]
    assert store.page_marks.mark_processed(stored[2]["_id"], "h2")
    assert run_cli("check", "crawls").status == 0
    old = CrawledPage("http://p/old", "pirate", "", "旧", fetched_at=now() - timedelta(hours=1))
    store.pages.store_crawled_page(old, "h-old")
    ran = run_cli("check", "crawls")
    assert ran.status == 1 and "1 page(s) waiting for their match for over 30 min" in ran.out


def test_check_says_starting_while_a_worker_boots(
    mongo_db: Database, redis_client: redis.Redis
) -> None:
    """No worker answers, but one started on this host within the grace: ``starting``,
    exit 3, not FAIL; once its grace is over (its record expired), FAIL."""
    key = Keys("fptrack-test").starting("worker", this_host(), 4242)
    redis_client.set(key, now().isoformat(), ex=120)
    ran = run_cli("check", "workers", "--this-host")
    line = check_lines(ran.out)["workers"]
    assert ran.status == 3 and ran.err.strip() == "0 problem(s), 1 starting"
    assert line.startswith("starting") and "1 worker process(es) started" in line
    redis_client.delete(key)
    ran = run_cli("check", "workers")
    assert ran.status == 1 and check_lines(ran.out)["workers"].startswith("FAIL")


def test_check_finds_indexes_out_of_step(mongo_db: Database, redis_client: redis.Redis) -> None:
    sample = str(ROOT / "samples" / "works" / "lighthouse.txt")
    assert run_cli("works", "add", sample, "--no-match").status == 0
    assert "works: 1 stored, 1 indexed" in check_lines(run_cli("check").out)["indexes"]
    redis_client.flushdb()  # Redis lost its data: MongoDB still holds the fingerprints
    line = check_lines(run_cli("check").out)["indexes"]
    assert line.startswith("FAIL") and "32 of 32 tag groups lost" in line
    assert "fptrack index rebuild --if-incomplete" in line
    assert "rebuilt 32 of 32" in run_cli("index", "rebuild", "--if-incomplete").out
    assert check_lines(run_cli("check").out)["indexes"].startswith("ok")
    redis_client.delete(*redis_client.keys("*:works:*"))  # the works' index lost, not its markers
    line = check_lines(run_cli("check").out)["indexes"]
    assert line.startswith("FAIL") and "works: 1 stored, 0 indexed" in line
    assert run_cli("index", "rebuild").status == 0
    assert check_lines(run_cli("check").out)["indexes"].startswith("ok")
    # Another bucket count than the index was built with: found, and a rebuild mends it.
    other = {"FPTRACK_WINDOW_BUCKET_BITS": "12"}
    line = check_lines(run_cli("check", env=other).out)["indexes"]
    assert line.startswith("FAIL") and "bucket_bits" in line and "fptrack index rebuild" in line
    assert run_cli("index", "rebuild", env=other).status == 0
    assert check_lines(run_cli("check", env=other).out)["indexes"].startswith("ok")


def test_check_as_json(mongo_db: Database, redis_client: redis.Redis) -> None:
    ran = run_cli("check", "--json")
    report = json.loads(ran.out)
    assert ran.status == 1 and report["healthy"] is False
    assert {c["name"]: c["ok"] for c in report["checks"]}["mongodb"] is True


def test_crawl_wait_gives_up_after_its_timeout(mongo_db: Database) -> None:
    """No worker takes the crawl: ``--wait --timeout`` exits 4 with one line, and the
    crawl's message stays for a worker."""
    from matcher.worker.celery_app import CRAWL_QUEUE

    broker = redis.Redis.from_url(os.environ["FPTRACK_BROKER_URL"])
    site = "http://127.0.0.1:9/"
    assert run_cli("sites", "add", site, "--name", "later", "--schedule", "never").status == 0
    try:
        ran = run_cli("crawl", "later", "--wait", "--timeout", "1", "--poll", "0.2")
        assert ran.status == 4, ran.err
        assert ran.err.strip() == "later: waited 1 s: the crawl is not started (is a worker up?)"
        assert broker.llen(CRAWL_QUEUE) == 1
    finally:
        broker.delete(CRAWL_QUEUE)
        broker.close()


def test_commands_run_one_after_another_in_one_process(
    mongo_db: Database, redis_client: redis.Redis
) -> None:
    """``admin.cli.main`` is the console script's API: the same command twice gives the same
    answer, and each closes the clients it opened and gives back Celery's current app (each
    command makes its own app, which Celery makes current)."""
    from celery import current_app

    before = current_app._get_current_object()
    sample = str(ROOT / "samples" / "works" / "lighthouse.txt")
    assert run_cli("works", "add", sample, "--no-match").status == 0
    first, again = run_cli("check", "--json"), run_cli("check", "--json")
    assert (first.status, again.status) == (1, 1)
    assert [c["name"] for c in json.loads(first.out)["checks"]] == [
        c["name"] for c in json.loads(again.out)["checks"]
    ]
    assert run_cli("schedules").status == 0
    assert current_app._get_current_object() is before


def test_smoke_console_script_version() -> None:
    """The installed console script (next to this interpreter) starts and names its version."""
    ran = fptrack("--version", script=True)
    assert (ran.status, ran.err) == (0, ""), ran.err
    assert ran.out.strip() == f"fptrack {version('fptrack')}"


def test_smoke_bad_input_exit_code() -> None:
    """``python -m admin.cli``: a mistyped command or action exits 2 with one line naming
    the one meant (:class:`admin.commands.Parser`; argparse's ``suggest_on_error`` exists
    from Python 3.14 only), no usage, no traceback; a word close to none lists them."""
    for argv, said in (
        (("wroks", "list"), "fptrack: error: unknown command 'wroks': did you mean works?"),
        (("sites", "lsit"), "fptrack sites: error: unknown action 'lsit': did you mean list?"),
        (("nosuch",), "fptrack: error: unknown command 'nosuch' (choose from scan, works,"),
    ):
        ran = fptrack(*argv)
        assert (ran.status, ran.out) == (2, ""), argv
        assert ran.err.startswith(said) and ran.err.count("\n") == 1, ran.err


def test_smoke_stores_down_in_a_fresh_process(tmp_path) -> None:
    """A command that needs the stores, every store down: exit 1 and one line naming the
    server, from a process that shares nothing with the tests."""
    down = {"FPTRACK_MONGO_URI": DEAD_MONGO, "FPTRACK_REDIS_URL": DEAD_REDIS}
    ran = fptrack("works", "list", env={**down, "FPTRACK_BROKER_URL": DEAD_REDIS}, cwd=tmp_path)
    assert ran.status == 1 and ran.out == ""
    assert ran.one_line_error(), ran.err
    assert "MongoDB unreachable at mongodb://127.0.0.1:1 (connection refused)" in ran.err

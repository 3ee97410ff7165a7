"""Ingest of crawled pages, operational records and the jobs behind the tasks (no broker).

The test Redis (flushed database) and MongoDB servers; every test checks what reaches the store.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.sites.site_config import SiteConfig, SiteConfigError
from matcher.store import Store, StoreError
from matcher.worker import jobs
from matcher.worker.ingest import REENQUEUE_AFTER, Ingest

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "works"
CHROME = "盗版小说网 首页 排行榜\n{}\n本站小说均来自网络"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


class TestIngest:
    def test_new_changed_unchanged(self, engine: Engine) -> None:
        queued: list[str] = []
        clock = [datetime(2026, 11, 27, 3, 0, tzinfo=UTC)]
        ingest = Ingest(engine.store, queued.append, clock=lambda: clock[0])
        first = ingest.page(CrawledPage(url="http://a/1", site="a", title="t", text="第一版文字"))
        assert (first.state, first.enqueued) == ("new", True)
        clock[0] += timedelta(minutes=5)
        soon = ingest.page(CrawledPage(url="http://a/1", site="a", title="t", text="第一版文字"))
        # its task was sent five minutes ago: not sent twice
        assert (soon.state, soon.enqueued) == ("unchanged", False)
        clock[0] += REENQUEUE_AFTER
        same = ingest.page(CrawledPage(url="http://a/1", site="a", title="t", text="第一版文字"))
        # never processed an hour on: enqueued again, so a lost task is made good
        assert (same.state, same.enqueued) == ("unchanged", True)
        engine.store.page_marks.mark_processed(
            first.page_id, engine.store.pages.get_page(first.page_id)["content_hash"]
        )
        again = ingest.page(CrawledPage(url="http://a/1", site="a", title="t", text="第一版文字"))
        assert (again.state, again.enqueued) == ("unchanged", False)
        changed = ingest.page(CrawledPage(url="http://a/1", site="a", title="t", text="第二版文字"))
        assert (changed.state, changed.enqueued) == ("changed", True)
        assert queued == [first.page_id] * 3
        assert engine.store.count("pages") == 1
        assert list(engine.store.page_marks.pending_pages()) == [first.page_id]

    def test_enqueue_failure_leaves_page_pending(self, engine: Engine) -> None:
        def broken(page_id: str) -> None:
            raise ConnectionError("broker down")

        with pytest.raises(ConnectionError):
            Ingest(engine.store, broken).page(
                CrawledPage(url="http://a/2", site="a", title="", text="文字")
            )
        page = engine.store.pages.page_by_url("http://a/2")
        assert page is not None and page["pending"] is True
        queued: list[str] = []
        assert Ingest(engine.store, queued.append).requeue_pending() == 1
        assert queued == [str(page["_id"])]

    def test_processed_page_is_no_longer_pending(self, engine: Engine) -> None:
        engine.add_work(sample("lighthouse.txt"), title="lighthouse", source="lighthouse.txt")
        queued: list[str] = []
        ingested = Ingest(engine.store, queued.append).page(
            CrawledPage(
                url="http://pirate/1",
                site="pirate",
                title="",
                text=CHROME.format(sample("lighthouse.txt")),
            )
        )
        records = engine.process_stored_page(ingested.page_id)
        assert len(records) == 1 and records[0]["url"] == "http://pirate/1"
        assert list(engine.store.page_marks.pending_pages()) == []
        # processing twice converges on the same single record
        engine.process_stored_page(ingested.page_id)
        assert engine.store.matches.count() == 1


class TestSites:
    def test_defaults_and_round_trip(self) -> None:
        site = SiteConfig(name="pirate", start_urls=("http://127.0.0.1:9/x",))
        assert site.allowed_domains == ("127.0.0.1",)
        assert SiteConfig.from_dict(site.to_dict()) == site

    @pytest.mark.parametrize(
        "data",
        [
            {"name": "a b", "start_urls": ["http://x/"]},
            {"name": "ok", "start_urls": []},
            {"name": "ok", "start_urls": ["ftp://x/"]},
            {"name": "ok", "start_urls": "http://x/"},
            {"name": "ok", "start_urls": ["http://x/"], "max_depth": "3"},
            {"name": "ok", "start_urls": ["http://x/"], "include": ["("]},
            {"name": "ok", "start_urls": ["http://x/"], "schedule": "sometimes"},
            {"name": "ok", "start_urls": ["http://x/"], "surprise": 1},
            {"name": {"$ne": ""}, "start_urls": ["http://x/"]},
        ],
    )
    def test_invalid_configurations_are_refused(self, data: dict) -> None:
        with pytest.raises(SiteConfigError):
            SiteConfig.from_dict(data)

    def test_store_sites(self, store: Store) -> None:
        site = SiteConfig(name="pirate", start_urls=("http://p/",), authorised=False)
        assert store.sites.save_site(site)[1] is True
        assert (
            store.sites.save_site(
                SiteConfig(name="pirate", start_urls=("http://p/",), max_depth=2)
            )[1]
            is False
        )
        assert store.sites.get_site("pirate").max_depth == 2
        store.sites.save_site(
            SiteConfig(name="partner", start_urls=("http://q/",), authorised=True)
        )
        assert [s.name for s in store.sites.list_sites()] == ["partner", "pirate"]
        assert store.sites.authorised_sites() == {"partner"}
        assert store.sites.delete_site("pirate") and not store.sites.delete_site("pirate")
        with pytest.raises(StoreError):
            store.sites.get_site({"$gt": ""})  # type: ignore[arg-type]


class TestMatchQueries:
    def test_filters_are_typed(self, store: Store) -> None:
        for bad in (
            {"site": {"$ne": "x"}},
            {"work_id": {"$gt": ""}},
            {"status": "deleted"},
            {"since": "yesterday"},
            {"work_id": "not-an-id"},
        ):
            with pytest.raises(StoreError):
                store.matches.match_filter(**bad)

    def test_authorised_site_matches_are_authorised(self, engine: Engine, store: Store) -> None:
        work_id = engine.add_work(sample("tea-history.txt"), title="tea", source="tea.txt")
        store.sites.save_site(
            SiteConfig(name="partner", start_urls=("http://partner/",), authorised=True)
        )
        text = CHROME.format(sample("tea-history.txt"))
        engine.process_page("http://partner/tea", text, site="partner", authorised=True)
        engine.process_page("http://pirate/tea", text, site="pirate")
        statuses = {m["site"]: m["status"] for m in store.matches.list_matches(work_id=work_id)}
        assert statuses == {"partner": "authorised", "pirate": "new"}
        assert [m["site"] for m in store.matches.list_matches(status="authorised")] == ["partner"]
        assert store.matches.list_matches(site="nobody") == []


class TestDailyJobs:
    def test_match_new_works_finds_old_copies_and_pending_pages(
        self, engine: Engine, store: Store
    ) -> None:
        queued: list[str] = []
        ingest = Ingest(engine.store, queued.append)
        copy = ingest.page(
            CrawledPage(
                url="http://p/1", site="p", title="", text=CHROME.format(sample("river-town.txt"))
            )
        )
        engine.process_stored_page(copy.page_id)
        assert engine.store.matches.count() == 0  # no work registered yet
        lost = ingest.page(
            CrawledPage(url="http://p/2", site="p", title="", text="一页从未处理的文字")
        )

        work_id = engine.add_work(sample("river-town.txt"), title="river", source="river.txt")
        works, pages = [], []
        first = jobs.match_new_works(store, works.append, pages.append)
        assert works == [work_id] and pages == [lost.page_id]
        assert first["since"] is None
        for w in works:
            jobs.match_work_against_pages(engine, w)
        matches = store.matches.list_matches()
        assert [(m["url"], str(m["work_id"])) for m in matches] == [("http://p/1", work_id)]

        # the next run only sees works registered since (with a few minutes of overlap)
        works.clear()
        store.state.set_state(jobs.NEW_WORKS_STATE, datetime.now(UTC) + timedelta(hours=1))
        jobs.match_new_works(store, works.append, pages.append)
        assert works == []

    def test_daily_report_counts_one_day(self, engine: Engine, store: Store) -> None:
        engine.add_work(sample("lighthouse.txt"), title="lighthouse", source="l.txt")
        engine.process_page("http://p/1", CHROME.format(sample("lighthouse.txt")), site="p")
        engine.process_page("http://q/1", CHROME.format(sample("lighthouse.txt")), site="q")
        store.failure_log.record_failure("fptrack.process_page", "x", "boom", 8)
        today = datetime.now(UTC).date()
        report = jobs.daily_report(store, today)
        assert report["matches"] == 2
        assert report["matches_by_site"] == {"p": 1, "q": 1}
        assert report["matches_by_status"]["new"] == 2
        assert report["pages_fetched"] == 2 and report["failures"] == 1
        assert engine.store.reports.report(today.isoformat())["matches"] == 2
        assert jobs.daily_report(store, date(2000, 1, 1))["matches"] == 0

    def test_failure_records_are_one_per_task_and_object(self, store: Store) -> None:
        store.failure_log.record_failure("fptrack.process_page", "abc", "first", 1)
        store.failure_log.record_failure("fptrack.process_page", "abc", "second", 8)
        [record] = store.failure_log.recent()
        assert (record["error"], record["attempts"], record["count"]) == ("second", 8, 2)
        store.failure_log.clear_failure("fptrack.process_page", "abc")
        assert store.failure_log.recent() == []

"""The match view's evidence archive: the exchange a match was first found in, downloadable
as WARC, and the word when the page has changed since."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flask.testing import FlaskClient

from admin.context import Context
from matcher.evidence.archive import Exchange, verify
from matcher.pages import CrawledPage
from matcher.worker.ingest import Ingest
from tests.support.web import sample_text, seed_match

URL = "http://pirate.example/book/1.html"
FIRST = datetime(2026, 11, 27, 4, 0, tzinfo=UTC)


def fetched(text: str, when: datetime) -> CrawledPage:
    body = f"<html><body><p>{text}</p></body></html>".encode("gbk", "replace")
    exchange = Exchange(URL, 200, (("Content-Type", "text/html"),), body, when, reason="OK")
    return CrawledPage(url=URL, site="pirate", title="", text=text, exchange=exchange)


def archived_match(ctx: Context, queued: list[str]) -> tuple[Ingest, dict]:
    """A work and a page copying it, fetched with its exchange at :data:`FIRST`, archived
    and matched; the ingest (for later fetches) and the match."""
    text = sample_text()
    ctx.engine.add_work(text, title="茶史", source="tea-history.txt")
    ingest = Ingest(ctx.engine.store, queued.append, archive=ctx.archive)
    ingest.page(fetched("广告\n" + text, FIRST))
    ctx.engine.process_stored_page(queued.pop())
    [match] = ctx.store.matches.find_matches(limit=1, active_only=False)
    return ingest, match


def test_a_match_offers_the_exchange_it_was_found_in(
    web_ctx: Context, as_viewer: FlaskClient
) -> None:
    queued: list[str] = []
    ingest, match = archived_match(web_ctx, queued)
    text, first = sample_text(), FIRST
    kept = match["archive"]
    view = as_viewer.get(f"/matches/{match['_id']}").get_data(as_text=True)
    assert kept["sha256"] in view and "download (WARC)" in view
    assert "changed since" not in view

    download = as_viewer.get(f"/matches/{match['_id']}/archive.warc.gz")
    assert download.status_code == 200 and download.mimetype == "application/warc"
    assert download.headers["X-SHA-256"] == kept["sha256"]
    response, _ = verify(download.data, kept["sha256"])
    assert response.url == URL and "广告".encode("gbk") in response.payload

    ingest.page(fetched("新广告\n" + text, first + timedelta(days=1)))
    web_ctx.engine.process_stored_page(queued.pop())
    [match] = web_ctx.store.matches.find_matches(limit=1, active_only=False)
    assert match["archive"] == kept  # the original, kept
    view = as_viewer.get(f"/matches/{match['_id']}").get_data(as_text=True)
    assert 'id="changed-since"' in view
    again = as_viewer.get(f"/matches/{match['_id']}/archive.warc.gz")
    assert again.data == download.data

    web_ctx.engine.store.page_marks.mark_page_gone(URL, 410, first + timedelta(days=2))
    view = as_viewer.get(f"/matches/{match['_id']}").get_data(as_text=True)
    assert 'id="removed-since"' in view and "HTTP 410" in view


def test_a_match_without_an_archive_says_so(web_ctx: Context, as_viewer: FlaskClient) -> None:
    match, _ = seed_match(web_ctx)
    view = as_viewer.get(f"/matches/{match['_id']}").get_data(as_text=True)
    assert 'id="match-archive">none' in view
    assert as_viewer.get(f"/matches/{match['_id']}/archive.warc.gz").status_code == 404
    assert as_viewer.get("/matches/0123456789abcdef01234567/archive.warc.gz").status_code == 404
    assert as_viewer.get("/matches/not-an-id/archive.warc.gz").status_code == 400


def test_logged_out_users_get_no_archive(web_ctx: Context, client: FlaskClient) -> None:
    match, _ = seed_match(web_ctx)
    response = client.get(f"/matches/{match['_id']}/archive.warc.gz")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


def test_reports_and_notices_bundle_their_evidence(
    web_ctx: Context, as_viewer: FlaskClient
) -> None:
    import hashlib
    import io
    import json
    import zipfile

    from admin.report.takedown import DETAILS_STATE_KEY

    _, match = archived_match(web_ctx, [])
    sha256 = match["archive"]["sha256"]
    web_ctx.store.state.set_state(
        DETAILS_STATE_KEY, {"rights_holder": "星河", "contact": "a@b.example"}
    )
    since = "since=2000-01-01&status=new"
    for path in (
        f"/reports/evidence.zip?{since}",
        f"/reports/takedown/pirate/evidence.zip?{since}&unreviewed=1",
    ):
        response = as_viewer.get(path)
        assert response.status_code == 200 and response.mimetype == "application/zip", path
        bundle = zipfile.ZipFile(io.BytesIO(response.data))
        warc = bundle.read(f"{sha256}.warc.gz")
        assert hashlib.sha256(warc).hexdigest() == sha256
        assert bundle.read("manifest.txt").decode() == f"{sha256}  {sha256}.warc.gz\n"
        [entry] = json.loads(bundle.read("manifest.json"))
        assert (entry["url"], entry["works"], entry["bytes"]) == (URL, ["茶史"], len(warc))
        assert ("notice.txt" in bundle.namelist()) == ("takedown" in path)
    assert verify(warc, sha256)[0].url == URL


def test_a_download_s_match_shows_its_passages_in_every_part(
    web_ctx: Context, as_viewer: FlaskClient
) -> None:
    """A whole-book download stored in parts has one match per work; its view shows the
    passages of each part, marked in the whole download's text."""
    from matcher.pages import part_url

    text = sample_text()
    half = len(text) // 2
    web_ctx.engine.add_work(text, title="茶史", source="tea-history.txt")
    download = "http://pirate.example/down/tea.zip"
    queued: list[str] = []
    ingest = Ingest(web_ctx.engine.store, queued.append)
    second = text[half:] + "\n第二部分的结尾"
    ingest.page(CrawledPage(part_url(download, 2), "pirate", "茶 2", second))
    ingest.page(CrawledPage(download, "pirate", "茶 1", text[:half], parts=2))
    [page_id] = queued
    web_ctx.engine.process_stored_page(page_id, as_task=True)
    [match] = web_ctx.store.matches.find_matches(limit=5, active_only=False)
    assert match["url"] == download and match["parts"] == [1, 2]
    view = as_viewer.get(f"/matches/{match['_id']}").get_data(as_text=True)
    assert "第二部分的结尾" in view  # the second part's text is shown with the first's
    late = max(match["evidence"], key=lambda e: e["page_span"][0])
    assert late["part"] == 2 and late["page_span"][0] > half
    assert f'id="page-{len(match["evidence"])}"' in view  # its passage marked

"""The Reports area over the real engine: the summary, CSV and XLSX exports (no cell a
formula), the printable report, takedown notices per site (the matches a person confirmed;
the unreviewed ones by explicit choice; not exported while placeholders remain) and their
editable template."""

from __future__ import annotations

import csv
import html
import io
import re
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from openpyxl import load_workbook

from admin.context import Context
from admin.report import CSV_FIELDS
from admin.report.takedown import (
    DEFAULT_TAKEDOWN_TEMPLATE,
    DETAILS_STATE_KEY,
    PLACEHOLDERS,
    TEMPLATE_STATE_KEY,
)
from tests.support.web import csrf

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "works"
FORMULA_TITLE = '=HYPERLINK("http://evil.example/","点我")'
FORMULA_SOURCE = "+cmd|' /C calc'!A0"
SCRIPT = "<script>alert('pwned')</script>"
TEMPLATE_URL = "/reports/takedown-template"
READ_PATHS = (
    "/reports/",
    "/reports/export.csv",
    "/reports/export.xlsx",
    "/reports/print",
    "/reports/takedown/pirate",
    "/reports/takedown/pirate/notice.txt",
)
BAD_FILTERS = (
    "since=2024-13-01",
    "until=yesterday",
    "site=bad site",
    "site=$ne",
    "work=not-an-id",
    "min_score=2",
    "status=stolen",
    "until=9999-12-31",
    "since=0001-01-01",
)


def sample(name: str) -> str:
    return (SAMPLES / f"{name}.txt").read_text(encoding="utf-8")


def copy_of(text: str) -> str:
    """A pirate page: site chrome around two thirds of the work, a script before it."""
    return f"书海阁 首页 排行榜\n{SCRIPT}\n{text[: len(text) * 2 // 3]}\n本站小说均来自网络"


class Seeded:
    """Three works and four pirate pages on two sites, matched by the real engine."""

    def __init__(self, ctx: Context) -> None:
        engine = ctx.engine
        self.ctx = ctx
        self.tea = engine.add_work(sample("tea-history"), title="茶史", source="tea-history.txt")
        self.lighthouse = engine.add_work(
            sample("lighthouse"), title="灯塔", source="lighthouse.txt"
        )
        self.river = engine.add_work(
            sample("river-town"), title=FORMULA_TITLE, source=FORMULA_SOURCE
        )
        self.urls = {
            "pirate-tea": "http://pirate.example/tea.html",
            "pirate-lighthouse": "http://pirate.example/lighthouse.html",
            "mirror-tea": "http://mirror.example/tea.html",
            "mirror-river": "http://mirror.example/river.html",
        }
        texts = {"tea": "tea-history", "lighthouse": "lighthouse", "river": "river-town"}
        for key, url in self.urls.items():
            site, work = key.split("-")
            records = engine.process_page(
                url, copy_of(sample(texts[work])), site=site, title=f"{SCRIPT}盗版{work}"
            )
            assert len(records) == 1, f"{url} was not matched once"
        self.matches = {m["url"]: m for m in ctx.store.matches.iter_matches(active_only=False)}
        assert len(self.matches) == 4

    def match(self, key: str) -> dict[str, Any]:
        return self.matches[self.urls[key]]

    def backdate(self, key: str, when: datetime) -> None:
        """As if the page had been found at ``when``."""
        self.ctx.store.db.matches.update_one(
            {"_id": self.match(key)["_id"]}, {"$set": {"first_seen": when, "last_seen": when}}
        )

    def set_status(self, key: str, status: str) -> None:
        assert self.ctx.store.matches.set_status(str(self.match(key)["_id"]), status, "", "test")

    def ready(self, *confirmed: str) -> None:
        """The notices' rights holder and contact set, and the matches ``confirmed`` (keys
        of :attr:`urls`; default all) confirmed by a reviewer."""
        details = {"rights_holder": "星河出版社", "contact": "legal@rights.example"}
        self.ctx.store.state.set_state(DETAILS_STATE_KEY, details)
        for key in confirmed or self.urls:
            self.set_status(key, "confirmed")


@pytest.fixture
def seeded(web_ctx: Context) -> Seeded:
    return Seeded(web_ctx)


def csv_rows(response: Any) -> list[dict[str, str]]:
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_data()
    assert body.startswith(b"\xef\xbb\xbf")
    return list(csv.DictReader(io.StringIO(body.decode("utf-8-sig"))))


def xlsx_rows(response: Any) -> list[list[Any]]:
    assert response.status_code == 200, response.get_data(as_text=True)
    book = load_workbook(io.BytesIO(response.get_data()))
    return [[c.value for c in line] for line in book.active.iter_rows()]


def text(response: Any) -> str:
    return response.get_data(as_text=True)


def save_template(client: FlaskClient, template: str, **fields: str) -> Any:
    token = csrf(client, TEMPLATE_URL)
    data = {"template": template, "rights_holder": "", "contact": "", **fields}
    return client.post(TEMPLATE_URL, data={**data, "csrf_token": token})


class TestAccess:
    def test_logged_out_is_sent_to_login(self, client):
        for path in (*READ_PATHS, TEMPLATE_URL):
            response = client.get(path)
            assert response.status_code == 302, path
            assert response.headers["Location"].startswith("/login"), path

    def test_viewer_reads_and_exports(self, as_viewer, seeded):
        seeded.ready()
        for path in READ_PATHS:
            assert as_viewer.get(path).status_code == 200, path
        assert "Edit the takedown template" not in text(as_viewer.get("/reports/"))

    def test_bad_filter_is_400(self, as_viewer):
        for path in READ_PATHS:
            for args in BAD_FILTERS:
                assert as_viewer.get(f"{path}?{args}").status_code == 400, (path, args)

    def test_bad_site_in_a_takedown_path_is_400(self, as_viewer):
        assert as_viewer.get("/reports/takedown/$where").status_code == 400
        assert as_viewer.get("/reports/takedown/pirate?since=2024-02-30").status_code == 400
        for path in ("", "/notice.txt", "/evidence.zip"):
            response = as_viewer.get(f"/reports/takedown/pirate{path}?unreviewed=maybe")
            assert response.status_code == 400, path
            assert "unreviewed must be 1 or 0" in text(response)


class TestSummary:
    def test_counts_by_site_and_work(self, as_viewer, seeded):
        page = text(as_viewer.get("/reports/"))
        assert "4 match(es) selected." in page
        by_site = page.split('id="report-by-site"')[1].split("</table>")[0]
        assert re.search(r">mirror</a></td><td class=\"num\">2<", by_site)
        assert re.search(r">pirate</a></td><td class=\"num\">2<", by_site)
        assert "/reports/takedown/pirate" in by_site and "/reports/takedown/mirror" in by_site
        by_work = page.split('id="report-by-work"')[1].split("</table>")[0]
        assert re.search(r">茶史</a></td><td class=\"num\">2<", by_work)
        assert "=HYPERLINK(&#34;http://evil.example/&#34;,&#34;点我&#34;)" in by_work

    def test_default_is_the_infringing_statuses(self, as_viewer, seeded):
        seeded.set_status("pirate-tea", "false_positive")
        seeded.set_status("mirror-tea", "authorised")
        seeded.set_status("mirror-river", "takedown_sent")
        assert "2 match(es) selected." in text(as_viewer.get("/reports/"))
        assert "4 match(es) selected." in text(as_viewer.get("/reports/?status=all"))
        assert "1 match(es) selected." in text(as_viewer.get("/reports/?status=authorised"))

    def test_links_carry_the_selection(self, as_viewer, seeded):
        page = text(as_viewer.get("/reports/?site=pirate&since=2024-01-01&status=all"))
        for path in ("export.csv", "export.xlsx", "print"):
            assert re.search(rf'href="/reports/{re.escape(path)}\?[^"]*site=pirate[^"]*"', page), (
                path
            )
        assert 'href="/reports/takedown/pirate?since=2024-01-01&amp;status=all"' in page


class TestExports:
    def test_csv_lists_every_selected_match(self, as_viewer, seeded):
        response = as_viewer.get("/reports/export.csv")
        assert response.headers["Content-Disposition"].startswith("attachment;")
        assert response.mimetype == "text/csv"
        assert response.headers["Content-Type"] == "text/csv; charset=utf-8"
        rows = csv_rows(response)
        assert len(rows) == 4
        assert tuple(rows[0].keys()) == CSV_FIELDS
        assert {r["url"] for r in rows} == set(seeded.urls.values())
        tea = next(r for r in rows if r["url"] == seeded.urls["pirate-tea"])
        assert tea["work"] == "茶史" and tea["site"] == "pirate" and tea["status"] == "new"
        assert float(tea["score"]) > 0.5 and int(tea["passages"]) >= 1

    def test_csv_cells_are_formula_inert(self, as_viewer, seeded):
        rows = csv_rows(as_viewer.get("/reports/export.csv?site=mirror"))
        river = next(r for r in rows if r["url"] == seeded.urls["mirror-river"])
        assert river["work"] == "'" + FORMULA_TITLE
        assert river["work_source"] == "'" + FORMULA_SOURCE

    def test_filters_narrow_the_rows(self, as_viewer, seeded):
        seeded.backdate("pirate-tea", datetime(2024, 1, 15, 8, tzinfo=UTC))
        seeded.backdate("mirror-tea", datetime(2024, 2, 1, 8, tzinfo=UTC))
        seeded.set_status("mirror-river", "false_positive")

        def urls(query: str) -> set[str]:
            return {r["url"] for r in csv_rows(as_viewer.get(f"/reports/export.csv?{query}"))}

        u = seeded.urls
        assert urls("site=pirate") == {u["pirate-tea"], u["pirate-lighthouse"]}
        assert urls(f"work={seeded.tea}") == {u["pirate-tea"], u["mirror-tea"]}
        assert urls("since=2024-01-01&until=2024-01-31") == {u["pirate-tea"]}
        assert urls("since=2024-01-01&until=2024-02-01") == {u["pirate-tea"], u["mirror-tea"]}
        assert urls("site=mirror&since=2024-01-01&until=2024-12-31") == {u["mirror-tea"]}
        assert urls("site=mirror") == {u["mirror-tea"]}
        assert urls("site=mirror&status=all") == {u["mirror-tea"], u["mirror-river"]}
        assert urls("status=false_positive") == {u["mirror-river"]}
        assert urls("site=nobody") == set()

    def test_xlsx_has_the_csv_columns_and_rows(self, as_viewer, seeded):
        response = as_viewer.get("/reports/export.xlsx?site=pirate")
        assert response.headers["Content-Disposition"].startswith("attachment;")
        assert response.headers["Content-Disposition"].endswith('.xlsx"')
        rows = xlsx_rows(response)
        assert tuple(rows[0]) == CSV_FIELDS
        records = [dict(zip(CSV_FIELDS, r, strict=True)) for r in rows[1:]]
        assert {r["url"] for r in records} == {
            seeded.urls["pirate-tea"],
            seeded.urls["pirate-lighthouse"],
        }
        assert {r["work"] for r in records} == {"茶史", "灯塔"}
        assert all(isinstance(r["score"], float) and r["passages"] >= 1 for r in records)

    def test_xlsx_text_is_never_a_formula(self, as_viewer, seeded):
        response = as_viewer.get("/reports/export.xlsx?site=mirror")
        book = load_workbook(io.BytesIO(response.get_data()))
        cells = {c.value: c for line in book.active.iter_rows() for c in line}
        for value in (FORMULA_TITLE, FORMULA_SOURCE):
            assert value in cells, value
            assert cells[value].data_type == "s"
        with zipfile.ZipFile(io.BytesIO(response.get_data())) as archive:
            sheet = archive.read("xl/worksheets/sheet1.xml").decode()
        assert "<f>" not in sheet and "<f " not in sheet

    def test_too_many_rows_is_refused(self, as_viewer, seeded, monkeypatch):
        from admin.report import selection

        monkeypatch.setattr(selection, "MAX_EXPORT_ROWS", 3)
        assert as_viewer.get("/reports/export.csv").status_code == 400
        assert as_viewer.get("/reports/export.xlsx").status_code == 400
        assert as_viewer.get("/reports/export.csv?site=pirate").status_code == 200


class TestPrint:
    def test_printable_report_escapes_page_text(self, as_viewer, seeded):
        response = as_viewer.get("/reports/print?site=pirate")
        assert response.status_code == 200
        page = text(response)
        assert "<script>alert" not in page
        assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in page
        assert seeded.urls["pirate-tea"] in page and seeded.urls["pirate-lighthouse"] in page
        assert seeded.urls["mirror-tea"] not in page
        assert page.count('class="report-match"') == 2
        assert "<mark>" in page

    def test_print_css_hides_the_navigation(self, as_viewer):
        css = text(as_viewer.get("/static/app.css"))
        rules = [line for line in css.splitlines() if line.startswith("@media print")]
        assert any("nav.top" in r for r in rules)
        assert any(".noprint" in r for r in rules)


def notice_of(page: str) -> str:
    return page.split('id="notice">')[1].split("</div>")[0]


class TestTakedown:
    def test_notice_lists_that_sites_matches_only(self, as_viewer, seeded):
        seeded.set_status("pirate-tea", "confirmed")
        seeded.set_status("pirate-lighthouse", "takedown_sent")
        seeded.set_status("mirror-tea", "confirmed")
        notice = notice_of(text(as_viewer.get("/reports/takedown/pirate")))
        assert seeded.urls["pirate-tea"] in notice and seeded.urls["pirate-lighthouse"] in notice
        assert "mirror.example" not in notice
        assert "茶史" in notice and "灯塔" in notice and "HYPERLINK" not in notice
        assert "侵权网址 / Infringing URLs: 2" in notice
        assert datetime.now(UTC).strftime("%Y-%m-%d") in notice
        passage = " ".join(seeded.match("pirate-tea")["evidence"][0]["text"].split())
        assert html.escape(passage[:40]) in notice
        assert "[权利人 / rights holder]" in notice

    def test_unreviewed_matches_are_named_only_by_choice(self, as_viewer, seeded):
        seeded.ready("pirate-tea")
        seeded.set_status("mirror-tea", "false_positive")
        page = text(as_viewer.get("/reports/takedown/pirate"))
        notice = notice_of(page)
        assert seeded.urls["pirate-tea"] in notice
        assert seeded.urls["pirate-lighthouse"] not in notice  # new: no one reviewed it
        assert "Infringing URLs: 1" in notice
        left_out = page.split('id="notice-left-out"')[1].split("</form>")[0]
        assert "1 unreviewed match(es) of pirate are left out" in left_out
        assert 'name="unreviewed" value="1" required' in left_out
        assert 'id="notice-unreviewed"' not in page
        body = text(as_viewer.get("/reports/takedown/pirate/notice.txt"))
        assert seeded.urls["pirate-lighthouse"] not in body

        chosen = text(as_viewer.get("/reports/takedown/pirate?unreviewed=1"))
        notice = notice_of(chosen)
        assert seeded.urls["pirate-tea"] in notice and seeded.urls["pirate-lighthouse"] in notice
        warning = chosen.split('id="notice-unreviewed">')[1].split("</p>")[0]
        assert "names 1 unreviewed match(es)" in warning and "records that choice" in warning
        assert 'href="/reports/takedown/pirate/notice.txt?unreviewed=1"' in chosen
        body = text(as_viewer.get("/reports/takedown/pirate/notice.txt?unreviewed=1"))
        assert seeded.urls["pirate-lighthouse"] in body

        # false positives and authorised copies are never named, whatever is chosen
        for args in ("status=all&unreviewed=1", "status=false_positive&unreviewed=1"):
            notice = notice_of(text(as_viewer.get(f"/reports/takedown/mirror?{args}")))
            assert seeded.urls["mirror-tea"] not in notice, args
        assert seeded.urls["mirror-river"] in notice_of(
            text(as_viewer.get("/reports/takedown/mirror?status=all&unreviewed=1"))
        )

    def test_placeholders_keep_a_notice_from_export(self, as_admin, as_viewer, seeded):
        seeded.set_status("pirate-tea", "confirmed")
        page = text(as_viewer.get("/reports/takedown/pirate"))
        reason = page.split('id="notice-not-ready">')[1].split("</p>")[0]
        assert PLACEHOLDERS["rights_holder"] in reason and PLACEHOLDERS["contact"] in reason
        assert 'id="notice-txt"' not in page and 'id="notice-evidence"' not in page
        for path in ("notice.txt", "evidence.zip"):
            response = as_viewer.get(f"/reports/takedown/pirate/{path}")
            assert response.status_code == 409, path
            assert "not exported: the notice still has the placeholder(s)" in text(response)
        reviewer_page = text(as_admin.get("/reports/takedown/pirate"))
        button = reviewer_page.split('id="notice-send"')[1].split("</form>")[0]
        assert "disabled" in button
        assert (
            save_template(
                as_admin, DEFAULT_TAKEDOWN_TEMPLATE, rights_holder="星河出版社", contact=""
            ).status_code
            == 302
        )
        assert as_viewer.get("/reports/takedown/pirate/notice.txt").status_code == 409
        assert (
            save_template(
                as_admin,
                DEFAULT_TAKEDOWN_TEMPLATE,
                rights_holder="星河出版社",
                contact="legal@x.example",
            ).status_code
            == 302
        )
        response = as_viewer.get("/reports/takedown/pirate/notice.txt")
        assert response.status_code == 200 and "星河出版社" in text(response)
        page = text(as_admin.get("/reports/takedown/pirate"))
        assert 'id="notice-not-ready"' not in page
        assert "disabled" not in page.split('id="notice-send"')[1].split("</form>")[0]

    def test_notice_follows_the_selection(self, as_viewer, seeded):
        seeded.ready()
        seeded.backdate("pirate-tea", datetime(2024, 1, 15, 8, tzinfo=UTC))
        seeded.set_status("pirate-lighthouse", "false_positive")
        notice = text(as_viewer.get("/reports/takedown/pirate?since=2024-01-01&until=2024-01-31"))
        assert seeded.urls["pirate-tea"] in notice and "2024-01-15" in notice
        notice = text(as_viewer.get("/reports/takedown/pirate"))
        assert seeded.urls["pirate-lighthouse"] not in notice
        notice = text(as_viewer.get("/reports/takedown/pirate?status=all"))
        assert seeded.urls["pirate-lighthouse"] not in notice  # a false positive: never named
        notice = text(as_viewer.get("/reports/takedown/pirate?site=mirror"))
        assert "mirror.example" not in notice

    def test_text_download(self, as_viewer, seeded):
        seeded.ready()
        response = as_viewer.get("/reports/takedown/mirror/notice.txt")
        assert response.status_code == 200
        assert response.mimetype == "text/plain"
        assert response.headers["Content-Disposition"].startswith("attachment;")
        body = text(response)
        assert seeded.urls["mirror-tea"] in body and seeded.urls["mirror-river"] in body
        assert "pirate.example" not in body
        assert FORMULA_TITLE in body
        assert "&#34;" not in body and "&lt;" not in body

    def test_a_download_in_parts_is_named_once_by_its_url(self, as_viewer, seeded, web_ctx):
        """A whole-book download is stored as one page per part (``URL#part2`` ...), each
        matched: the notice names the URL the site links, once per work."""
        engine = web_ctx.engine
        download = "http://mirror.example/down/tea.zip"
        for url in (download, download + "#part2"):
            records = engine.process_page(url, copy_of(sample("tea-history")), site="mirror")
            assert len(records) == 1
        seeded.ready("mirror-tea")
        body = text(as_viewer.get("/reports/takedown/mirror/notice.txt?unreviewed=1"))
        assert body.count(download) == 1 and "#part2" not in body
        assert seeded.urls["mirror-tea"] in body  # other pages of the same work as before

    def test_notice_escapes_hostile_values(self, as_viewer, seeded, web_ctx):
        seeded.set_status("pirate-tea", "confirmed")
        hostile = "http://pirate.example/<script>alert(1)</script>"
        web_ctx.store.db.matches.update_one(
            {"_id": seeded.match("pirate-tea")["_id"]},
            {"$set": {"url": hostile, "evidence.0.text": "<img src=x onerror=alert(1)>"}},
        )
        page = text(as_viewer.get("/reports/takedown/pirate"))
        assert "<script>alert(1)" not in page and "<img src=x" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "&lt;img src=x onerror=alert(1)&gt;" in page


SANDBOX_BOUNDS = ("over 1,000,000", "more than 256 MB of memory", "took more than 5 s to render")
"""The reasons a bomb is refused with, whichever bound of the render's sandbox it meets first
(on a loaded machine, the time one can come before the size one)."""


class TestTemplate:
    def test_admin_edits_the_template(self, as_admin, as_viewer, seeded, web_ctx):
        seeded.set_status("pirate-tea", "confirmed")
        assert DEFAULT_TAKEDOWN_TEMPLATE.split("\n")[0] in text(as_admin.get(TEMPLATE_URL))
        template = (
            "Dear {{ site }}, {{ rights_holder }} ({{ contact }}) asks you to remove:\n"
            "{% for item in items %}- {{ item.url }} [{{ item.work }}]\n{% endfor %}"
        )
        response = save_template(
            as_admin, template, rights_holder="星河出版社", contact="legal@example.com"
        )
        assert response.status_code == 302
        assert web_ctx.store.state.get_state(TEMPLATE_STATE_KEY) == template
        body = text(as_viewer.get("/reports/takedown/pirate/notice.txt"))
        assert body.startswith("Dear pirate, 星河出版社 (legal@example.com) asks you to remove:")
        assert f"- {seeded.urls['pirate-tea']} [茶史]" in body
        page = text(as_viewer.get("/reports/takedown/pirate"))
        assert "Dear pirate" in page and "星河出版社" in page

    def test_reset_restores_the_default(self, as_admin, web_ctx):
        assert save_template(as_admin, "short {{ site }}").status_code == 302
        token = csrf(as_admin, TEMPLATE_URL)
        response = as_admin.post(TEMPLATE_URL, data={"reset": "1", "csrf_token": token})
        assert response.status_code == 302
        assert "侵权通知" in text(as_admin.get(TEMPLATE_URL))

    def test_reviewer_and_viewer_may_not_edit(self, as_reviewer, as_viewer, web_ctx):
        for client in (as_reviewer, as_viewer):
            assert client.get(TEMPLATE_URL).status_code == 403
            token = csrf(client, "/reports/")
            response = client.post(TEMPLATE_URL, data={"template": "x", "csrf_token": token})
            assert response.status_code == 403
        assert web_ctx.store.state.get_state(TEMPLATE_STATE_KEY) is None

    def test_missing_csrf_is_400(self, as_admin, web_ctx):
        response = as_admin.post(TEMPLATE_URL, data={"template": "no token {{ site }}"})
        assert response.status_code == 400
        assert web_ctx.store.state.get_state(TEMPLATE_STATE_KEY) is None

    def test_broken_template_is_400_and_the_old_one_stays(self, as_admin, web_ctx):
        assert save_template(as_admin, "kept {{ site }}").status_code == 302
        for bad in (
            "{% for item in items %}no end",
            "{{ site ",
            "{{ unknown_variable }}",
            "{{ item.url }}",
            "{{ 1 / 0 }}",
            "{% include 'base.html' %}",
        ):
            response = save_template(as_admin, bad)
            assert response.status_code == 400, bad
            assert "the previous one is kept" in text(response)
            assert web_ctx.store.state.get_state(TEMPLATE_STATE_KEY) == "kept {{ site }}"
        assert "kept {{ site }}" in text(as_admin.get(TEMPLATE_URL))

    def test_code_access_is_refused(self, as_admin, web_ctx):
        for attack in (
            "{{ ''.__class__.__mro__ }}",
            "{{ site.__class__.__mro__[1].__subclasses__() }}",
            "{{ cycler.__init__.__globals__.os }}",
            "{{ '{0.__class__}'.format(site) }}",
            "{{ items.append(1) }}",
            "{{ range(10**9) | list }}",
        ):
            response = save_template(as_admin, attack)
            assert response.status_code == 400, attack
            assert "unsafe" in text(response) or "Range too big" in text(response), attack
            assert "&lt;class" not in text(response) and "<class" not in text(response)
            assert web_ctx.store.state.get_state(TEMPLATE_STATE_KEY) is None

    def test_templates_that_would_take_memory_or_time_are_refused(self, as_admin, web_ctx):
        for bomb in (
            "{{ 'ab' * 200000000 }}",
            "{{ 200000000 * 'ab' }}",
            "{{ 'x'.center(400000000) }}",
            "{{ 2 ** 100000 }}",
            "{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}",  # 10 MB of output
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        ):
            response = save_template(as_admin, bomb)
            assert response.status_code == 400, bomb
            assert "the previous one is kept" in text(response)
            assert web_ctx.store.state.get_state(TEMPLATE_STATE_KEY) is None
        assert as_admin.get("/healthz").status_code == 200

    # Each of these once built 512 million characters, 1.3 GB in the render's process.
    SIZE_BOMBS = (
        "{% set a = 'xxxxxxxx' %}" + "{% set a = a ~ a %}" * 26 + "{{ a | length }}",
        "{{ '%0999999999d' | format(1) }}",
        "{{ '%0999999999d' % 1 }}",
        "{{ ('a' * 1000) | replace('a', 'b' * 1000000) }}",
        "{{ ('a' * 1000).replace('a', 'b' * 1000000) }}",
        "{% set x = 'a' * 1000000 %}{{ ([x] * 1000) | join }}",
        "{% set x = 'a' * 1000000 %}{{ ''.join([x] * 1000) }}",
        "{{ ('x\n' * 100000) | indent(10000) }}",
        "{{ '{:>999999999}'.format(1) }}",
    )

    def test_templates_that_multiply_size_are_refused_with_the_reason(self, as_admin, web_ctx):
        for bomb in self.SIZE_BOMBS:
            response = save_template(as_admin, bomb)
            assert response.status_code == 400, bomb
            reason = text(response)
            assert any(bound in reason for bound in SANDBOX_BOUNDS), bomb
            assert web_ctx.store.state.get_state(TEMPLATE_STATE_KEY) is None

    def test_a_stored_size_bomb_is_a_500_with_the_reason(self, as_viewer, seeded, web_ctx):
        for bomb in self.SIZE_BOMBS[:2]:
            web_ctx.store.state.set_state(TEMPLATE_STATE_KEY, bomb)
            response = as_viewer.get("/reports/takedown/pirate/notice.txt")
            assert response.status_code == 500, bomb
            reason = text(response)
            assert any(bound in reason for bound in SANDBOX_BOUNDS), bomb

    def test_size_filters_still_work_within_the_limits(self, as_admin, as_viewer, seeded):
        seeded.ready()
        source = (
            "{{ items | map(attribute='url') | join(', ') }}|{{ '%05d' | format(count) }}|"
            "{{ site | center(12) }}|{{ 'a-b' | replace('-', '+') }}|{{ 'x' | indent(2) }}"
        )
        assert save_template(as_admin, source).status_code == 302
        notice = text(as_viewer.get("/reports/takedown/pirate/notice.txt"))
        urls, count, centred, replaced, indented = notice.split("|")
        assert urls.startswith("http") and count.isdigit() and len(count) == 5
        assert centred.strip() == "pirate" and len(centred) == 12
        assert (replaced, indented) == ("a+b", "x")

    def test_page_text_cannot_be_unescaped(self, as_admin, web_ctx):
        for unescape in (
            "{% for item in items %}{{ item.url | safe }}{% endfor %}",
            "{% autoescape false %}{% for item in items %}{{ item.url }}{% endfor %}"
            "{% endautoescape %}",
            "{% filter safe %}{{ site }}{% endfilter %}",
        ):
            assert save_template(as_admin, unescape).status_code == 400, unescape
            assert web_ctx.store.state.get_state(TEMPLATE_STATE_KEY) is None

    def test_a_stored_template_is_still_sandboxed(self, as_viewer, seeded, web_ctx):
        seeded.ready()
        web_ctx.store.state.set_state(TEMPLATE_STATE_KEY, "{{ ''.__class__.__mro__ }}")
        response = as_viewer.get("/reports/takedown/pirate")
        assert response.status_code == 500
        assert "takedown template cannot be used" in text(response)
        assert "&lt;class" not in text(response) and "<class" not in text(response)
        web_ctx.store.state.set_state(TEMPLATE_STATE_KEY, "{{ items[0].url | safe }}")
        assert as_viewer.get("/reports/takedown/pirate/notice.txt").status_code == 500

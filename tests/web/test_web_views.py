"""Every route of the admin platform over HTTP, and who may do what."""

from __future__ import annotations

import io
import re
import zipfile
from datetime import timedelta

from flask import Flask
from flask.testing import FlaskClient

from admin.context import Context
from admin.services.dispatch import InlineDispatch
from matcher.store import now, tallies
from tests.support.web import post, sample_text, seed_match

XSS = '<script>window.__xss=1</script><img src=x onerror="alert(1)">'


def work_titled(ctx: Context, title: str) -> dict:
    """The stored work whose title is ``title`` (one only)."""
    [found] = [w for w in ctx.store.works.find_works(title) if w["title"] == title]
    return ctx.engine.store.works.get_work(str(found["_id"]))


def _text(response) -> str:
    return response.get_data(as_text=True)


# -- permissions -----------------------------------------------------------------------


def test_viewer_reads_but_changes_nothing(web_ctx: Context, as_viewer: FlaskClient) -> None:
    match, work_id = seed_match(web_ctx)
    mid = str(match["_id"])
    for path in ["/", "/matches/", f"/matches/{mid}", "/works/", f"/works/{work_id}", "/sites/"]:
        assert as_viewer.get(path).status_code == 200, path
    page = _text(as_viewer.get(f"/matches/{mid}"))
    assert 'id="status-form"' not in page
    forbidden = [
        (f"/matches/{mid}/status", {"status": "confirmed"}),
        ("/matches/bulk", {"new_status": "confirmed", "ids": mid}),
        (f"/works/{work_id}/remove", {}),
        ("/sites/new", {"name": "x", "start_urls": "http://x.example/"}),
        ("/query/", {"url": "http://127.0.0.1:1/"}),
    ]
    for path, data in forbidden:
        assert post(as_viewer, path, data).status_code == 403, path
    assert as_viewer.get("/sites/new").status_code == 403
    assert web_ctx.store.matches.match(match_id=str(match["_id"]))["status"] == "new"
    assert web_ctx.engine.store.count("works") == 1


def test_reviewer_reviews_but_does_not_administer(
    web_ctx: Context, as_reviewer: FlaskClient
) -> None:
    match, work_id = seed_match(web_ctx)
    mid = str(match["_id"])
    ok = post(as_reviewer, f"/matches/{mid}/status", {"status": "confirmed", "note": "copy"})
    assert ok.status_code == 302
    stored = web_ctx.store.matches.match(match_id=mid)
    assert (stored["status"], stored["note"], stored["reviewed_by"]) == (
        "confirmed",
        "copy",
        "rita",
    )
    assert post(as_reviewer, f"/works/{work_id}/remove").status_code == 403
    assert as_reviewer.get("/sites/new").status_code == 403


# -- dashboard -------------------------------------------------------------------------


def test_dashboard_shows_totals_and_charts_from_the_tallies(
    web_ctx: Context, as_viewer: FlaskClient
) -> None:
    seed_match(web_ctx)
    seed_match(web_ctx, "http://other.example/2", site="other")
    page = _text(as_viewer.get("/"))
    assert re.search(r'id="total-works">1<', page)
    assert re.search(r'id="total-pages">2<', page)
    assert re.search(r'id="total-infringing">2<', page)
    assert page.count("<svg") >= 4 and "<script" not in page.split("</head>")[1]
    assert "pirate" in page and "茶史" in page


def test_dashboard_escapes_site_and_work_names(web_ctx: Context, as_viewer: FlaskClient) -> None:
    text = sample_text()
    web_ctx.engine.add_work(text, title=XSS, source="x.txt")
    web_ctx.engine.process_page("http://p.example/1", text, site="evil")
    page = _text(as_viewer.get("/"))
    assert "<script>window.__xss" not in page and "&lt;script&gt;window.__xss" in page


# -- matches ---------------------------------------------------------------------------


def test_match_list_filters_and_rejects_operators(web_ctx: Context, as_viewer: FlaskClient) -> None:
    seed_match(web_ctx)
    seed_match(web_ctx, "http://other.example/2", site="other")
    both = _text(as_viewer.get("/matches/"))
    assert "pirate.example" in both and "other.example" in both
    one = _text(as_viewer.get("/matches/?site=other"))
    assert "other.example" in one and "pirate.example/1" not in one
    assert "other.example" not in _text(as_viewer.get("/matches/?status=confirmed"))
    assert "other.example" not in _text(as_viewer.get("/matches/?min_score=1"))
    for bad in [
        "site[$ne]=x&site=$ne",
        "status=%7B%22%24ne%22%3A1%7D",
        "work=%24where",
        "since=yesterday",
        "min_score=2",
        "min_score=nan",
        "after=123-zzz",
    ]:
        assert as_viewer.get(f"/matches/?{bad}").status_code == 400, bad


def test_match_list_pages_by_keyset(web_ctx: Context, as_viewer: FlaskClient) -> None:
    from admin import filters

    text = sample_text()
    web_ctx.engine.add_work(text, title="茶史", source="t.txt")
    for i in range(filters.PAGE_SIZE + 5):
        web_ctx.engine.process_page(f"http://p.example/{i:03d}", text, site="pirate")
    first = _text(as_viewer.get("/matches/"))
    rows = re.findall(r"http://p\.example/(\d+)</a>", first)
    assert len(rows) == filters.PAGE_SIZE
    after = re.search(r'href="(/matches/\?after=[^"]+)" id="next-page"', first).group(1)
    second = re.findall(
        r"http://p\.example/(\d+)</a>", _text(as_viewer.get(after.replace("&amp;", "&")))
    )
    assert len(second) == 5 and not set(rows) & set(second)


def test_match_view_shows_evidence_side_by_side_escaped(
    web_ctx: Context, as_viewer: FlaskClient
) -> None:
    text = sample_text()
    web_ctx.engine.add_work(text, title="茶史", source="t.txt")
    web_ctx.engine.process_page("http://p.example/x", XSS + "\n" + text, site="pirate")
    [match] = web_ctx.store.matches.find_matches(limit=1, active_only=False)
    page = _text(as_viewer.get(f"/matches/{match['_id']}"))
    assert 'id="work-text"' in page and 'id="page-text"' in page
    assert page.count('<mark id="work-') == page.count('<mark id="page-') > 0
    assert "<script>window.__xss" not in page and "&lt;script&gt;window.__xss=1" in page
    assert 'onerror="alert' not in page
    # every score on 0-1 and said in words: no raw distance or unbounded similarity
    lines = re.findall(
        r'<tr class="match-score-line"><th title="(\w+)">([^<]+)</th><td>([\d.]+)', page
    )
    shown = {key: (name, float(value)) for key, name, value in lines}
    assert set(shown) == set(match["scores"])
    assert all(0.0 <= value <= 1.0 for _, value in shown.values()), shown
    distance = match["scores"]["simhash_distance"]
    assert shown["simhash_distance"] == ("Simhash similarity", round(1 - distance / 64, 3))
    assert f"{distance:.0f} of 64 simhash bits differ" in page
    assert shown["microblog_sim"][1] == round(match["scores"]["microblog_sim"] / 5, 3)
    assert ">simhash_distance<" not in page and ">microblog_sim<" not in page
    assert 'id="match-status">awaiting review<' in page
    assert as_viewer.get("/matches/0123456789abcdef01234567").status_code == 404
    assert as_viewer.get("/matches/not-an-id").status_code == 400


def test_match_view_names_the_chapter_the_parts_and_the_works_not_recorded(
    web_ctx: Context, as_viewer: FlaskClient
) -> None:
    """A chapter of a segmented novel, split over two pages, sharing a preface (hostile
    titles) with a sibling work: the view says which chapter, which parts, and why the
    sibling is not recorded."""
    text = sample_text()
    preface = sample_text("lighthouse")[:500]
    chapters = [
        f"第{n}章 <b>章{n}</b>\n" + sample_text(name)
        for n, name in enumerate(
            ("river-town", "chef-diary", "star-voyage", "tea-brewing", "sanguo-01"), 1
        )
    ]
    novel = preface + "\n" + "\n".join(chapters * 3) + "\n第99章 茶\n" + text
    web_ctx.engine.add_work(novel, title="<i>长篇</i>", source="novel.txt")
    web_ctx.engine.add_work(preface + "\n" + sample_text("tea-brewing")[:300], title="<s>序</s>")
    urls = ["http://p.example/99.html", "http://p.example/99_2.html"]
    half = len(text) // 2
    web_ctx.engine.process_page(urls[1], text[half:], title="茶（2/2）", prev_url=urls[0])
    web_ctx.engine.process_page(urls[0], preface + text[:half], title="茶（1/2）", next_url=urls[1])
    first_part = web_ctx.engine.store.pages.page_by_url(urls[0])
    [match] = web_ctx.engine.store.matches.matches_for("page_id", str(first_part["_id"]))
    page = _text(as_viewer.get(f"/matches/{match['_id']}"))
    assert 'id="match-segments"' in page and "第99章 茶" in page
    split = page[page.index('id="match-split"') :]
    assert urls[0] in split[:400] and urls[1] in split[:600]
    considered = page[page.index('id="considered"') : page.index("Matching passages")]
    assert "&lt;s&gt;序&lt;/s&gt;" in considered and "explained better by" in considered
    assert "<s>" not in considered
    assert "&lt;i&gt;长篇&lt;/i&gt;" in page and "<i>长篇" not in page


def test_match_view_names_the_other_editions_that_explain_the_page(
    web_ctx: Context, as_viewer: FlaskClient
) -> None:
    """Three editions of a work (a hostile title among them), a page copying the second: its
    match view names the other two as editions that explain the page, escaped and linked,
    and the page's other works considered say they are editions of the one recorded."""
    text = sample_text("lighthouse")
    lines = text.split("\n")
    long = [i for i, line in enumerate(lines) if len(line) > 40]
    texts = []
    for shuffled in ((), long[2:5], long[8:11]):
        edition = list(lines)
        for i in shuffled:
            edition[i] = edition[i][::-1]
        texts.append("\n".join(edition))
    titles = ["灯塔", "灯塔（修订版）", "<b>灯塔</b>三版"]
    ids = [
        web_ctx.engine.add_work(t, title=title, source=f"e{n}.txt")
        for n, (t, title) in enumerate(zip(texts, titles, strict=True))
    ]
    [record] = web_ctx.engine.process_page("http://p.example/2.html", texts[1], site="p")
    assert str(record["work_id"]) == ids[1]
    page = as_viewer.get(f"/matches/{record['_id']}").get_data(as_text=True)
    shown = page[page.index('id="match-siblings"') :].split("</tr>")[0]
    assert f"/works/{ids[0]}" in shown and f"/works/{ids[2]}" in shown
    assert "&lt;b&gt;灯塔&lt;/b&gt;三版" in shown and "<b>灯塔" not in shown
    assert "(a tie" not in shown
    considered = page[page.index('id="considered"') : page.index("Matching passages")]
    reason = "an edition of &#39;灯塔（修订版）&#39;, which explains the page better"
    assert considered.count(reason) == 2
    listed = [str(s["work_id"]) for s in record["siblings"]]
    assert sorted(listed) == sorted([ids[0], ids[2]])


def test_bulk_review_of_ticked_and_filtered_matches(
    web_ctx: Context, as_reviewer: FlaskClient
) -> None:
    a, _ = seed_match(web_ctx)
    seed_match(web_ctx, "http://pirate.example/2")
    seed_match(web_ctx, "http://other.example/3", site="other")
    ticked = post(as_reviewer, "/matches/bulk", {"new_status": "confirmed", "ids": str(a["_id"])})
    assert ticked.status_code == 302
    matches = web_ctx.engine.store.matches
    assert matches.count(status="confirmed") == 1
    filtered = post(
        as_reviewer,
        "/matches/bulk?site=pirate",
        {"new_status": "takedown_sent", "scope": "filtered"},
    )
    assert filtered.status_code == 302
    assert matches.count(site="pirate", status="takedown_sent") == 2
    assert matches.count(site="other", status="new") == 1
    total = web_ctx.store.dashboard.tally_total()
    assert tallies.counts(total)["takedown_sent"] == 2 and tallies.counts(total)["new"] == 1
    assert post(as_reviewer, "/matches/bulk", {"new_status": "gone"}).status_code == 400
    assert (
        post(as_reviewer, "/matches/bulk", {"new_status": "new", "ids": "nope"}).status_code == 400
    )


# -- works -----------------------------------------------------------------------------


def test_upload_many_works_including_a_zip(web_ctx: Context, as_admin: FlaskClient) -> None:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("河城.txt", sample_text("river-town"))
        z.writestr("灯塔.md", sample_text("lighthouse"))
    files = [
        (io.BytesIO(sample_text("chef-diary").encode("gb18030")), "chef.txt"),
        (archive.getvalue() and io.BytesIO(archive.getvalue()), "more.zip"),
        (io.BytesIO(b"\x00\x01\x02binary"), "bad.txt"),
    ]
    response = post(
        as_admin, "/works/upload", {"files": files}, headers={"Accept": "application/json"}
    )
    body = response.get_json()
    assert response.status_code == 200, body
    assert (
        len(body["added"]) == 3 and len(body["problems"]) == 1 and "bad.txt" in body["problems"][0]
    )
    titles = {w["title"] for w in web_ctx.store.works.list_works()}
    assert titles == {"chef", "河城", "灯塔"}
    listing = _text(as_admin.get("/works/?q=河"))
    assert "河城" in listing and "灯塔" not in listing
    assert "灯塔" not in _text(as_admin.get("/works/?q=.*"))  # literal search, not a regex


def test_a_work_uploaded_twice_is_shown_as_the_same_text(
    web_ctx: Context, as_admin: FlaskClient
) -> None:
    text = sample_text("lighthouse").encode()
    for name in ("灯塔.txt", "灯塔副本.txt"):
        response = post(
            as_admin,
            "/works/upload",
            {"files": [(io.BytesIO(text), name)]},
            headers={"Accept": "application/json"},
        )
    body = response.get_json()
    assert len(body["added"]) == 1 and "same text as work" in body["problems"][0]
    first, twin = work_titled(web_ctx, "灯塔"), work_titled(web_ctx, "灯塔副本")
    assert twin["same_text_as"] == first["_id"]
    assert "same text as an earlier work" in _text(as_admin.get("/works/"))
    detail = _text(as_admin.get(f"/works/{twin['_id']}"))
    assert 'id="same-text-as"' in detail and f"/works/{first['_id']}" in detail
    assert "灯塔副本" in _text(as_admin.get(f"/works/{first['_id']}"))


def test_near_identical_uploads_are_shown_as_one_group(
    web_ctx: Context, as_admin: FlaskClient
) -> None:
    """Three editions a line apart: the later two are near twins of the first, said so in
    the works list, in their view and in the first's (escaped, like every title); each is
    indexed as an edition, so a page copying one is a match naming the others as a tie."""
    text = sample_text("lighthouse")
    middle = len(text) // 2
    editions = {
        "灯塔.txt": text + "\n完\n",
        "<b>第一版.txt": "第一版\n" + text,
        "灯塔误.txt": text[:middle] + "错" + text[middle + 1 :],
    }
    for name, body in editions.items():
        response = post(
            as_admin,
            "/works/upload",
            {"files": [(io.BytesIO(body.encode()), name)]},
            headers={"Accept": "application/json"},
        )
        assert response.status_code < 400
    assert "nearly the same text as work" in response.get_json()["problems"][0]
    first = work_titled(web_ctx, "灯塔")
    near = [w for w in web_ctx.engine.store.twins.twins(first["_id"]) if w.get("near_twin")]
    assert {w["title"] for w in near} == {"<b>第一版", "灯塔误"}
    listing = as_admin.get("/works/").get_data(as_text=True)
    assert listing.count("nearly the same text as an earlier work") == 2
    assert "&lt;b&gt;第一版" in listing and "<b>第一版" not in listing
    detail = _text(as_admin.get(f"/works/{near[0]['_id']}"))
    assert "Nearly the same text as" in detail and f"/works/{first['_id']}" in detail
    assert "an edition of this one, both matched" in detail
    head = as_admin.get(f"/works/{first['_id']}").get_data(as_text=True)
    assert head.count("(nearly the same text)") == 2 and "&lt;b&gt;第一版" in head
    # A page copying the typo edition is one match, under an edition of the group, naming
    # the other two as a tie (no twins: they are indexed, editions like any other).
    [record] = web_ctx.engine.process_page(
        "http://pirate.example/near", editions["灯塔误.txt"], site="pirate"
    )
    group = {first["_id"], *(w["_id"] for w in near)}
    assert record["work_id"] in group
    assert {s["work_id"] for s in record["siblings"] if s["tie"]} == group - {record["work_id"]}
    shown = as_admin.get(f"/matches/{record['_id']}").get_data(as_text=True)
    assert 'id="match-twins"' not in shown and 'id="match-siblings"' in shown
    assert shown.count("(a tie: explains the page as well)") == 2


def test_an_upload_with_a_file_name_that_is_not_utf8_says_so(
    web_ctx: Context, as_admin: FlaskClient
) -> None:
    from tests.support.web import csrf

    token = csrf(as_admin, "/works/")
    name = "灯塔.txt".encode("gbk")
    body = (
        b'--B\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n'
        + token.encode()
        + b'\r\n--B\r\nContent-Disposition: form-data; name="files"; filename="'
        + name
        + b'"\r\nContent-Type: text/plain\r\n\r\n'
        + sample_text("lighthouse").encode()
        + b"\r\n--B--\r\n"
    )
    response = as_admin.post(
        "/works/upload", data=body, content_type="multipart/form-data; boundary=B"
    )
    assert response.status_code == 400
    assert "file name not UTF-8" in _text(response) and "expired" not in _text(response)
    assert web_ctx.engine.store.count("works") == 0


def test_upload_matches_the_new_work_against_pages_already_crawled(
    web_ctx: Context, as_admin: FlaskClient, dispatch: InlineDispatch
) -> None:
    text = sample_text()
    web_ctx.engine.process_page("http://early.example/1", text, site="early")
    assert web_ctx.engine.store.matches.count() == 0
    post(as_admin, "/works/upload", {"files": [(io.BytesIO(text.encode()), "茶.txt")]})
    assert web_ctx.engine.store.matches.count(site="early") == 1


def test_remove_a_work_and_its_index_entries(web_ctx: Context, as_admin: FlaskClient) -> None:
    _, work_id = seed_match(web_ctx)
    detail = _text(as_admin.get(f"/works/{work_id}"))
    assert "pirate.example" in detail
    assert post(as_admin, f"/works/{work_id}/remove").status_code == 302
    assert web_ctx.engine.store.count("works") == 0
    assert web_ctx.engine.match_text(sample_text()) == []
    assert post(as_admin, f"/works/{work_id}/remove").status_code == 404


# -- sites -----------------------------------------------------------------------------


def test_add_edit_authorise_and_remove_a_site(web_ctx: Context, as_admin: FlaskClient) -> None:
    form = {
        "name": "pirate",
        "start_urls": "http://pirate.example/\nhttp://pirate.example/list",
        "max_depth": "3",
        "max_pages": "100",
        "schedule": "daily@04:30",
        "obey_robots": "on",
        "join_next_pages": "on",
    }
    assert post(as_admin, "/sites/new", form).status_code == 302
    site = web_ctx.store.sites.get_site("pirate")
    assert site.start_urls == ("http://pirate.example/", "http://pirate.example/list")
    assert (site.max_depth, site.schedule, site.authorised) == (3, "daily@04:30", False)
    assert not site.render and 'name="render" >' in _text(as_admin.get("/sites/pirate/edit"))
    assert post(as_admin, "/sites/new", form).status_code == 400  # exists
    bad = post(as_admin, "/sites/new", {**form, "name": "x y", "schedule": "sometimes"})
    assert bad.status_code == 400 and 'id="form-error"' in _text(bad)

    match, _ = seed_match(web_ctx)
    edit = post(as_admin, "/sites/pirate/edit", {**form, "authorised": "on", "render": "on"})
    assert edit.status_code == 302
    assert (
        web_ctx.store.sites.get_site("pirate").authorised
        and web_ctx.store.sites.get_site("pirate").render
    )
    assert 'name="render" checked>' in _text(as_admin.get("/sites/pirate/edit"))
    assert web_ctx.store.matches.match(match_id=str(match["_id"]))["status"] == "authorised"
    config = _text(as_admin.get("/sites/pirate")).split('id="site-config"')[1].split("</table>")[0]
    assert "daily@04:30" in config
    assert '<th title="max_pages">Maximum pages per crawl</th><td>100</td>' in config
    assert '<th title="deadline">Crawl deadline</th><td>none</td>' in config  # 0: no limit
    assert '<th title="obey_robots">Obey robots.txt</th><td>yes</td>' in config
    web_ctx.store.crawls.record_crawl(
        "run-robots", "pirate", outcome="finished",
        stats={"robotstxt/forbidden": 3, "response_received_count": 1},
    )  # fmt: skip
    assert "robots.txt forbade 3 request(s): nothing crawled" in _text(
        as_admin.get("/sites/pirate")
    )
    web_ctx.store.crawls.record_crawl(
        "run-quick", "pirate", kind="incremental", outcome="finished", started_at=now(),
        stats={"fptrack/incremental/new": 2, "fptrack/incremental/unchanged": 5,
               "fptrack/errors/TimeoutError": 3},
    )  # fmt: skip
    assert "finished (incremental: 2 new, 0 changed, 5 unchanged)" in _text(
        as_admin.get("/sites/pirate")
    )
    quick = post(as_admin, "/sites/pirate/edit", {**form, "recrawl": "every 2m"})
    assert quick.status_code == 302 and web_ctx.store.sites.get_site("pirate").recrawl == "every 2m"
    listing = _text(as_admin.get("/sites/"))  # the last crawl's errors are summed
    assert "daily@04:30; incremental every 2m" in listing and '<td class="num">3</td>' in listing
    typo = "http://x.example/<b>nosuch</b>"
    web_ctx.store.crawls.record_crawl(
        "run-typo", "pirate", outcome="failed", started_at=now() + timedelta(seconds=1),
        error=f"start URL {typo}: answered 404 Not Found",
        stats={"fptrack/http_status/404": 1, "fptrack/start_failed": 1,
               "robotstxt/forbidden": 30,
               "fptrack/not_crawled_urls": [
                   {"reason": "http_404", "url": typo, "why": "answered 404 Not Found"},
                   {"reason": "robots", "url": "http://x.example/a",
                    "why": "robots.txt forbids fptrack to crawl it"}]},
    )  # fmt: skip
    listing = _text(as_admin.get("/sites/"))  # a failed crawl says why, escaped
    assert 'failed: <span class="crawl-error">start URL http://x.example/&lt;b&gt;nosuch' in (
        listing
    )
    assert "&lt;/b&gt;: answered 404 Not Found" in listing and "<b>nosuch" not in listing
    assert "not crawled: answered 404 Not Found: 1" in _text(as_admin.get("/sites/pirate"))
    detail = _text(as_admin.get("/sites/pirate"))
    # the pages not crawled, named with the reason in words, escaped; the others counted
    assert (
        "<li>answered 404 Not Found: <code>http://x.example/&lt;b&gt;nosuch&lt;/b&gt;</code>"
        in (detail)
    )
    assert "<li>forbidden by robots.txt: <code>http://x.example/a</code> (robots.txt forbids" in (
        detail
    )
    assert "<li>forbidden by robots.txt: 29 more</li>" in detail and "<b>nosuch" not in detail
    web_ctx.store.crawls.record_crawl(
        "run-down", "pirate", outcome="failed", started_at=now() + timedelta(seconds=2),
        error="start URL http://pirate.example/: no answer (DownloadConnectionRefusedError: "
        "Connection was refused by other side: 111: Connection refused.)",
        stats={"fptrack/errors/DownloadConnectionRefusedError": 1, "fptrack/start_failed": 1},
    )  # fmt: skip
    for page in (_text(as_admin.get("/sites/")), _text(as_admin.get("/sites/pirate"))):
        # the crawler's exception class names are said in words
        assert "start URL http://pirate.example/: no answer (the connection was refused)" in page
        assert "ConnectionRefused" not in page and "111:" not in page
    assert "not crawled: no answer: the connection was refused: 1" in _text(
        as_admin.get("/sites/pirate")
    )
    assert post(as_admin, "/sites/pirate/remove").status_code == 302
    assert web_ctx.store.sites.get_site("pirate") is None
    assert as_admin.get("/sites/pirate").status_code == 404


def test_a_failed_crawl_is_acknowledged_where_it_is_shown(
    web_ctx: Context, as_admin: FlaskClient, as_reviewer: FlaskClient, as_viewer: FlaskClient
) -> None:
    """A failed crawl, which ``fptrack check`` reports until it is seen to, has an
    Acknowledge button on its site's page (reviewers); once pressed the page says who and
    when, and the check no longer reports it. A failure that a later crawl of the site
    followed with success needs no acknowledgement."""
    from admin.health import check_crawls

    form = {"name": "pirate", "start_urls": "http://pirate.example/", "schedule": "never"}
    assert post(as_admin, "/sites/new", form).status_code == 302
    store = web_ctx.store
    store.crawls.record_crawl(
        "run-ok", "pirate", outcome="finished", started_at=now(), finished_at=now()
    )
    store.crawls.record_crawl(
        "run-typo", "pirate", outcome="failed", started_at=now(), finished_at=now(),
        error="start URL http://pirate.example/: answered 404 Not Found",
    )  # fmt: skip
    assert not check_crawls(web_ctx).ok
    ack = "/sites/pirate/crawls/run-typo/acknowledge"
    assert f'action="{ack}"' in _text(as_reviewer.get("/sites/pirate"))
    assert f'action="{ack}"' not in _text(as_viewer.get("/sites/pirate"))
    assert post(as_viewer, ack).status_code == 403
    assert post(as_reviewer, ack).status_code == 302
    [run] = [r for r in store.crawls.last_crawls("pirate") if r["run_id"] == "run-typo"]
    assert run["acknowledged_by"] == "rita" and now() - run["acknowledged_at"] < timedelta(1)
    page = _text(as_viewer.get("/sites/pirate"))
    assert f"by rita, {run['acknowledged_at']:%Y-%m-%d %H:%M}" in page and ack not in page
    line = check_crawls(web_ctx)
    assert line.ok and "1 seen to (acknowledged" in line.detail, line
    store.crawls.record_crawl(
        "run-again", "pirate", outcome="failed", started_at=now(), finished_at=now(),
        error="start URL http://pirate.example/: answered 503 Service Unavailable",
    )  # fmt: skip
    assert not check_crawls(web_ctx).ok  # a new failure is reported again
    later = now() + timedelta(seconds=1)
    store.crawls.record_crawl(
        "run-fixed", "pirate", outcome="finished", started_at=later, finished_at=later
    )
    assert check_crawls(web_ctx).ok  # crawled successfully since: seen to
    assert "/crawls/run-again/acknowledge" not in _text(as_reviewer.get("/sites/pirate"))


def test_a_sites_url_rules_are_listed_escaped_added_deleted_and_forgotten(
    web_ctx: Context, as_admin: FlaskClient
) -> None:
    form = {"name": "rules", "start_urls": "http://rules.example/"}
    assert post(as_admin, "/sites/new", form).status_code == 302
    sites = web_ctx.engine.store.sites
    sites.save_crawl_rules(
        "rules",
        [{"pattern": "/book/*.html", "param": "<t>", "support": 3}],
        [{"pattern": "/user/<b>addmark</b>.php", "misses": 3}],
    )
    page = _text(as_admin.get("/sites/rules"))
    assert "<code>&lt;t&gt;</code>" in page and "<b>addmark" not in page
    assert "/user/&lt;b&gt;addmark&lt;/b&gt;.php" in page
    add = {"action": "add", "pattern": "/list/*.html", "param": "sid"}
    assert post(as_admin, "/sites/rules/rules", add).status_code == 302
    assert {"pattern": "/list/*.html", "param": "sid", "support": 0} in (
        sites.site_rules("rules")["params"]
    )
    bad = {"action": "add", "pattern": "no-slash", "param": "t"}
    assert post(as_admin, "/sites/rules/rules", bad).status_code == 302  # flashed, not kept
    assert len(sites.site_rules("rules")["params"]) == 2
    gone = {"action": "delete", "pattern": "/book/*.html", "param": "<t>"}
    assert post(as_admin, "/sites/rules/rules", gone).status_code == 302
    assert 'id="rejected-rules"' in _text(as_admin.get("/sites/rules"))
    forget = {"action": "forget", "pattern": "/user/<b>addmark</b>.php"}
    assert post(as_admin, "/sites/rules/rules", forget).status_code == 302
    known = sites.site_rules("rules")
    assert [r["param"] for r in known["params"]] == ["sid"] and known["dead"] == []


def test_site_changes_reach_the_beat_schedule(web_ctx: Context, redis_client) -> None:
    from admin.services.accounts import Users
    from admin.web.app import create_app
    from tests.support.web import PASSWORDS, login

    Users(web_ctx.engine.store).create("alice", PASSWORDS["alice"][1], "admin")
    app: Flask = create_app(web_ctx, secret_key="s", schedules=True)
    c = app.test_client()
    login(c, "alice")
    form = {"name": "sched", "start_urls": "http://sched.example/", "schedule": "every 2h"}
    assert post(c, "/sites/new", form).status_code == 302
    schedules = web_ctx.schedules
    entries = {e["name"]: e for e in schedules.entries()}
    assert entries["crawl:sched"]["task"] == "fptrack.crawl_site"
    assert entries["crawl:sched"]["schedule"] == "<freq: 2.00 hours>"
    assert "recrawl:sched" not in entries
    quick = {**form, "recrawl": "every 2m"}
    assert post(c, "/sites/sched/edit", quick).status_code == 302
    entries = {e["name"]: e for e in schedules.entries()}
    assert entries["recrawl:sched"]["task"] == "fptrack.recrawl_site"
    assert entries["recrawl:sched"]["schedule"] == "<freq: 2.00 minutes>"
    bad = post(c, "/sites/sched/edit", {**form, "recrawl": "now and then"})
    assert bad.status_code == 400 and "recrawl" in _text(bad)
    assert post(c, "/sites/sched/edit", {**form, "schedule": "never"}).status_code == 302
    names = {e["name"] for e in schedules.entries()}
    assert "crawl:sched" not in names and "recrawl:sched" not in names


# -- query -----------------------------------------------------------------------------


def test_query_a_pasted_text(web_ctx: Context, as_viewer: FlaskClient) -> None:
    text = sample_text()
    web_ctx.engine.add_work(text, title="茶史", source="t.txt")
    hit = _text(post(as_viewer, "/query/", {"text": XSS + text[:1500]}))
    assert 'id="query-summary">1 work(s) copied' in hit and "茶史" in hit and "<mark>" in hit
    assert "<script>window.__xss" not in hit
    miss = _text(post(as_viewer, "/query/", {"text": sample_text("star-voyage")}))
    assert 'id="query-summary">0 work(s) copied' in miss
    assert post(as_viewer, "/query/", {"text": "   "}).status_code == 400


def test_query_a_url_needs_a_reviewer_and_reports_fetch_errors(
    web_ctx: Context, as_reviewer: FlaskClient
) -> None:
    from admin.scan import serve_directory

    text = sample_text()
    web_ctx.engine.add_work(text, title="茶史", source="t.txt")
    assert post(as_reviewer, "/query/", {"url": "file:///etc/passwd"}).status_code == 400
    import dataclasses
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        body = "".join(f"<p>{line}</p>" for line in text.splitlines() if line.strip())
        Path(tmp, "copy.html").write_text(
            f"<html><head><meta charset='utf-8'><title>t</title></head><body>{body}</body></html>",
            encoding="utf-8",
        )
        with serve_directory(Path(tmp)) as base:
            # By default, addresses inside the server's network are refused, and every
            # failure reads the same: a closed port, a page there, a redirect, a 404.
            answers = {
                _text(post(as_reviewer, "/query/", {"url": u}))
                .split('id="query-error"', 1)[1][:200]
                for u in ("http://127.0.0.1:1/x", base + "copy.html", base + "missing.html",
                          "http://[::1]:6379/", "http://169.254.169.254/latest/")
            }  # fmt: skip
            assert len(answers) == 1 and "that URL could not be fetched" in answers.pop()
            web_ctx.__dict__["settings"] = dataclasses.replace(
                web_ctx.settings, query_allow_private=True
            )
            found = _text(post(as_reviewer, "/query/", {"url": base + "copy.html"}))
    assert 'id="query-summary">1 work(s) copied' in found


# -- crawl now -------------------------------------------------------------------------


def test_crawl_now_crawls_the_site_and_records_its_matches(
    web_ctx: Context, as_reviewer: FlaskClient, dispatch: InlineDispatch
) -> None:
    import tempfile
    from pathlib import Path

    from admin.scan import serve_directory
    from matcher.sites.site_config import SiteConfig

    text = sample_text()
    web_ctx.engine.add_work(text, title="茶史", source="t.txt")
    with tempfile.TemporaryDirectory() as tmp:
        body = "".join(f"<p>{line}</p>" for line in text.splitlines() if line.strip())
        Path(tmp, "index.html").write_text(
            "<html><head><meta charset='utf-8'><title>首页</title></head><body>"
            "<a href='copy.html'>copy</a></body></html>",
            encoding="utf-8",
        )
        Path(tmp, "copy.html").write_text(
            f"<html><head><meta charset='utf-8'><title>抄</title></head><body>{body}</body></html>",
            encoding="utf-8",
        )
        with serve_directory(Path(tmp)) as base:
            web_ctx.store.sites.save_site(
                SiteConfig(name="local", start_urls=(base + "index.html",), obey_robots=False)
            )
            response = post(as_reviewer, "/sites/local/crawl")
            assert response.status_code == 302
            dispatch.wait()
            # crawled again: the copy is found again, not anew
            assert post(as_reviewer, "/sites/local/crawl").status_code == 302
            dispatch.wait()
    crawls = web_ctx.store.crawls.last_crawls("local")
    assert [c["outcome"] for c in crawls] == ["finished", "finished"]
    assert crawls[1]["stats"]["fptrack/pages"] >= 1
    assert web_ctx.engine.store.matches.count(site="local") == 1
    page = _text(as_reviewer.get("/sites/local"))
    said = page.split('id="site-matches">')[1].split("</p>")[0]
    assert "1 match(es)</a> in all" in said and "1 awaiting review" in said
    new = re.findall(r'<td class="num crawl-matches">(\d+)</td>', page)
    assert new == ["0", "1"]  # newest first: the second crawl found no new copy
    assert as_reviewer.post("/sites/missing/crawl").status_code == 400  # no CSRF token
    assert post(as_reviewer, "/sites/missing/crawl").status_code == 404

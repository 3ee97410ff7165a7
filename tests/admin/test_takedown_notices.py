"""The notices per recipient as built (issue 41, part 3): a host's and a registrar's abuse
notice (the party's role, a section per site with its addresses, each URL with its work,
excerpt and evidence link, the good-faith and accuracy statements; every value escaped in
the HTML variant; the placeholders while the rights holder is unset), and the search
engines' delisting CSV (one row per URL and work, the work's owner or the rights holder,
its web address or ISBN, the evidence link, no formula cell)."""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime

import pytest
from bson import ObjectId

from admin.report.abuse_notice import SiteSection, abuse_notice, subject
from admin.report.delisting import DELISTING_FIELDS, delisting_csv, delisting_rows
from admin.report.takedown import PLACEHOLDERS, placeholders_in
from matcher.evidence.recipients import Address
from matcher.pages import PART_MARK

DETAILS = {"rights_holder": "星河出版社", "contact": "legal@rights.example"}
TODAY = date(2026, 3, 9)


def item(url: str, work: str = "茶史", excerpt: str = "茶之为用，味至寒", n: int = 1) -> dict:
    return {
        "match_id": f"{n:024x}", "url": url, "work": work, "work_source": "tea.txt",
        "excerpt": excerpt, "first_seen": "2026-03-01", "status": "confirmed",
        "evidence_link": f"https://fptrack.rights.example/matches/{n:024x}",
    }  # fmt: skip


SECTIONS = [
    SiteSection(
        "pirate-a", "a.pirate.example", "pirate.example", ("203.0.113.7",),
        [item("http://a.pirate.example/1.html", n=1), item("http://a.pirate.example/2.html", n=2)],
    ),
    SiteSection(
        "pirate-b", "b.pirate.example", "", ("203.0.113.8", "2001:db8::8"),
        [item("http://b.pirate.example/9.html", work="灯塔", n=3)],
    ),
]  # fmt: skip
HOST = Address("host", "abuse@hostone.example", "HOSTONE-NET", "lookup", ("203.0.113.7",))


def test_the_hosts_notice_names_its_sites_a_section_each() -> None:
    text = abuse_notice("host", HOST, SECTIONS, DETAILS, TODAY, html=False)
    assert "You host the following site(s)" in text and "贵方为下列网站提供托管服务" in text
    assert "HOSTONE-NET <abuse@hostone.example>" in text
    assert "Sites: 2; 侵权网址 / Infringing URLs: 3" in text
    assert "作品 / Works: 灯塔；茶史" in text
    a, b = (
        text.index("== 1. 网站 / Site: pirate-a =="),
        text.index("== 2. 网站 / Site: pirate-b =="),
    )
    section_a, section_b = text[a:b], text[b:]
    assert "http://a.pirate.example/1.html" in section_a and "/2.html" in section_a
    assert "http://b.pirate.example/9.html" in section_b and "a.pirate.example/" not in section_b
    assert "地址 / IP addresses: 203.0.113.7" in section_a
    assert "地址 / IP addresses: 203.0.113.8, 2001:db8::8" in section_b
    assert "域名 / Domain: pirate.example" in section_a and "Domain" not in section_b
    assert "Evidence record: https://fptrack.rights.example/matches/" + f"{3:024x}" in section_b
    assert "作品 / Work: 灯塔" in section_b and "证据摘录 / Evidence: 茶之为用" in section_b
    assert "I have a good faith belief" in text and "information in this notice is accurate" in text
    assert "联系方式 / Contact: legal@rights.example" in text and text.count("星河出版社") >= 3
    assert placeholders_in(text) == ()
    assert subject("host", SECTIONS).endswith(": pirate-a, pirate-b")
    assert abuse_notice("host", HOST, SECTIONS, DETAILS, TODAY, html=False) == text  # pure


def test_the_registrars_notice_states_its_role() -> None:
    registrar = Address("registrar", "abuse@reg.example", "Registrar One", "lookup")
    text = abuse_notice("registrar", registrar, SECTIONS[:1], DETAILS, TODAY, html=False)
    assert "You are the registrar of the domain(s)" in text and "You host" not in text
    assert "forward this notice to the registrant" in text
    assert "Registrar One <abuse@reg.example>" in text and "2026-03-09" in text
    with pytest.raises(ValueError, match="host or a registrar"):
        abuse_notice("operator", registrar, SECTIONS, DETAILS, TODAY, html=False)


def test_the_html_variant_escapes_every_value_and_unset_details_are_placeholders() -> None:
    hostile = SiteSection(
        "pirate-c", "<b>host</b>", "", ("<img src=x>",),
        [item("http://c.example/<script>alert(1)</script>", work="<i>书</i>",
              excerpt="\"quoted\" & <tag>")],
    )  # fmt: skip
    to = Address("host", "abuse@x.example", "<NET>", "edited")
    html = abuse_notice("host", to, [hostile], {}, TODAY, html=True)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>" not in html and "<img" not in html and "<i>" not in html and "<tag>" not in html
    assert "&lt;NET&gt; &lt;abuse@x.example&gt;" in html and "&amp; &lt;tag&gt;" in html
    assert set(placeholders_in(html)) == set(PLACEHOLDERS.values())  # not ready until set
    text = abuse_notice("host", to, [hostile], {}, TODAY, html=False)
    assert "http://c.example/<script>alert(1)</script>" in text  # the text variant is plain


def match(url: str, site: str, work_id: ObjectId, title: str, n: int) -> dict:
    return {
        "_id": ObjectId(f"{n:024x}"), "url": url, "site": site, "work_id": work_id,
        "work_title": title, "first_seen": datetime(2026, 3, n, tzinfo=UTC), "status": "confirmed",
    }  # fmt: skip


def test_the_delisting_export_names_each_url_with_its_work() -> None:
    tea, lighthouse, formula = ObjectId(), ObjectId(), ObjectId()
    works = {
        str(tea): {"title": "茶史", "source": "978-7-02-000220-7", "owner": "茶史出版社"},
        str(lighthouse): {"title": "灯塔", "source": "works/lighthouse.txt",
                          "key": "https://books.example/lighthouse"},
        str(formula): {"title": "=HYPERLINK(\"http://evil\")", "source": "x.txt"},
    }  # fmt: skip
    matches = [
        match("http://b.example/2.html", "pirate-b", lighthouse, "灯塔", 3),
        match("http://a.example/1.html", "pirate-a", tea, "茶史", 1),
        match("http://a.example/1.html", "pirate-a", lighthouse, "灯塔", 2),
        match("http://a.example/1.html", "pirate-a", tea, "茶史", 4),  # the same URL and work
        match(f"http://a.example/book.zip{PART_MARK}2", "pirate-a", formula, "=HYPERLINK", 5),
    ]  # fmt: skip
    rows = delisting_rows(matches, works, "星河出版社", "https://fptrack.rights.example/")
    assert [(r["site"], r["url"], r["work_title"]) for r in rows] == [
        ("pirate-a", "http://a.example/1.html", "灯塔"),
        ("pirate-a", "http://a.example/1.html", "茶史"),
        ("pirate-a", "http://a.example/book.zip", "=HYPERLINK"),
        ("pirate-b", "http://b.example/2.html", "灯塔"),
    ]
    tea_row = rows[1]
    assert (
        tea_row["rights_holder"] == "茶史出版社"
        and tea_row["work_reference"] == "ISBN 9787020002207"
    )
    assert rows[0]["rights_holder"] == "星河出版社"
    assert rows[0]["work_reference"] == "https://books.example/lighthouse"
    assert rows[2]["work_reference"] == ""
    assert tea_row["first_seen"] == "2026-03-01" and tea_row["match_id"] == f"{1:024x}"
    assert tea_row["evidence_link"] == f"https://fptrack.rights.example/matches/{1:024x}"
    assert delisting_rows(matches[:1], works, "x", "")[0]["evidence_link"] == ""
    body = delisting_csv(rows)
    read = list(csv.DictReader(io.StringIO(body)))
    assert tuple(read[0]) == DELISTING_FIELDS and len(read) == 4
    assert read[2]["work_title"].startswith("'=")  # inert in a spreadsheet

"""The scan's HTML report in the real browser: the sample's 9 matches, and 500.

Screenshots go to the artifacts folder (``scan-report-9.png``, ``scan-report-500.png``).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from admin.cli import main
from admin.report.html_report import Counts, render
from tests.support.browser import ROOT, PageLog

WORKS = ROOT / "samples" / "works"
AD_LINE = "请访问 www.shuhaige-example.com 阅读最新章节"  # inside star-voyage's copy


def csp_violations(page: Page) -> list[str]:
    return page.evaluate("window.__cspViolations")


def column(page: Page, index: int) -> list[float]:
    cells = page.locator(f"#match-table tbody tr td:nth-child({index})")
    return [float(v) for v in cells.evaluate_all("cs => cs.map(c => c.dataset.value)")]


def test_the_sample_scan_report(
    page: Page, page_log: PageLog, artifacts: Path, tmp_path: Path
) -> None:
    report = tmp_path / "scan.html"
    argv = ["--works", str(WORKS), "--site-dir", str(ROOT / "samples" / "site")]
    assert main(["scan", *argv, "--json", str(tmp_path / "scan.json"), "--html", str(report)]) == 0
    page.goto(report.as_uri())

    for name, value in (("works", 7), ("pages", 18), ("matches", 9), ("works copied", 7)):
        expect(page.locator(f"#counts th:text-is('{name}') + td")).to_have_text(str(value))
    expect(page.locator("#by-site tbody tr")).to_have_count(1)
    # the site is named by what was scanned (a --site-dir: its folder), not a made-up name
    site_cell = page.locator("#by-site tbody tr td").first
    expect(site_cell).to_have_text(f"{ROOT / 'samples' / 'site'}/index.html")
    expect(page.locator("#match-table tbody tr td:nth-child(2)").first).to_have_text(
        f"{ROOT / 'samples' / 'site'}/index.html"
    )
    assert "scan1-" not in page.locator("body").inner_text()
    expect(page.locator("#by-work tbody tr")).to_have_count(7)
    expect(
        page.locator("#by-work tbody tr", has_text="lighthouse").locator("td").nth(1)
    ).to_have_text("2")
    rows = page.locator("#match-table tbody tr")
    expect(rows).to_have_count(9)

    # sortable: score ascending, then descending; the page column holds file paths, no link
    page.locator("#match-table th", has_text="score").click()
    assert column(page, 5) == sorted(column(page, 5))
    page.locator("#match-table th", has_text="score").click()
    assert column(page, 5) == sorted(column(page, 5), reverse=True)
    expect(page.locator("#match-table th", has_text="score")).to_have_attribute(
        "aria-sort", "descending"
    )
    expect(rows.first.locator("td").nth(2)).to_contain_text("samples/site/")
    assert page.locator("a[href^='http']").count() == 0

    # every match collapsible, open (9 of them), passages side by side
    details = page.locator("details")
    expect(details).to_have_count(9)
    assert all(details.evaluate_all("ds => ds.map(d => d.open)"))
    details.first.locator("summary").click()
    assert details.first.evaluate("d => d.open") is False
    details.first.locator("summary").click()
    pair = page.locator("details .pair").first
    work_box, page_box = (pair.locator(".side").nth(i).bounding_box() for i in (0, 1))
    assert work_box["y"] == page_box["y"] and work_box["x"] < page_box["x"]

    # the ad line inside the star-voyage copy is shown, not marked as copied
    ad = page.locator(".side.page p", has_text=AD_LINE).first
    expect(ad).to_be_visible()
    assert ad.locator("mark").count() == 0
    expect(
        page.locator("details", has_text="star-voyage")
        .first.locator("th", has_text="first seen")
        .locator("xpath=..")
    ).to_contain_text("UTC")

    assert csp_violations(page) == [] and page_log.unexpected_errors() == []
    page.screenshot(path=str(artifacts / "scan-report-9.png"), full_page=False)


def synthetic(count: int, seed: int = 5) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """``count`` matches over 20 sites and 40 works, each with 3 passages, and their texts."""
    rng = random.Random(seed)
    lines = [
        line
        for path in sorted(WORKS.glob("*.txt"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if len(line.strip()) > 20
    ]
    texts: dict[str, str] = {}
    matches = []
    for i in range(count):
        work = "\n".join(rng.sample(lines, 6))
        page = f"书海阁 首页\n{work}\n{AD_LINE}\n京ICP备00000000号"
        texts[f"w{i}"], texts[f"p{i}"] = work, page
        step = len(work) // 3
        score = round(rng.random(), 3)
        matches.append(
            {
                "work_id": f"w{i}",
                "page_id": f"p{i}",
                "site": f"site{i % 20:02d}",
                "url": f"https://site{i % 20:02d}.example/book/{i}.html",
                "work_title": f"作品{i % 40:02d}",
                "work_source": f"works/{i % 40:02d}.txt",
                "score": score,
                "containment_work": score,
                "containment_page": score,
                "methods": ["shingles", "pinyin"],
                "status": "new",
                "evidence": [
                    {
                        "work_span": [k * step, (k + 1) * step],
                        "page_span": [7 + k * step, 7 + (k + 1) * step],
                        "text": "",
                    }
                    for k in range(3)
                ],
            }
        )
    return matches, texts


def test_a_report_of_500_matches(
    page: Page, page_log: PageLog, artifacts: Path, tmp_path: Path
) -> None:
    matches, texts = synthetic(500)
    html = render(
        matches, lambda m: (texts[m["work_id"]], texts[m["page_id"]]), counts=Counts(40, 500)
    )
    report = tmp_path / "report.html"
    report.write_text(html, encoding="utf-8")
    page.goto(report.as_uri())
    expect(page.locator("#match-table tbody tr")).to_have_count(500)
    expect(page.locator("#by-site tbody tr")).to_have_count(20)
    expect(page.locator("#by-work tbody tr")).to_have_count(40)
    details = page.locator("details")
    expect(details).to_have_count(500)
    assert not any(details.evaluate_all("ds => ds.map(d => d.open)"))  # closed when many

    page.locator("#match-table th", has_text="containment").click()
    # Sorted within Playwright's timeout (the page's default, a hang guard): the smallest first.
    lowest = min(float(m["containment_work"]) for m in matches)
    first = page.locator("#match-table tbody tr td:nth-child(6)").first
    expect(first).to_have_attribute("data-value", str(lowest))
    assert column(page, 6) == sorted(column(page, 6))
    page.screenshot(path=str(artifacts / "scan-report-500.png"), full_page=False)
    link = page.locator("#match-table tbody tr a").first
    number = link.inner_text()
    link.click()  # a row's number opens its match
    expect(page.locator(f"#m{number}")).to_have_attribute("open", "")
    expect(page.locator(f"#m{number} .pair")).to_have_count(3)
    page.screenshot(path=str(artifacts / "scan-report-500-match.png"), full_page=False)
    assert csp_violations(page) == [] and page_log.unexpected_errors() == []

"""The hostile benchmark's takedown-notice cases: a notice names only the matches a person
confirmed, and is never sent while the template's placeholders remain.

Each run scans a small pirate site, a ``--site-dir`` folder whose two chapters copy two
sample works, with ``fptrack scan --serve`` (the console command, in a process of its own:
the admin the scan serves), logs in to that admin as a browser does and confirms the first
chapter's match through the match page's status form; the second stays unreviewed. Then:

- ``notice-placeholders``: the notice sent with the template's placeholders left (no rights
  holder, no contact), through ``POST /api/v1/takedowns/SITE`` with a reviewer's API token
  (made on the tokens page) and through the admin's send form: refused, with the reason
  (the API's 409 and its ``error``, the page's "Not sent" line), the notice page showing
  the reason with its send button disabled, and nothing recorded (``GET /api/v1/takedowns``
  lists no notice);
- ``notice-unreviewed``: the rights holder and the contact set on the template page, the
  notice sent through the send form as it comes: it names the confirmed chapter's URL only
  (the unreviewed one left out, and the page says so); then sent with the unreviewed matches
  chosen (``unreviewed=1``): it names both, and the unreviewed match's status history
  records the choice.

Every run returns ``ok`` (computed from the pages and the API's answers), ``status`` (the
HTTP status of the refusal, or of the default send's page), ``wall_s`` (that request's
time), ``reason`` (what the user is shown), ``named`` (the URLs matched, confirmed, named by
default and named by choice) and the scan-and-admin process's peak (``VmHWM``) and its
tree's.
"""

from __future__ import annotations

import html
import json
import re
import sys
import urllib.error
import urllib.request
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from admin.report.takedown import PLACEHOLDERS
from bench.hostile_admin import Admin, Browser, _memory, served_admin, timed

ROOT = Path(__file__).resolve().parents[1]
WORKS = ROOT / "samples" / "works"
CHAPTERS = {"/book/1.html": "tea-history", "/book/2.html": "lighthouse"}
"""The pirate site's chapters and the sample work each copies (two thirds of it)."""
PLACEHOLDER = PLACEHOLDERS["rights_holder"]
FLASH = re.compile(r'<p class="flash (\w+)">(.*?)</p>', re.S)
MATCH_ROW = re.compile(r'<a href="/matches/([0-9a-f]{24})">([^<]+)</a>')


def pirate_site(folder: Path) -> Path:
    """The works (two sample works) and the pirate site's folder, written under ``folder``."""
    works, site = folder / "works", folder / "site"
    (site / "book").mkdir(parents=True)
    works.mkdir()
    links = []
    for path, name in CHAPTERS.items():
        text = (WORKS / f"{name}.txt").read_text(encoding="utf-8")
        (works / f"{name}.txt").write_text(text, encoding="utf-8")
        body = "".join(
            f"<p>{html.escape(line)}</p>" for line in text[: len(text) * 2 // 3].splitlines()
        )
        page = (
            "<html><head><meta charset='utf-8'><title>第一章</title></head><body>"
            f"<div class='ad'>最新章节 免费阅读</div>{body}</body></html>"
        )
        (site / path.lstrip("/")).write_text(page, encoding="utf-8")
        links.append(f"<a href='{path.lstrip('/')}'>{name}</a>")
    index = f"<html><head><meta charset='utf-8'></head><body>{' '.join(links)}</body></html>"
    (site / "index.html").write_text(index, encoding="utf-8")
    return works


def scanned_admin(folder: Path) -> AbstractContextManager[Admin]:
    """``fptrack scan --works W --site-dir S --json J --serve 127.0.0.1:0`` over the pirate
    site of :func:`pirate_site`, its admin served until the block ends (SIGINT)."""
    works = pirate_site(folder)
    argv = [
        sys.executable, "-m", "admin.cli", "scan", "--works", str(works),
        "--site-dir", str(folder / "site"), "--json", str(folder / "scan.json"),
        "--serve", "127.0.0.1:0",
    ]  # fmt: skip
    return served_admin({}, argv)


def api(admin: Admin, token: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """``(status, JSON)`` of an API request with ``token``."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        admin.base + "api/v1/" + path, data=data, method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def flashes(page: str) -> dict[str, str]:
    """The page's flash messages by category, unescaped."""
    return {c: html.unescape(m).strip() for c, m in FLASH.findall(page)}


def notice_urls(page: str) -> set[str]:
    """The pirate site's URLs the notice on ``page`` names."""
    notice = page.split('id="notice">', 1)[-1].split("</div>", 1)[0]
    return {path for path in CHAPTERS if path in html.unescape(notice)}


def reviewed(admin: Admin) -> tuple[Browser, str, dict[str, str]]:
    """Logged in: the first chapter's match confirmed through its status form; the browser,
    the site's name and the match id of each chapter's path."""
    browser = admin.browser()
    _, listing = browser.request("matches/")
    ids = {}
    for match_id, url in MATCH_ROW.findall(listing):
        ids["/" + html.unescape(url).split("/", 3)[-1]] = match_id
    if set(ids) != set(CHAPTERS):
        raise RuntimeError(f"hostile_bench: the pirate chapters were not both matched: {ids}")
    first = ids["/book/1.html"]
    browser.request(f"matches/{first}/status", {"status": "confirmed", "note": "copied"})
    _, reports = browser.request("reports/")
    site = re.search(r'href="/reports/takedown/([\w.-]+)', reports)
    if not site:
        raise RuntimeError("hostile_bench: the reports page names no site to notify")
    return browser, site.group(1), ids


def placeholders(folder: Path) -> dict[str, Any]:
    """One run of ``notice-placeholders`` (see the module docstring)."""
    with scanned_admin(folder) as admin:
        browser, site, _ = reviewed(admin)
        _, tokens = browser.request("tokens/", {"name": "bench", "role": "reviewer"})
        secret = re.search(r'<code id="token-secret">([^<]+)</code>', tokens)
        if not secret:
            raise RuntimeError("hostile_bench: no API token was made")
        token = html.unescape(secret.group(1))
        took, (status, answer) = timed(lambda: api(admin, token, "POST", f"takedowns/{site}", {}))
        _, sent_page = browser.request(f"takedowns/send/{site}", {})
        _, page = browser.request(f"reports/takedown/{site}")
        _, figures = api(admin, token, "GET", "takedowns")
        memory = _memory(admin)
    reason = str(answer.get("error", ""))
    said = flashes(sent_page).get("error", "")
    shown = re.search(r'id="notice-not-ready">(.*?)</p>', page, re.S)
    button = page.split('id="notice-send"', 1)[-1].split("</form>", 1)[0]
    recorded = sum(s.get("notices", 0) for s in figures.get("sites", []))
    ok = (
        status == 409 and PLACEHOLDER in reason and said.startswith("Not sent: not ready")
        and PLACEHOLDER in said and bool(shown) and PLACEHOLDER in html.unescape(shown.group(1))
        and "disabled" in button and recorded == 0
    )  # fmt: skip
    return {"ok": ok, "wall_s": took, "status": status, "reason": reason, **memory}


def unreviewed(folder: Path) -> dict[str, Any]:
    """One run of ``notice-unreviewed`` (see the module docstring)."""
    from admin.report.takedown import DEFAULT_TAKEDOWN_TEMPLATE

    with scanned_admin(folder) as admin:
        browser, site, ids = reviewed(admin)
        details = {"rights_holder": "星河出版社", "contact": "legal@rights.example"}
        form = {"template": DEFAULT_TAKEDOWN_TEMPLATE, **details}
        browser.request("reports/takedown-template", form)
        _, page = browser.request(f"reports/takedown/{site}")
        default = notice_urls(page)
        left_out = re.search(r"(\d+) unreviewed match\(es\) of [\w.-]+ are left out", page)
        took, (status, sent) = timed(lambda: browser.request(f"takedowns/send/{site}", {}))
        _, chosen_page = browser.request(f"reports/takedown/{site}?unreviewed=1")
        chosen = notice_urls(chosen_page)
        _, sent_again = browser.request(f"takedowns/send/{site}", {"unreviewed": "1"})
        _, history = browser.request(f"matches/{ids['/book/2.html']}")
        memory = _memory(admin)
    first, second = flashes(sent).get("ok", ""), flashes(sent_again).get("ok", "")
    named = {"matched": len(ids), "confirmed": 1, "default": len(default), "chosen": len(chosen)}
    reason = (
        f"names {sorted(default)} of {sorted(CHAPTERS)} by default "
        f"({left_out.group(1) if left_out else 0} unreviewed left out); chosen: {second}"
    )
    ok = (
        default == {"/book/1.html"} and left_out is not None and left_out.group(1) == "1"
        and "marked sent: 1 URL(s)" in first and chosen == set(CHAPTERS)
        and "2 URL(s), 1 unreviewed match(es) named by choice" in second
        and "named unreviewed, by choice" in history
    )  # fmt: skip
    return {"ok": ok, "wall_s": took, "status": status, "reason": reason, "named": named,
            **memory}  # fmt: skip

"""``fptrack scan --warc OUT``: the evidence archive of every matched page, as fetched, which
``fptrack evidence verify`` checks offline with no server at all."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from matcher.evidence.archive import verify
from tests.admin.test_scan import EXPECTED, SITE, WORKS
from tests.servers.net import free_port
from tests.support.cli import fptrack


def test_the_warc_holds_each_matched_page_as_served(tmp_path: Path) -> None:
    out, warc = tmp_path / "scan.json", tmp_path / "evidence.warc.gz"
    ran = fptrack(
        "scan", "--works", str(WORKS), "--site-dir", str(SITE), "--json", str(out),
        "--warc", str(warc), timeout=300,
    )  # fmt: skip
    assert ran.status == 0, ran.err
    records = verify(warc.read_bytes())
    responses = {urlsplit(r.url).path: r for r in records if r.kind == "response"}
    requests = {urlsplit(r.url).path for r in records if r.kind == "request"}
    assert set(responses) == requests == set(EXPECTED)  # each matched page once
    for path, record in responses.items():
        assert record.payload == (SITE / path.lstrip("/")).read_bytes(), path
    matched = {urlsplit(m["url"]).path for m in json.loads(out.read_text())["matches"]}
    assert matched == set(responses)

    # the scan's user has no MongoDB (the one named is a closed port) and no TSA
    alone = {"FPTRACK_MONGO_URI": f"mongodb://127.0.0.1:{free_port()}", "FPTRACK_TSA_URL": "",
             "FPTRACK_TSA_CA": ""}  # fmt: skip
    checked = fptrack("evidence", "verify", str(warc), env=alone)
    assert checked.status == 3, checked.err  # intact, no trusted timestamp
    assert f"INTACT {warc}: {len(records)} record(s), SHA-256 " in checked.out
    assert "no trusted timestamp: no Time-Stamp Authority is set up here" in checked.out
    assert "MongoDB" not in checked.out + checked.err
    damaged = bytearray(warc.read_bytes())
    damaged[len(damaged) // 2] ^= 1
    warc.write_bytes(bytes(damaged))
    checked = fptrack("evidence", "verify", str(warc), env=alone)
    assert checked.status == 1 and f"FAIL   {warc}: the WARC file does not validate" in checked.out


def test_the_warc_folder_must_exist(tmp_path: Path) -> None:
    ran = fptrack(
        "scan", "--works", str(WORKS), "--site-dir", str(SITE), "--json",
        str(tmp_path / "o.json"), "--warc", str(tmp_path / "missing" / "e.warc.gz"),
    )  # fmt: skip
    assert ran.status == 2 and ran.one_line_error() and "--warc" in ran.err

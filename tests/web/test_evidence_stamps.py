"""Trusted timestamps on the evidence (RFC 3161), against a real TSA: OpenSSL's own
``openssl ts -reply`` behind an HTTP server the tests start, with a CA of its own
(:mod:`tests.servers.local_tsa`). Archived pages are queued, stamped in batches, bundled with
their lists, tokens, the CA and a verification page whose ``openssl`` commands pass; a
flipped byte in a record or a token, or a token of another TSA, fails ``fptrack evidence
verify`` with the reason; a bundle re-stamped by a stranger TSA with the stranger's CA
inside vouches for nothing unless its CA is trusted explicitly; without a TSA or a CA,
what can be checked offline is, and the verdict says "no trusted timestamp" (exit 3); a
TSA down never stops the crawl and its files are stamped later.
"""

from __future__ import annotations

import hashlib
import io
import json
import shlex
import socket
import subprocess
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from flask.testing import FlaskClient
from pymongo.database import Database

from admin.cli import main
from admin.commands.evidence import NO_TRUSTED_TIMESTAMP
from admin.context import Context
from admin.health import checks
from matcher.evidence import timestamps
from matcher.evidence.archive import Exchange
from matcher.evidence.stamping import STATE_KEY, stamp_waiting
from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.settings import Settings
from matcher.worker.ingest import Ingest
from matcher.worker.schedules import (
    DISCOVER_SITES,
    RECHECK_TAKEDOWNS,
    SEARCH_SITES,
    STAMP_EVIDENCE,
)
from tests.servers import session
from tests.servers.local_tsa import Authority, TsaServer, make_authority
from tests.support.web import sample_text

WHEN = datetime(2026, 11, 29, 4, 0, tzinfo=UTC)
SINCE = "since=2000-01-01&status=new"


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return make_authority(tmp_path_factory.mktemp("tsa"))


@pytest.fixture(scope="module")
def stranger(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    """Another TSA, with another CA."""
    return make_authority(tmp_path_factory.mktemp("other-tsa"), "another TSA")


@pytest.fixture
def tsa(authority: Authority) -> Iterator[TsaServer]:
    with TsaServer(authority) as server:
        yield server


def context(mongo_db: Database, redis_client: redis.Redis, **fields: object) -> Context:
    """A context on the test servers whose settings have ``fields``; its beat entries under
    a prefix of its own."""
    settings = Settings(
        redis_prefix=f"fptrack-test-stamps-{uuid.uuid4().hex[:8]}", mongo_db=mongo_db.name,
        redis_url=session.session().redis_url(0), broker_url=session.session().redis_url(1),
        **fields,
    )  # fmt: skip
    engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=redis_client)
    return Context(settings=settings, engine=engine)


@pytest.fixture
def web_ctx(
    redis_client: redis.Redis, mongo_db: Database, authority: Authority, tsa: TsaServer
) -> Context:
    """The web suite's context, with the TSA and its CA set, two files a token."""
    return context(
        mongo_db, redis_client, tsa_url=tsa.tsa_url, tsa_ca=str(authority.ca), tsa_batch=2
    )


def fetched(n: int, text: str) -> CrawledPage:
    url = f"http://pirate.example/book/{n}.html"
    body = f"<html><body><p>第{n}页</p><p>{text}</p></body></html>".encode("gbk", "replace")
    when = WHEN + timedelta(minutes=n)
    exchange = Exchange(url, 200, (("Content-Type", "text/html"),), body, when, reason="OK")
    return CrawledPage(url=url, site="pirate", title="", text=f"第{n}页\n{text}", exchange=exchange)


def crawl_copies(ctx: Context, pages: int, stamp: bool = True) -> list[str]:
    """A work and ``pages`` pages copying it, archived (queued for stamping with ``stamp``)
    and matched; their archived files' SHA-256."""
    text = sample_text()
    ctx.engine.add_work(text, title="茶史", source="tea-history.txt")
    queued: list[str] = []
    ingest = Ingest(ctx.engine.store, queued.append, archive=ctx.archive, stamp=stamp)
    for n in range(pages):
        ingest.page(fetched(n, text))
    for page_id in queued:
        ctx.engine.process_stored_page(page_id)
    return [
        m["archive"]["sha256"] for m in ctx.store.matches.find_matches(limit=100, active_only=False)
    ]


def flipped(data: bytes, at: int) -> bytes:
    out = bytearray(data)
    out[at] ^= 0x01
    return bytes(out)


def rezipped(bundle: bytes, name: str, data: bytes) -> bytes:
    """``bundle`` with member ``name`` replaced by ``data``."""
    source = zipfile.ZipFile(io.BytesIO(bundle))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            target.writestr(info, data if info.filename == name else source.read(info))
    return out.getvalue()


def verify(ctx: Context, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["evidence", "verify", *args], ctx)
    return status, capsys.readouterr().out


def test_pages_are_stamped_in_batches_and_bundled_with_what_checks_them(
    web_ctx: Context,
    as_viewer: FlaskClient,
    tsa: TsaServer,
    stranger: Authority,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    files = crawl_copies(web_ctx, 3)
    store = web_ctx.engine.store
    assert len(set(files)) == 3 and store.stamps.waiting_count() == 3

    done = stamp_waiting(store, tsa.tsa_url, web_ctx.settings.tsa_batch)
    assert (done.stamped, done.batches, done.waiting, done.error) == (3, 2, 0, "")
    assert tsa.requests == 2 and store.state.get_state(STATE_KEY)["stamped"] == 3
    stamps = store.stamps.stamps_of(files)
    assert set(stamps) == set(files) and len({b["_id"] for b in stamps.values()}) == 2

    response = as_viewer.get(f"/reports/evidence.zip?{SINCE}")
    assert response.status_code == 200
    bundle = response.data
    names = zipfile.ZipFile(io.BytesIO(bundle)).namelist()
    assert {"tsa-ca.pem", "VERIFY.txt", "manifest.json"} <= set(names)
    assert sum(n.startswith("timestamps/") for n in names) == 4  # 2 lists, 2 tokens
    path = tmp_path / "bundle.zip"
    path.write_bytes(bundle)
    status, out = verify(web_ctx, capsys, str(path), "--ca", web_ctx.settings.tsa_ca)
    assert status == 0 and out.count("OK    ") == 3 and "3 of 3 file(s) verified" in out
    assert out.count("by CN=fptrack test TSA") == 3  # the signer, as its certificate says
    status, out = verify(web_ctx, capsys, str(path))  # FPTRACK_TSA_CA
    assert status == 0 and "note:" not in out

    # the bundle's own page: its commands pass with plain OpenSSL, in the unpacked bundle
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(path).extractall(unpacked)
    manifest = json.loads((unpacked / "manifest.json").read_text())
    for entry in manifest:
        listed = (unpacked / entry["timestamp"]["list"]).read_text().split()
        assert hashlib.sha256((unpacked / entry["file"]).read_bytes()).hexdigest() in listed
    page = (unpacked / "VERIFY.txt").read_text()
    commands = [line.strip() for line in page.splitlines() if "openssl ts -verify" in line]
    assert len(commands) == 2
    for command in commands:
        ran = subprocess.run(shlex.split(command), cwd=unpacked, capture_output=True, text=True)
        assert ran.returncode == 0 and "Verification: OK" in ran.stdout, ran.stderr

    # a flipped byte in a record, in a token; a token of another TSA over the same list
    warc = manifest[0]["file"]
    data = (unpacked / warc).read_bytes()
    status, out = verify(
        web_ctx, capsys, _save(tmp_path, rezipped(bundle, warc, flipped(data, 40)))
    )
    assert status == 1 and f"FAIL   {warc}: the WARC file's SHA-256 is not" in out
    assert "2 of 3 file(s) verified" in out
    token_name = manifest[0]["timestamp"]["token"]
    token = (unpacked / token_name).read_bytes()
    bad_token = rezipped(bundle, token_name, flipped(token, len(token) - 20))
    status, out = verify(web_ctx, capsys, _save(tmp_path, bad_token))
    assert status == 1 and "FAIL" in out and "token" in out
    with TsaServer(stranger) as other:
        listed = (unpacked / manifest[0]["timestamp"]["list"]).read_bytes()
        foreign = timestamps.ask(other.tsa_url, listed).der
    status, out = verify(web_ctx, capsys, _save(tmp_path, rezipped(bundle, token_name, foreign)))
    assert status == 1 and "does not verify against the TSA's CA certificate" in out
    status, out = verify(web_ctx, capsys, str(path), "--ca", str(stranger.ca))
    assert status == 1 and "0 of 3 file(s) verified" in out
    # without a CA of one's own, the bundle's copy is not trusted: no trusted timestamp
    no_ca = Context(settings=replace(web_ctx.settings, tsa_ca=""), engine=web_ctx.engine)
    status, out = verify(no_ca, capsys, str(path))
    assert status == NO_TRUSTED_TIMESTAMP and out.count("INTACT ") == 3 and "note:" not in out
    assert "its batch list names it, but its token is not checked" in out
    assert "no trusted timestamp: 3 file(s) intact" in out and "0 of 3 file(s) verified" in out
    status, out = verify(no_ca, capsys, str(path), "--trust-bundle-ca")  # asked: and said so
    assert status == 0 and "note: the tokens are checked against the CA certificate inside" in out

    # re-stamped by a stranger TSA, the stranger's CA inside: vouches for nothing by itself
    restamped = bundle
    with TsaServer(stranger) as other:
        for batch in {(e["timestamp"]["list"], e["timestamp"]["token"]) for e in manifest}:
            foreign = timestamps.ask(other.tsa_url, (unpacked / batch[0]).read_bytes()).der
            restamped = rezipped(restamped, batch[1], foreign)
    restamped = _save(tmp_path, rezipped(restamped, "tsa-ca.pem", stranger.ca.read_bytes()))
    status, out = verify(no_ca, capsys, restamped)
    assert status == NO_TRUSTED_TIMESTAMP and "0 of 3 file(s) verified" in out
    status, out = verify(web_ctx, capsys, restamped)  # FPTRACK_TSA_CA: the real TSA's
    assert status == 1 and out.count("does not verify against the TSA's CA certificate") == 3
    status, out = verify(no_ca, capsys, restamped, "--trust-bundle-ca")
    assert status == 0 and "3 of 3 file(s) verified" in out and "whoever made the bundle" in out
    assert out.count("by CN=another TSA") == 3  # not the manifest's word for it

    # a match, by id: its exchange from the archive, its stamp from the store
    match = next(web_ctx.store.matches.find_matches(limit=1, active_only=False))
    status, out = verify(web_ctx, capsys, str(match["_id"]), "--ca", str(tsa.authority.ca))
    assert status == 0 and "1 of 1 file(s) verified" in out


def _save(tmp_path: Path, bundle: bytes) -> str:
    path = tmp_path / f"changed-{hashlib.sha256(bundle).hexdigest()[:8]}.zip"
    path.write_bytes(bundle)
    return str(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_tsa_down_never_stops_the_crawl_and_its_files_are_stamped_later(
    mongo_db: Database,
    redis_client: redis.Redis,
    tsa: TsaServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    down = f"http://127.0.0.1:{free_port()}/tsa"
    ctx = context(mongo_db, redis_client, tsa_url=down, tsa_ca=str(tsa.authority.ca))
    files = crawl_copies(ctx, 3)  # archived and matched with no TSA answering
    store = ctx.engine.store
    assert len(files) == 3 and store.stamps.waiting_count() == 3

    assert main(["evidence", "stamp"], ctx) == 1
    out, err = capsys.readouterr()
    assert "0 file(s) stamped in 0 token(s), 3 waiting" in out
    assert f"TSA {down} unreachable" in err and "the files stay queued" in err
    assert store.state.get_state(STATE_KEY)["error"].startswith(f"TSA {down} unreachable")
    [check] = [c for c in checks(ctx, ["evidence"]) if c.name == "evidence"]
    assert not check.ok and f"the last stamping run failed: TSA {down} unreachable" in check.detail
    status, out = verify(ctx, capsys, str(next(ctx.store.matches.find_matches(limit=1))["_id"]))
    assert status == NO_TRUSTED_TIMESTAMP and "INTACT " in out
    assert "no trusted timestamp: no token covers it yet (queued for the next stamping run)" in out

    tsa.fail_with = 503
    done = stamp_waiting(store, tsa.tsa_url, 2)
    assert done.stamped == 0 and done.waiting == 3 and "answered HTTP 503" in done.error

    tsa.fail_with = None
    up = Context(
        settings=replace(ctx.settings, tsa_url=tsa.tsa_url, tsa_batch=2), engine=ctx.engine
    )
    assert main(["evidence", "stamp"], up) == 0
    assert "3 file(s) stamped in 2 token(s), 0 waiting" in capsys.readouterr().out
    assert set(store.stamps.stamps_of(files)) == set(files)
    assert main(["evidence", "stamp"], up) == 0  # nothing left: nothing asked
    [check] = [c for c in checks(up, ["evidence"]) if c.name == "evidence"]
    assert check.ok and "0 archive file(s) waiting" in check.detail
    assert tsa.requests == 2
    status, out = verify(ctx, capsys, str(next(ctx.store.matches.find_matches(limit=1))["_id"]))
    assert status == 0


def test_stamping_without_a_tsa_is_a_one_line_error(
    mongo_db: Database, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    ctx = context(mongo_db, redis_client)
    assert main(["evidence", "stamp"], ctx) == 1
    assert "no Time-Stamp Authority: set FPTRACK_TSA_URL" in capsys.readouterr().err
    assert main(["evidence", "verify", "not-a-file-nor-an-id"], ctx) == 1
    assert "neither a file nor a match id" in capsys.readouterr().err


def test_without_a_tsa_verify_checks_what_it_can_and_says_no_trusted_timestamp(
    mongo_db: Database, redis_client: redis.Redis, authority: Authority, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The quick-start deployment (no TSA, no CA): a match's exchange is checked offline
    (SHA-256, record digests) and said to have no trusted timestamp, exit 3; a copy of it by
    path asks no server at all (the settings' MongoDB is a closed port), nor, with a TSA
    set up and MongoDB down, does it fail for that; a damaged copy fails."""
    ctx = context(mongo_db, redis_client)
    [sha256] = crawl_copies(ctx, 1, stamp=False)
    status, out = verify(ctx, capsys, str(next(ctx.store.matches.find_matches(limit=1))["_id"]))
    assert status == NO_TRUSTED_TIMESTAMP, out
    assert (
        f"INTACT {sha256}.warc.gz: 2 record(s); no trusted timestamp: no token covers it"
        " (no Time-Stamp Authority is set up: FPTRACK_TSA_URL)"
    ) in out
    assert "0 of 1 file(s) verified" in out and "no trusted timestamp: 1 file(s) intact" in out

    copy = tmp_path / "copy.warc.gz"
    copy.write_bytes(ctx.archive.get(sha256))
    down = f"mongodb://127.0.0.1:{free_port()}"
    nowhere = Context(settings=replace(ctx.settings, mongo_uri=down))
    status, out = verify(nowhere, capsys, str(copy))
    assert status == NO_TRUSTED_TIMESTAMP and f"INTACT {copy}: 2 record(s), SHA-256 {sha256}" in out
    assert "no Time-Stamp Authority is set up here (FPTRACK_TSA_URL), so none is kept" in out
    stamped_elsewhere = Context(settings=replace(nowhere.settings, tsa_ca=str(authority.ca)))
    status, out = verify(stamped_elsewhere, capsys, str(copy))
    assert status == NO_TRUSTED_TIMESTAMP and "its timestamp cannot be looked up: MongoDB" in out
    copy.write_bytes(flipped(copy.read_bytes(), 60))
    status, out = verify(nowhere, capsys, str(copy))
    assert status == 1 and f"FAIL   {copy}: the WARC file does not validate" in out
    said = out.replace(str(copy), "COPY")  # the temporary path's length is the machine's
    assert max(len(line) for line in said.splitlines()) < 250 and "\x00" not in out
    assert main(["evidence", "verify", str(copy), "--trust-bundle-ca"], nowhere) == 2
    assert "--trust-bundle-ca is for an evidence bundle (.zip) only" in capsys.readouterr().err
    nowhere.close()


def test_the_beat_stamps_only_with_a_tsa_and_discovers_unless_told_not_to(
    mongo_db: Database, redis_client: redis.Redis
) -> None:
    ctx = context(mongo_db, redis_client, tsa_url="http://127.0.0.1:9/tsa", tsa_every=120)
    try:
        ctx.schedules.ensure_daily(ctx.settings)
        names = {e["name"] for e in ctx.schedules.entries()}
        assert {RECHECK_TAKEDOWNS, DISCOVER_SITES} <= names  # the takedowns', discovery's
        [entry] = [e for e in ctx.schedules.entries() if e["name"] == STAMP_EVIDENCE]
        assert entry["task"] == "fptrack.stamp_evidence"
        assert entry["schedule"] == "<freq: 2.00 minutes>"
        assert SEARCH_SITES not in names  # no search engine, and off by default
        searching = replace(ctx.settings, search_url="http://127.0.0.1:9/", search_every=3600)
        ctx.schedules.ensure_daily(searching)
        [entry] = [e for e in ctx.schedules.entries() if e["name"] == SEARCH_SITES]
        assert entry["task"] == "fptrack.search_sites" and entry["schedule"] == "<freq: 1.00 hour>"
        ctx.schedules.ensure_daily(replace(ctx.settings, tsa_url="", discover_every=0))
        names = {e["name"] for e in ctx.schedules.entries()}
        assert STAMP_EVIDENCE not in names and DISCOVER_SITES not in names
        assert SEARCH_SITES not in names
    finally:
        ctx.close()


def test_the_tsa_answer_is_checked(tsa: TsaServer) -> None:
    listed = timestamps.batch_list(["ab" * 32, "cd" * 32])
    token = timestamps.ask(tsa.tsa_url, listed)
    assert token.gen_time.tzinfo is not None
    assert timestamps.list_digests(listed) == {"ab" * 32, "cd" * 32}
    roots = timestamps.load_roots(tsa.authority.ca)
    assert timestamps.check(token.der, listed, roots).serial == token.serial
    with pytest.raises(timestamps.NotCovered, match="covers other data"):
        timestamps.check(token.der, listed + b"00\n", roots)
    with pytest.raises(timestamps.NotCovered, match="not a batch list"):
        timestamps.list_digests(b"<html>")
    tsa.fail_with = 404
    with pytest.raises(timestamps.StampError, match="answered HTTP 404"):
        timestamps.ask(tsa.tsa_url, listed)


def test_verify_says_in_one_line_what_it_cannot_read(
    mongo_db: Database, redis_client: redis.Redis, tmp_path: Path, authority: Authority,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    ctx = context(mongo_db, redis_client, tsa_ca=str(authority.ca))
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 40)
    assert main(["evidence", "verify", str(junk)], ctx) == 1
    out = capsys.readouterr().out
    assert "the WARC file does not validate" in out and "no trusted timestamp: no token" in out
    broken = tmp_path / "broken.zip"
    with zipfile.ZipFile(broken, "w") as z:
        z.writestr("manifest.json", json.dumps([1, "x", {"file": "a.warc.gz", "sha256": "0"}]))
    assert main(["evidence", "verify", str(broken)], ctx) == 1
    assert (
        "FAIL   a.warc.gz: listed in manifest.json but not in the bundle" in capsys.readouterr().out
    )
    (tmp_path / "empty.zip").write_bytes(b"PK\x03\x04" + bytes(30))
    assert main(["evidence", "verify", str(tmp_path / "empty.zip")], ctx) == 1
    assert "not an fptrack evidence bundle" in capsys.readouterr().err
    assert main(["evidence", "verify", "x", "--ca", str(junk)], ctx) == 1
    assert "holds no PEM certificate" in capsys.readouterr().err

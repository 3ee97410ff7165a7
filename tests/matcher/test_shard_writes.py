"""Every write a sharded MongoDB 7.0 would refuse, now made by full shard key, through the
test MongoDB server; and the shard-key audit (:mod:`tests.support.command_audit`) that the session
runs over every test catching such a write.

Each operation that once addressed a document of a sharded collection by ``_id`` alone
(reviewing a match, removing a work, marking twins, taking new matches for alerts,
claiming and finishing an outbox entry, revoking an API token, retracting and deleting
matches) runs on a client of its own whose listener records every write it sends; each
test asserts that the write names its collection's shard key, with the document's value,
and that the audit finds nothing wrong in any of them.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymongo
import pytest
from bson import ObjectId
from pymongo import monitoring

from matcher.alerts.rules import AlertRule
from matcher.evidence.archive import GridFSArchive
from matcher.pages import CrawledPage
from matcher.store import SHARD_KEYS, Store, now
from matcher.store.alerts import AlertStore
from tests.servers.session import session
from tests.support import command_audit
from tests.support.command_audit import CommandAudit, check

HERE = Path(__file__).resolve()
WRITES = ("insert", "update", "delete", "findAndModify")


class Recorder(monitoring.CommandListener):
    """Every write command a client sends: ``(name, command, database)``."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, dict[str, Any], str]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name in WRITES:
            self.commands.append((event.command_name, dict(event.command), event.database_name))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass

    def filters(self, name: str, collection: str) -> list[dict[str, Any]]:
        """The filters of the single-document writes ``name`` sent to ``collection``."""
        out = []
        for command_name, command, _ in self.commands:
            if command_name != name or command[name] != collection:
                continue
            if name == "findAndModify":
                out.append(command["query"])
            elif name == "update":
                out += [u["q"] for u in command["updates"] if not u.get("multi")]
            elif name == "delete":
                out += [d["q"] for d in command["deletes"] if d.get("limit")]
        return out

    def offences(self) -> list[str]:
        return [o.describe() for c in self.commands for o in check(*c)]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def store(recorder: Recorder) -> Iterator[Store]:
    """A store on a client of its own, whose writes ``recorder`` keeps (a fresh database)."""
    client = pymongo.MongoClient(session().mongo_uri, tz_aware=True, event_listeners=[recorder])
    name = f"fptrack_test_{uuid.uuid4().hex[:12]}"
    s = Store(client[name])
    s.ensure_indexes()
    recorder.commands.clear()
    yield s
    client.drop_database(name)
    client.close()


def seeded(store: Store) -> tuple[dict, dict, dict]:
    """A work, a page and their new match."""
    work, _ = store.works.upsert_work(
        "works/a.txt", title="灯塔", content_hash="h", length=2, segments=1
    )
    page, _ = store.pages.store_crawled_page(
        CrawledPage(url="http://pirate.test/1", site="pirate", title="", text="正文"), "p"
    )
    record = {"page_id": page["_id"], "work_id": work["_id"], "url": page["url"]}
    match = store.matches.upsert_match(
        {**record, "site": "pirate", "work_title": "灯塔", "score": 0.9}
    )
    return work, page, match


def test_reviewing_a_match_names_its_page(store: Store, recorder: Recorder) -> None:
    _, page, match = seeded(store)
    recorder.commands.clear()
    assert store.matches.set_status(str(match["_id"]), "confirmed", "seen", "alice")
    assert store.matches.match(match_id=str(match["_id"]))["status"] == "confirmed"
    assert recorder.filters("findAndModify", "matches") == [
        {"page_id": page["_id"], "_id": match["_id"]}
    ]
    assert not store.matches.set_status(str(ObjectId()), "confirmed")  # none: no write
    assert recorder.offences() == []


def test_removing_a_work_names_its_key_and_its_archived_matches_pages(
    store: Store, recorder: Recorder
) -> None:
    work, page, match = seeded(store)
    recorder.commands.clear()
    assert store.works.delete_work(str(work["_id"]))["_id"] == work["_id"]
    assert store.count("works") == 0 and store.matches.count(archived=True) == 1
    assert recorder.filters("findAndModify", "works") == [
        {"key": "works/a.txt", "_id": work["_id"]}
    ]
    assert recorder.filters("update", "matches") == [{"page_id": page["_id"], "_id": match["_id"]}]
    assert store.works.delete_work(str(work["_id"])) is None
    assert recorder.offences() == []


def test_marking_twins_names_the_works_key(store: Store, recorder: Recorder) -> None:
    work, _, _ = seeded(store)
    twin, _ = store.works.upsert_work(
        "works/b.txt", title="灯塔", content_hash="h", length=2, segments=1
    )
    recorder.commands.clear()
    store.twins.set_same_text(twin["_id"], work["_id"], key=twin["key"])
    assert [t["_id"] for t in store.twins.twins(work["_id"])] == [twin["_id"]]
    assert recorder.filters("update", "works") == [{"key": "works/b.txt", "_id": twin["_id"]}]
    assert recorder.offences() == []


def test_retracting_a_match_names_its_page(store: Store, recorder: Recorder) -> None:
    _, page, match = seeded(store)
    recorder.commands.clear()
    assert store.matches.deactivate_matches("page_id", page["_id"], keep=[]) == 1
    assert recorder.filters("update", "matches") == [
        {"page_id": page["_id"], "_id": match["_id"], "active": True}
    ]
    assert recorder.offences() == []


def test_alerts_take_claim_and_finish_by_shard_key(store: Store, recorder: Recorder) -> None:
    alerts = AlertStore(store)
    rule = alerts.save_rule(AlertRule.from_dict({"name": "r", "url": "https://example.com/h"}))
    _, page, match = seeded(store)
    recorder.commands.clear()
    assert alerts.take_new_matches() == 1
    assert recorder.filters("update", "matches") == [
        {"page_id": page["_id"], "_id": match["_id"], "alert": "pending"}
    ]
    key = f"{rule.id}|{match['_id']}"
    assert recorder.filters("update", "alert_outbox") == [{"key": key}]  # the upsert

    recorder.commands.clear()
    entry = alerts.claim(lease=60)
    assert entry is not None and entry["key"] == key and entry["state"] == "sending"
    [claimed] = recorder.filters("findAndModify", "alert_outbox")
    assert claimed["key"] == key and claimed["state"] == "pending"
    assert alerts.claim(lease=60) is None  # nothing else due
    alerts.finish(entry, "delivered")
    assert alerts.entries()[0]["state"] == "delivered"
    assert recorder.filters("update", "alert_outbox") == [
        {"key": key, "_id": entry["_id"], "state": "sending"}
    ]
    assert recorder.offences() == []


def test_claiming_passes_over_entries_another_sender_took(store: Store) -> None:
    alerts = AlertStore(store)
    rule = alerts.save_rule(AlertRule.from_dict({"name": "r", "url": "https://example.com/h"}))
    for _ in range(3):
        alerts._enqueue(rule, ObjectId(), now())
    first, second, third = alerts.entries()
    # another sender takes the oldest after this one read it: this one claims the next
    store.db.alert_outbox.update_one({"key": first["key"]}, {"$set": {"state": "sending"}})
    claimed = [alerts.claim(lease=60), alerts.claim(lease=60), alerts.claim(lease=60)]
    assert [c and c["key"] for c in claimed] == [second["key"], third["key"], None]


def test_revoking_a_token_names_its_digest(store: Store, recorder: Recorder) -> None:
    digest = hashlib.sha256(b"secret").hexdigest()
    fields = {"token_id": digest[:12], "username": "alice", "created_at": now()}
    store.tokens.save_api_token(digest=digest, fields={**fields, "revoked_at": None})
    recorder.commands.clear()
    assert not store.tokens.revoke_api_token(token_id=digest[:12], username="bob")  # not bob's
    assert store.tokens.revoke_api_token(token_id=digest[:12], username="alice")
    assert store.tokens.api_token(digest=digest) is None
    assert not store.tokens.revoke_api_token(token_id=digest[:12])  # already revoked
    assert recorder.filters("update", "api_tokens") == [{"_id": digest, "revoked_at": None}]
    assert recorder.offences() == []


def test_the_gridfs_archive_writes_by_its_shard_keys(store: Store, recorder: Recorder) -> None:
    archive = GridFSArchive(store.db)
    sha256 = archive.put(b"WARC" * 100_000)  # two chunks
    assert store.db["archive.chunks"].count_documents({"files_id": sha256}) == 2
    archive.delete(sha256)
    assert not archive.has(sha256)
    assert recorder.filters("delete", "archive.files") == [{"_id": {"$eq": sha256}}]
    assert recorder.offences() == []
    assert {"archive.files", "archive.chunks"} <= set(SHARD_KEYS)


# the audit itself ---------------------------------------------------------------------


def test_the_rules_of_the_audit() -> None:
    oid = ObjectId()

    def update(q: dict, u: dict | None = None, **flags: bool) -> list[str]:
        one = {"q": q, "u": u or {"$set": {"status": "x"}}, **flags}
        return [o.problem for o in check("update", {"update": "matches", "updates": [one]}, "db")]

    assert update({"_id": oid}) == ["filter lacks shard key field(s) page_id"]
    assert update({"_id": oid}, multi=True) == []  # to every shard
    assert update({"page_id": 1, "_id": oid}) == []
    assert update({"page_id": {"$eq": 1}}) == []
    assert update({"$and": [{"page_id": 1}, {"active": True}]}) == []
    assert update({"page_id": {"$in": [1, 2]}}) == ["filter lacks shard key field(s) page_id"]
    assert update({"work_id": oid}, multi=True, upsert=True) == [
        "filter lacks shard key field(s) page_id"
    ]
    assert update({"page_id": 1}, {"$set": {"page_id": 2}}) == [
        "changes shard key field(s) page_id"
    ]
    assert update({"page_id": 1}, {"$set": {"page_id": 1}}) == []  # the same value
    assert update({"page_id": 1}, {"$setOnInsert": {"page_id": 1}}, upsert=True) == []

    def delete(q: dict, limit: int) -> list[Any]:
        return check("delete", {"delete": "works", "deletes": [{"q": q, "limit": limit}]}, "db")

    assert [o.problem for o in delete({"_id": oid}, 1)] == ["filter lacks shard key field(s) key"]
    assert delete({"_id": oid}, 0) == []
    modify = {"findAndModify": "failures", "query": {"task": "t"}, "remove": True}
    assert [o.problem for o in check("findAndModify", modify, "db")] == [
        "filter lacks shard key field(s) ref"
    ]
    assert [o.problem for o in check("insert", {"insert": "scratch"}, "db")] == [
        "collection not in SHARD_KEYS"
    ]
    assert check("insert", {"insert": "scratch"}, "admin") == []


def test_the_audit_catches_an_update_by_id_alone(mongo_db: pymongo.database.Database) -> None:
    audit = CommandAudit(audited=(HERE,))  # this file's writes count as fptrack's here
    client = pymongo.MongoClient(session().mongo_uri, event_listeners=[audit])
    db = client[mongo_db.name]
    oid = ObjectId()
    db.matches.insert_one({"_id": oid, "page_id": 7, "work_id": ObjectId(), "status": "new"})
    db.matches.update_many({"work_id": oid}, {"$set": {"seen": True}})  # fine: every shard
    db.matches.update_one({"page_id": 7, "_id": oid}, {"$set": {"status": "confirmed"}})
    assert audit.offences == []
    db.matches.update_one({"_id": oid}, {"$set": {"status": "confirmed"}})
    line = sys._getframe().f_lineno - 1
    client.close()
    [offence] = audit.offences
    assert (offence.collection, offence.kind, offence.query) == ("matches", "update", {"_id": oid})
    assert offence.problem == "filter lacks shard key field(s) page_id"
    assert offence.sender == f"tests/matcher/{HERE.name}:{line}"
    assert audit.summary() == [f"{offence.describe()} x1"]
    # the session's own audit leaves the tests' writes alone: this one is not fptrack's
    assert not any(o.sender.startswith("tests/") for o in command_audit.AUDIT.offences)


OFFENDING_TEST = """
import os
import pymongo
from bson import ObjectId

def test_a_review_by_id_alone():
    client = pymongo.MongoClient(os.environ["FPTRACK_MONGO_URI"])
    client[{db!r}].matches.update_one({{"_id": ObjectId()}}, {{"$set": {{"status": "x"}}}})
    client.drop_database({db!r})
"""
AUDITED_CONFTEST = """
from pathlib import Path
from tests.support import command_audit
from tests.support.command_audit import pytest_sessionfinish, pytest_terminal_summary

command_audit.AUDIT.audited = (Path(__file__).parent,)
command_audit.install()
"""


def test_a_session_that_sent_one_fails_and_names_it(tmp_path: Path) -> None:
    """A test run whose code sends one offending write passes its test and fails the run."""
    (tmp_path / "conftest.py").write_text(AUDITED_CONFTEST, encoding="utf-8")
    db = f"fptrack_test_{uuid.uuid4().hex[:12]}"
    (tmp_path / "test_offending.py").write_text(OFFENDING_TEST.format(db=db), encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    root = HERE.parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "FPTRACK_MONGO_URI": session().mongo_uri}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, out + done.stderr
    assert "1 passed" in out and "shard-key audit" in out
    assert "matches: update {'_id': ObjectId(" in out
    assert "filter lacks shard key field(s) page_id (sent by" in out

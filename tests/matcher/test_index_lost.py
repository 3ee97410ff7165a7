"""Redis losing the indexes, all or part, under running processes (a restart without
persistence, a cluster master back without its data, a flush): found by the tag groups'
markers, rebuilt from the store (only the lost groups), no copy missed, and no correct match
ever let go because the index came back short."""

from __future__ import annotations

import json
import threading

import pytest
from pymongo.database import Database
from redis.cluster import RedisCluster

from admin.context import Context
from admin.health import check_indexes
from matcher.errors import IndexUnavailable, StoreUnavailable
from matcher.keys import INDEX_FORMAT, TAG_GROUPS, group_slot
from matcher.matching.engine import Engine
from matcher.settings import Settings
from matcher.store.index_state import IndexState
from matcher.worker import jobs
from tests.conftest import all_keys
from tests.matcher.conftest import crawl, matched, page_of, sample
from tests.servers.local_cluster import LocalCluster

INDEX_BACKENDS = ("server", "cluster")
NAMES = ["lighthouse.txt", "river-town.txt", "tea-history.txt"]


def lose_the_index(engine: Engine) -> None:
    for key in all_keys(engine.redis, f"{engine.settings.redis_prefix}:*"):
        engine.redis.delete(key)


def lose_entries_but_not_markers(engine: Engine) -> None:
    """A degraded index the markers do not reveal (a failover to a replica that missed the
    last writes): every entry of the works' indexes gone, the markers left."""
    prefix = engine.settings.redis_prefix
    for key in all_keys(engine.redis, f"{prefix}:works:*"):
        engine.redis.delete(key)
    assert engine.integrity.snapshot().whole


def active_pairs(engine: Engine) -> set[tuple[str, str]]:
    found = engine.store.matches.active_matches()
    return {(str(m["page_id"]), str(m["work_id"])) for m in found}


def whole_and_counted(engine: Engine) -> bool:
    stored = engine.integrity.state.indexable()
    indexed = {"work": engine.works.simhash.entries(), "page": engine.pages.simhash.entries()}
    return engine.integrity.snapshot().whole and stored == indexed


def test_a_page_after_the_index_was_lost_is_still_matched(engine: Engine) -> None:
    ids = {n: engine.add_work(sample(n), title=n) for n in NAMES}
    assert matched(crawl(engine, "http://p/1", page_of(sample(NAMES[0])))) == {ids[NAMES[0]]}
    before = engine.integrity.snapshot()
    lose_the_index(engine)
    assert engine.integrity.snapshot().lost == list(range(TAG_GROUPS))
    for n, name in enumerate(NAMES, 2):
        assert matched(crawl(engine, f"http://p/{n}", page_of(sample(name)))) == {ids[name]}
    after = engine.integrity.snapshot()
    assert after.whole and not set(after.markers) & set(before.markers)
    rebuilt = f"rebuilt {TAG_GROUPS} of {TAG_GROUPS} tag groups"
    assert any(p.startswith(rebuilt) and "Redis had lost them" in p for p in engine.problems)
    # The pages matched before the loss are back in the pages' index too.
    assert whole_and_counted(engine) and engine.pages.simhash.entries() == len(NAMES) + 1


def test_an_index_of_an_earlier_format_is_rebuilt_on_its_own_after_an_upgrade(
    engine: Engine,
) -> None:
    """What the code before format 3 left in Redis: markers without a format in their name,
    and postings parameters of 7-byte records (a 24-bit check). The upgraded process takes
    no command: every group reads as lost, is cleared and rebuilt from the store, and the
    copies are matched."""
    ids = {n: engine.add_work(sample(n), title=n) for n in NAMES}
    assert matched(crawl(engine, "http://p/1", page_of(sample(NAMES[0])))) == {ids[NAMES[0]]}
    keys, client = engine.keys, engine.redis
    old_params = json.dumps(
        {
            "layout": 2,
            "tag_groups": TAG_GROUPS,
            "window_index": {"bucket_bits": 20, "check_bits": 24},
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    for g in range(TAG_GROUPS):
        client.rename(keys.marker(g), keys.marker(g).replace(f":f{INDEX_FORMAT}:", ":"))
        client.set(keys.windows(keys.works).params(g), old_params)
    upgraded = Engine.open(engine.settings, store=engine.store, redis_client=engine.redis)
    assert upgraded.integrity.snapshot().lost == list(range(TAG_GROUPS))
    for n, name in enumerate(NAMES, 2):
        assert matched(crawl(upgraded, f"http://p/{n}", page_of(sample(name)))) == {ids[name]}
    assert whole_and_counted(upgraded) and upgraded.pages.simhash.entries() == len(NAMES) + 1
    left = {k.decode() for k in all_keys(client, f"{engine.settings.redis_prefix}:index:*")}
    assert left == {keys.marker(g) for g in range(TAG_GROUPS)}  # the old markers cleared
    assert old_params.encode() not in {client.get(keys.windows(keys.works).params(0))}


def test_a_process_started_on_an_emptied_index_rebuilds_the_pages_alone(engine: Engine) -> None:
    """Pages keep their fingerprints on their own documents: a process that starts on an
    index Redis lost whole (no marker left) while the store holds pages and no work does not
    take it for a new deployment's; it rebuilds the pages before matching anything."""
    assert crawl(engine, "http://p/1", page_of(sample(NAMES[0]))) == []
    lose_the_index(engine)
    restarted = Engine.open(engine.settings, store=engine.store, redis_client=engine.redis)
    assert restarted.integrity.snapshot().lost == list(range(TAG_GROUPS))
    restarted.ready()
    assert whole_and_counted(restarted) and restarted.pages.simhash.entries() == 1


def test_one_process_rebuilds_and_the_others_take_its_index(engine: Engine) -> None:
    work_id = engine.add_work(sample(NAMES[1]), title="河镇")
    other = Engine(engine.settings, engine.store, engine.redis)
    lose_the_index(engine)
    assert matched(crawl(engine, "http://p/1", page_of(sample(NAMES[1])))) == {work_id}
    assert matched(crawl(other, "http://p/2", page_of(sample(NAMES[1])))) == {work_id}
    assert not other.problems  # the first process had rebuilt it


def test_the_index_lost_while_a_page_is_matched_is_rebuilt_before_any_write(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    work_id = engine.add_work(sample(NAMES[2]), title="茶史")
    considered = engine.page_writes.considered
    lost = []

    def losing(*args, **kwargs):  # Redis restarts between the reads and the writes
        if not lost:
            lost.append(1)
            lose_the_index(engine)
        return considered(*args, **kwargs)

    monkeypatch.setattr(engine.page_writes, "considered", losing)
    assert matched(crawl(engine, "http://p/1", page_of(sample(NAMES[2])))) == {work_id}
    assert lost and engine.store.matches.count(active_only=True) == 1


def test_a_work_registered_on_a_lost_index_finds_the_others(engine: Engine) -> None:
    first = engine.add_work(sample(NAMES[0]), title="灯塔")
    lose_the_index(engine)
    second = engine.add_work(sample(NAMES[1]), title="河镇")
    assert matched(crawl(engine, "http://p/1", page_of(sample(NAMES[0])))) == {first}
    assert matched(crawl(engine, "http://p/2", page_of(sample(NAMES[1])))) == {second}


def test_a_partial_index_never_retracts_a_match(engine: Engine) -> None:
    ids = {n: engine.add_work(sample(n), title=n) for n in NAMES}
    pages = {n: crawl(engine, f"http://p/{n}", page_of(sample(n))) for n in NAMES}
    assert {n: matched(r) for n, r in pages.items()} == {n: {ids[n]} for n in NAMES}
    before = active_pairs(engine)
    lose_entries_but_not_markers(engine)
    assert engine.works.simhash.entries() == 0  # the index answers nothing now
    for work_id in ids.values():  # the reverse direction on the degraded index
        engine.match_work_against_pages(work_id)
    for records in pages.values():  # and every page matched again
        engine.process_stored_page(str(records[0]["page_id"]))
    assert active_pairs(engine) == before
    # A page whose text changed is let go: the store's own data says so.
    changed = crawl(engine, f"http://p/{NAMES[0]}", page_of(sample("star-voyage.txt")))
    assert not [r for r in changed if r["active"]]
    assert active_pairs(engine) == before - {(str(pages[NAMES[0]][0]["page_id"]), ids[NAMES[0]])}


def test_a_master_restarted_empty_loses_only_its_groups_and_they_are_rebuilt(
    redis_cluster: LocalCluster, cluster_client: RedisCluster, mongo_db: Database
) -> None:
    settings = Settings.from_env(redis_prefix="fptrack-test", mongo_db=mongo_db.name)
    engine = Engine.open(settings, mongo_client=mongo_db.client, redis_client=cluster_client)
    cluster = redis_cluster
    ids = {n: engine.add_work(sample(n), title=n) for n in NAMES}
    for n in NAMES[:2]:
        assert matched(crawl(engine, f"http://p/{n}", page_of(sample(n)))) == {ids[n]}
    before = active_pairs(engine)
    port = cluster.ports[1]
    served = [g for g in range(TAG_GROUPS) if cluster.owner(group_slot(g)) == port]
    assert 0 < len(served) < TAG_GROUPS
    cluster.restart_empty(port)
    assert engine.integrity.snapshot().lost == served
    line = check_indexes(Context(engine=engine))
    assert not line.ok and f"{len(served)} of {TAG_GROUPS} tag groups lost" in line.detail
    # The works registered before are found: their lost groups are rebuilt first.
    name = NAMES[2]
    assert matched(crawl(engine, f"http://p/{name}", page_of(sample(name)))) == {ids[name]}
    assert IndexState(engine.store).health()["last_heal"]["groups"] == served
    assert whole_and_counted(engine)
    assert before <= active_pairs(engine)
    assert check_indexes(Context(engine=engine)).ok


def test_the_heal_job_rebuilds_and_matches_again_what_the_loss_could_touch(
    engine: Engine,
) -> None:
    work = engine.add_work(sample(NAMES[0]), title="灯塔")
    pages, works = [], []

    def heal() -> dict:
        return jobs.heal_indexes(engine, pages.append, works.append)

    assert heal() == {"lost_groups": [], "rebuilt": [], "pages": 0, "works": 0}
    page = crawl(engine, "http://p/1", page_of(sample(NAMES[0])))[0]["page_id"]
    lose_the_index(engine)
    assert not engine.integrity.snapshot().whole
    result = heal()
    assert result["lost_groups"] == list(range(TAG_GROUPS)) and whole_and_counted(engine)
    assert pages == [str(page)] and works == []
    assert heal()["pages"] == 0  # sent once
    assert active_pairs(engine) == {(str(page), work)}


def test_the_heal_job_rebuilds_a_side_short_of_owners(engine: Engine) -> None:
    engine.add_work(sample(NAMES[0]), title="灯塔")
    for n in range(3):
        crawl(engine, f"http://p/{n}", page_of(sample(NAMES[n])))
    lose_entries_but_not_markers(engine)
    assert jobs.heal_indexes(engine, print, print)["rebuilt"] == []  # once: noted
    assert jobs.heal_indexes(engine, print, print)["rebuilt"] == ["work"]
    assert whole_and_counted(engine)


def test_a_rebuild_elsewhere_is_waited_for(engine: Engine) -> None:
    work_id = engine.add_work(sample(NAMES[1]), title="河镇")
    state = IndexState(engine.store)
    assert state.claim("elsewhere", range(TAG_GROUPS), 60)
    lose_the_index(engine)
    engine.integrity.wait = 0.5
    with pytest.raises(IndexUnavailable, match="being rebuilt elsewhere"):
        crawl(engine, "http://p/1", page_of(sample(NAMES[1])))
    line = check_indexes(Context(engine=engine))
    assert not line.ok and line.detail.startswith(f"rebuilding {TAG_GROUPS} of {TAG_GROUPS}")
    state.release("elsewhere")
    assert matched(crawl(engine, "http://p/2", page_of(sample(NAMES[1])))) == {work_id}


def test_threads_of_one_process_rebuild_once(engine: Engine) -> None:
    """The threads of an admin worker share one engine, and its lease holder: one thread
    rebuilds, the others wait for the markers as another process's would."""
    ids = {n: engine.add_work(sample(n), title=n) for n in NAMES}
    lose_the_index(engine)
    start = threading.Barrier(len(NAMES))
    found: dict[str, set[str]] = {}

    def query(name: str) -> None:
        start.wait()
        found[name] = matched(engine.match_text(page_of(sample(name))))

    threads = [threading.Thread(target=query, args=(name,)) for name in NAMES]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert found == {name: {ids[name]} for name in NAMES}
    assert len([p for p in engine.problems if p.startswith("rebuilt ")]) == 1, engine.problems
    assert whole_and_counted(engine)


def test_a_rebuild_whose_process_died_is_taken_over(engine: Engine) -> None:
    work_id = engine.add_work(sample(NAMES[2]), title="茶史")
    assert IndexState(engine.store).claim("died", range(TAG_GROUPS), 1.0)
    lose_the_index(engine)
    engine.integrity.wait = 30
    assert matched(crawl(engine, "http://p/1", page_of(sample(NAMES[2])))) == {work_id}
    assert whole_and_counted(engine)


def test_a_page_stays_in_the_index_when_an_outage_cuts_its_matching_again(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A work registered after its copy was crawled: the reverse-direction task matches the
    page again, and MongoDB fails in the middle. The page's entries stay in the pages' index
    (new ones are added before stale ones go), so the retried task finds it; before, the
    page was taken out of the index first, and the retry missed the copy for good."""
    assert crawl(engine, "http://p/1", page_of(sample(NAMES[1]))) == []
    work = engine.add_work(sample(NAMES[1]), title="河镇")
    save = engine.store.page_marks.mark_processed

    def outage(*args, **kwargs):
        raise StoreUnavailable("MongoDB unavailable in mark_processed: connection reset")

    monkeypatch.setattr(engine.store.page_marks, "mark_processed", outage)
    with pytest.raises(StoreUnavailable):
        engine.match_work_against_pages(work)
    assert engine.pages.simhash.entries() == 1
    monkeypatch.setattr(engine.store.page_marks, "mark_processed", save)
    assert matched(engine.match_work_against_pages(work)) == {work}  # the task's retry
    assert whole_and_counted(engine)

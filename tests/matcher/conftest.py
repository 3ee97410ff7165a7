"""Fixtures of the matcher suite: an engine on the test servers (its indexes on the
3-master cluster too in the modules that set ``INDEX_BACKENDS``), the indexes' storage
(:func:`storage`: the in-memory twin, or Redis on the server or the cluster), and pirate
pages.

Pages reach the engine as crawled pages do: :func:`crawl` stores them through
:class:`matcher.worker.ingest.Ingest` and runs the ``process_page`` task's work
(:meth:`Engine.process_stored_page`) on each page it enqueues.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pymongo
import pytest
from pymongo.database import Database

from matcher.index.memory import MemoryStorage
from matcher.index.redis_io import IndexClient
from matcher.index.storage import RedisStorage, Storage
from matcher.matching.engine import Engine
from matcher.pages import CrawledPage
from matcher.settings import Settings
from matcher.store import Store
from matcher.worker.ingest import Ingest
from tests.support.commands import Commands

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "works"
CHROME_TOP = "盗版小说网 | 首页 | 玄幻 | 都市 | 排行榜 | 登录 注册\n"
CHROME_BOTTOM = "\n本站所有小说均来自网络 版权所有 © 盗版小说网 联系我们 沪ICP备00000000号"
UNRELATED = (
    "今天的城市新闻：地铁三号线延长段完成试运行，沿线新增六座车站，预计下个月正式开通。"
    "市交通部门表示，早晚高峰将加密班次，并在换乘站增设引导人员。与此同时，老城区的道路"
    "改造工程进入收尾阶段，人行道拓宽后增加了自行车停放区。不少市民反映，施工期间的噪音"
    "问题已经得到改善，但部分路口的信号灯配时仍需调整。"
)


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def page_of(*bodies: str) -> str:
    return CHROME_TOP + "\n".join(bodies) + CHROME_BOTTOM


def paragraphs(text: str) -> list[str]:
    return [p for p in text.split("\n\n") if p.strip()]


def matched(records: list[dict]) -> set[str]:
    return {str(r["work_id"]) for r in records}


def prose(rng: random.Random, chars: int) -> str:
    """Text of ``chars`` characters in sentences and paragraphs, drawn from the samples'
    characters: unique enough that two calls share no passage."""
    pool = sorted({c for p in SAMPLES.glob("*.txt") for c in sample(p.name) if c >= "\u4e00"})
    out, size = [], 0
    while size < chars:
        sentence = "".join(rng.choices(pool, k=rng.randint(8, 30))) + rng.choice("，。！？")
        out.append(sentence + ("\n\n" if rng.random() < 0.15 else ""))
        size += len(out[-1])
    return "".join(out)[:chars]


def novel(chapters: int, chapter_chars: int, seed: int = 0) -> tuple[str, list[str]]:
    """A novel with 第N章 headings: its whole text and each chapter's text."""
    rng = random.Random(seed)
    parts = [f"第{n}章 风起{n}\n\n" + prose(rng, chapter_chars) for n in range(1, chapters + 1)]
    return "\n\n".join(parts), parts


@pytest.fixture
def storage(index_backend: str, request: pytest.FixtureRequest) -> Storage:
    """The storage of the test's backend: ``memory`` (:class:`MemoryStorage`, for tests of
    the indexes' logic), or ``server`` and ``cluster`` (:class:`RedisStorage` of
    ``index_client``)."""
    if index_backend == "memory":
        return MemoryStorage()
    return RedisStorage(request.getfixturevalue("index_client"))


@pytest.fixture
def engine(index_backend: str, request: pytest.FixtureRequest, mongo_db: Database) -> Engine:
    """An engine on a fresh database of the MongoDB server and the test's index backend: the
    server, or the cluster, or the in-memory twin (``memory``) in a module's
    ``INDEX_BACKENDS``."""
    settings = Settings.from_env(redis_prefix="fptrack-test", mongo_db=mongo_db.name)
    if index_backend == "memory":
        return Engine.open(settings, mongo_client=mongo_db.client, storage=MemoryStorage())
    client: IndexClient = request.getfixturevalue("index_client")
    return Engine.open(settings, mongo_client=mongo_db.client, redis_client=client)


@pytest.fixture
def works(engine: Engine) -> dict[str, str]:
    names = ["lighthouse.txt", "river-town.txt", "tea-history.txt", "star-voyage.txt"]
    return {n: engine.add_work(sample(n), title=n, source=f"samples/{n}") for n in names}


def crawl(
    engine: Engine, url: str, text: str, *, site: str = "pirate", title: str = "", **links: str
) -> list[dict]:
    """Store a page as the crawler's pipeline does and run its task; its match records.

    ``links``: ``next_url`` and ``prev_url``.
    """
    queued: list[str] = []
    page = CrawledPage(url=url, site=site, title=title, text=text, **links)
    result = Ingest(engine.store, queued.append).page(page)
    for page_id in queued:
        engine.process_stored_page(page_id)
    return engine.store.matches.matches_for("page_id", result.page_id)


@pytest.fixture
def counted(
    mongo_db: Database, mongo_client: pymongo.MongoClient
) -> Iterator[tuple[Store, Commands]]:
    """A store on the test database through a client of its own whose commands are counted."""
    commands = Commands()
    host, port = mongo_client.address
    client: pymongo.MongoClient = pymongo.MongoClient(
        host, port, tz_aware=True, event_listeners=[commands]
    )
    store = Store(client[mongo_db.name])
    store.ensure_indexes()
    commands.names.clear()
    yield store, commands
    client.close()

"""Helpers of the end-to-end tests: the Celery app of this process, sample texts in
pirate-site chrome (waiting: :func:`tests.support.waits.eventually`)."""

from __future__ import annotations

import ast
import json
from collections import Counter
from pathlib import Path
from typing import Any

from matcher.settings import Settings
from matcher.worker.celery_app import make_app

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples" / "works"
CHROME = "书海阁 | 首页 | 玄幻 | 都市 | 排行榜\n{}\n本站小说均来自网络 沪ICP备00000000号"
UNRELATED = (
    "今天的城市新闻：地铁三号线延长段完成试运行，沿线新增六座车站，预计下个月正式开通。"
    "市交通部门表示，早晚高峰将加密班次，并在换乘站增设引导人员。与此同时，老城区的道路"
    "改造工程进入收尾阶段，人行道拓宽后增加了自行车停放区。不少市民反映，施工期间的噪音"
    "问题已经得到改善，但部分路口的信号灯配时仍需调整。"
)


# The tests' entry point reads the settings (tests/conftest.py set the FPTRACK_* variables),
# once; the default app, so that the shared tasks' ``.delay`` go through it.
app = make_app(Settings.from_env())
app.set_default()


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def queued_pages(broker: Any, queue: str = "fptrack") -> Counter[str]:
    """The page ids of the page tasks waiting on ``queue`` of the broker (a Redis client):
    one per ``process_page``, each of a ``process_pages`` batch."""
    out: Counter[str] = Counter()
    for raw in broker.lrange(queue, 0, -1):
        message = json.loads(raw)
        name = message["headers"]["task"]
        [arg] = ast.literal_eval(message["headers"]["argsrepr"])
        assert name in ("fptrack.process_page", "fptrack.process_pages"), name
        out.update(map(str, arg) if name == "fptrack.process_pages" else [str(arg)])
    return out

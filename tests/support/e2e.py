"""Helpers of the end-to-end tests: the Celery app of this process, sample texts in
pirate-site chrome (waiting: :func:`tests.support.waits.eventually`)."""

from __future__ import annotations

from pathlib import Path

from matcher.celery_app import make_app
from matcher.settings import Settings

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

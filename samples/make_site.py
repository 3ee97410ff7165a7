"""Generate ``samples/site/``: a small imitation pirate site for ``fptrack scan`` to crawl.

The site is "书海阁" (an invented pirate novel-and-article site): every page carries the same
chrome (logo, nav bar, breadcrumbs, an ad banner, a footer with a fake ICP number) around
its main text. Some pages copy the registered works of ``samples/works/`` with the edits
that copies in the wild use to evade detection; the others are original texts on unrelated
topics (written for this sample) and pages of pure boilerplate. ``samples/site/README.md``,
written by this module too, lists every page with what it holds and what a scan should
report for it: that table is the ground truth to check ``scan.json`` against.

===========================  ==========================================================
page                         edit
===========================  ==========================================================
``book/1021/1.html``         ``lighthouse.txt`` copied exactly (UTF-8)
``book/1022/1.html``         ``river-town.txt``, ~8% of characters replaced by homophones
``tw/book/1023/1.html``      ``tea-history.txt`` in Traditional script (OpenCC s2t), Big5
``book/1024/9.html``         ``star-voyage.txt``, first half, ad lines, "下一页" link
``book/1024/9_2.html``       ``star-voyage.txt``, second half, ad lines, "上一页" link
``book/1025/1.html``         ``chef-diary.txt``, 30% of paragraphs dropped, rest shuffled, GBK
``news/5501.html``           ~40% of ``tea-brewing.txt`` (a middle part) inside unrelated news
``book/1026/1.html``         all of ``sanguo-01.txt`` plus the last quarter of ``lighthouse.txt``
===========================  ==========================================================

Run ``python samples/make_site.py`` to rewrite the folder; the output is deterministic (a
fixed seed, no clock, no network), so the committed files equal a fresh run (the tests
check this). Only the standard library and OpenCC are used. The module is longer than
most because the unrelated texts and the site's boilerplate live in it.
"""

from __future__ import annotations

import html
import posixpath
import random
import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import opencc

HERE = Path(__file__).resolve().parent
WORKS_DIR = HERE / "works"
SITE_DIR = HERE / "site"

SEED = 20240612
SITE_NAME = "书海阁"
SITE_DOMAIN = "www.shuhaige-example.com"
MOBILE_DOMAIN = "m.shuhaige-example.com"
ICP_NUMBER = "京ICP备00000000号-1"

HOMOPHONE_RATE = 0.08
DROP_RATE = 0.30
EXCERPT_SHARE = 0.40
QUARTER = 0.25

# Same pinyin (tone aside) for every pair, so pinyin initials are unchanged.
HOMOPHONES: dict[str, str] = {
    "的": "地", "地": "的", "得": "的", "在": "再", "再": "在", "他": "她", "她": "他",
    "它": "他", "做": "作", "作": "做", "以": "已", "已": "以", "像": "象", "象": "像",
    "那": "哪", "哪": "那", "到": "道", "道": "到", "是": "事", "事": "是", "里": "理",
    "理": "里", "时": "实", "实": "时", "一": "衣", "了": "乐", "着": "者", "们": "门",
    "门": "们", "上": "尚", "下": "夏", "水": "睡", "河": "和", "和": "河", "人": "仁",
    "家": "加", "大": "达", "小": "晓", "天": "添", "有": "又", "又": "有", "也": "野",
    "就": "旧", "个": "各", "不": "布", "只": "纸", "知": "之", "看": "砍", "去": "趣",
    "会": "汇", "还": "孩", "镇": "阵", "青": "清", "清": "青", "溪": "西", "西": "溪",
    "石": "时", "桥": "乔", "雨": "语", "声": "生", "生": "声", "心": "新", "新": "心",
    "风": "峰", "花": "华", "春": "纯", "秋": "求", "冬": "东", "东": "冬", "母": "木",
    "亲": "琴", "头": "投", "后": "候", "前": "钱", "边": "编", "些": "鞋", "很": "狠",
    "起": "气", "气": "起", "开": "凯", "见": "件", "手": "首", "想": "响", "样": "洋",
    "光": "广", "老": "劳", "月": "越", "几": "机", "从": "丛", "对": "队", "岸": "按",
    "来": "莱", "子": "字", "我": "卧", "出": "初", "成": "城", "城": "成", "过": "国",
    "满": "慢", "船": "传", "桂": "贵", "外": "歪", "油": "游", "菜": "才", "白": "百",
    "香": "乡", "乡": "香", "锅": "郭", "早": "枣", "灯": "登", "路": "鹿", "最": "醉",
    "带": "代", "间": "尖", "街": "接", "鱼": "余", "铺": "扑", "红": "洪", "黄": "皇",
    "点": "典", "火": "伙", "甜": "田", "田": "甜", "叶": "业", "粉": "分", "豆": "斗",
    "巷": "向", "讲": "将", "故": "固", "许": "须", "多": "朵", "听": "厅", "记": "己",
    "碗": "晚", "放": "方", "远": "元", "亮": "量", "快": "块", "节": "结", "角": "脚",
}  # fmt: skip

AD_LINES: tuple[str, ...] = (
    f"请访问 {SITE_DOMAIN} 阅读最新章节",
    f"一秒记住【{SITE_NAME}】{SITE_DOMAIN}，精彩小说无弹窗免费阅读！",
    f"手机用户请浏览 {MOBILE_DOMAIN} 阅读，更优质的阅读体验。",
    f"最新章节请到{SITE_NAME}，本站域名 {SITE_DOMAIN}",
)
CONTINUE_LINE = "本章未完，请点击下一页继续阅读"
BANNER_AD = f"{SITE_NAME} {SITE_DOMAIN} 最新章节抢先看，全站免费无弹窗"

WEATHER = """本市发布未来三天天气预报 周末降温明显

本市气象台今天上午发布消息，受一股较强冷空气影响，未来三天本市将出现明显降温和大风天气，请市民及时添加衣物，注意出行安全。

具体来看，今天白天多云转阴，偏北风三到四级，最高气温十九摄氏度；夜间起风力逐渐加大，阵风可达七级，最低气温降至八摄氏度左右。明天阴有小到中雨，全天气温在六到十一摄氏度之间，体感较为阴冷。后天雨水减弱，转为多云，但早晚温差较大，郊区局部地区可能出现今年入秋以来的第一次霜冻。

气象专家提醒，大风天气期间，请尽量远离广告牌、脚手架和老旧围墙，不要在高大树木下长时间停留；住在高层的居民应收好阳台上的花盆和晾晒衣物，防止高空坠物。驾车出行的朋友要注意减速慢行，保持安全车距，遇到能见度较低的路段及时打开雾灯。

农业部门建议，设施大棚应提前加固棚膜、检查排水沟，露天种植的蔬菜可以覆盖地膜或草帘保温；果园要抓紧采收晚熟品种，减少低温带来的损失。

据预测，这次降温过程将持续到本周日，下周一开始气温将缓慢回升，天气以晴到多云为主，空气质量总体良好，适合户外活动。
"""

SPORTS = """城市业余足球联赛决赛落幕 “老街坊”队点球大战夺冠

昨晚，第九届城市业余足球联赛决赛在市体育中心二号球场举行。由退休工人和附近居民组成的“老街坊”队，在常规时间与“蓝鲸快递”队战成二比二平，最终凭借点球大战五比四的比分惊险胜出，首次捧起冠军奖杯。

比赛开始仅八分钟，“蓝鲸快递”队的年轻前锋就利用一次快速反击抢先破门。“老街坊”队并没有乱了阵脚，他们放慢节奏，耐心地在中场倒脚，终于在第三十五分钟由左边锋头球扳平。下半场双方你来我往，“蓝鲸快递”队凭借一记二十五米外的远射再次领先，看台上的快递员们敲着纸箱欢呼。比赛还剩五分钟时，“老街坊”队获得前场任意球，四十八岁的后卫老孟一脚弧线球直挂死角，把比赛拖进了点球大战。

点球大战中，双方前四轮全部罚进。第五轮，“老街坊”队门将扑出了对方的射门，随后替补登场的高中生小许冷静推射得手，全场沸腾。

赛后，主教练笑着说，球队平均年龄接近四十五岁，每周只能在下班后训练两次，能走到今天靠的是默契和坚持。组委会介绍，本届联赛共有六十四支球队报名，参赛球员超过一千二百人，明年还将增设女子组和少年组的比赛。
"""

TECH = """扫地机器人青禾S3上手体验：两千元价位的省心之选

最近两周，我们在一套九十平方米的两居室里试用了青禾S3扫地机器人。这款产品定价一千九百九十九元，主打激光导航、自动集尘和拖扫一体，目标用户是没有太多时间做家务的上班族。

外观方面，S3延续了圆形机身设计，直径三十四厘米，高度不到十厘米，可以钻到大部分沙发和床底下清扫。顶部的激光雷达模块略微凸起，按键只有电源和回充两个，其余操作都在手机应用里完成。首次开机后，它用了大约十二分钟绕全屋跑了一圈，生成的地图相当准确，还能自动划分出客厅、卧室和厨房。

清洁效果是大家最关心的。在木地板上，S3对饼干碎屑、猫砂和头发的清理都比较彻底；遇到地毯时会自动提高吸力，不过长毛地毯边缘偶尔会卷起。拖地功能只能算合格，对付日常灰尘没有问题，干涸的酱汁污渍则需要来回多拖几遍。避障表现让人惊喜，地上的拖鞋、数据线和宠物碗基本都能绕开，两周里只被袜子缠住过一次。

续航方面，满电状态下可以连续工作约一百五十分钟，清扫一遍全屋只用掉不到一半电量。集尘座的尘袋容量为三升，按我们的使用频率，大约一个半月更换一次。噪音在标准模式下约为六十分贝，开着电视时几乎察觉不到。

总体来看，青禾S3没有明显短板，适合户型规整、希望少操心的家庭；如果家里地毯较多或者对拖地要求很高，可以考虑价格更高的型号。
"""

TRAVEL = """敦煌三日：在鸣沙山等一场日落

从兰州坐了一夜的火车，清晨醒来时，窗外已经是一望无际的戈壁。灰褐色的砾石一直铺到天边，偶尔闪过几丛骆驼刺，远处的祁连山顶还积着雪。下午一点，列车终于停靠敦煌站，干燥的风扑面而来，带着一股晒热了的尘土味。

第一天我们去了莫高窟。为了保护壁画，洞窟每天限量开放，需要提前在网上预约。讲解员带着我们参观了八个洞窟，手电筒的光扫过斑驳的墙面，飞天的飘带、菩萨的衣褶和供养人的面容一一浮现。看得最久的是一幅描绘商队的壁画，驼铃、货物和胡人的长靴都画得清清楚楚，仿佛能听见一千多年前的喧哗。

第二天傍晚，我们骑着骆驼进了鸣沙山。沙丘的棱线像刀刻一样锋利，踩上去沙子簌簌往下流，爬十步要退五步。好不容易登上坡顶，太阳正缓缓沉向西边的沙海，整片山丘由金黄变成橘红，又慢慢染成紫灰色。山脚下的月牙泉静静地躺着，泉边的芦苇在风里起伏，很难想象它在沙漠里存在了这么多年。

第三天我们租车去了雅丹地貌公园。风把泥岩切割成各种形状，有的像停泊的船队，有的像蹲坐的狮子，司机说夜里风大时，这里会发出呜呜的怪声，所以当地人也叫它魔鬼城。回城的路上，我们在路边的小馆子吃了驴肉黄面，喝了杏皮水，酸甜冰凉，一路的疲惫一下子消散了。

小贴士：敦煌昼夜温差大，即使夏天也要带一件外套；防晒霜、墨镜和纱巾必不可少；进沙山可以租一双防沙鞋套，省得鞋里灌满沙子。
"""

RECIPE = """香蕉燕麦小松饼（烤箱版）

用料（十二个）：熟透的香蕉三根，燕麦片一百五十克，低筋面粉八十克，鸡蛋两个，牛奶一百二十毫升，植物油三十毫升，红糖四十克，泡打粉五克，盐一小撮，核桃碎适量。

一、烤箱预热至一百八十摄氏度，在十二连模具里垫好纸托。

二、香蕉剥皮放进大碗，用叉子压成细腻的泥，留一点小颗粒口感更好。

三、加入鸡蛋、牛奶、植物油和红糖，用手动打蛋器搅拌到红糖完全溶化。

四、另取一个碗，把燕麦片、低筋面粉、泡打粉和盐混合均匀，然后倒入香蕉液中，用刮刀翻拌到看不见干粉即可，不要过度搅拌，否则口感会发硬。

五、把面糊舀进纸托，八分满就够了，表面撒上核桃碎。

六、放入烤箱中层烤二十二到二十五分钟，用牙签插进中心，拔出来没有粘连就说明熟了。

七、取出后在烤架上晾十分钟再脱模。

小贴士：香蕉越熟越甜，表皮长满黑斑的最好，这样可以少放糖；燕麦片选即食款或者传统款都可以，传统款嚼劲更足。吃不完的松饼装进密封袋冷冻，可以保存一个月，早上用微波炉加热三十秒，就是一顿热乎乎的早餐。
"""

GARDEN = """阳台种番茄，新手也能收获满满

很多住在城市里的朋友都想拥有一小块菜地，其实一个朝南的阳台就足够了。番茄喜光、耐热，生长周期不长，是阳台种菜的入门之选。

选种时，建议挑选樱桃番茄或矮生品种，植株紧凑，结果多，不需要太大的空间。春季气温稳定在十五摄氏度以上时就可以播种，先用育苗块催芽，长出四五片真叶后再移栽到深度不少于三十厘米的花盆里。土壤最好用园艺营养土混合少量腐熟的有机肥，盆底铺一层陶粒，保证排水通畅。

番茄每天至少需要六个小时的直射阳光。浇水要见干见湿，表层土摸起来发干时一次浇透，避免积水烂根；开花结果期需水量大，夏天傍晚可能需要每天浇一次。植株长到四十厘米左右时要插上支架，用软绳把主茎松松地绑住，并及时摘掉叶腋里长出的侧芽，让养分集中供给果实。

阳台通风不如露天，容易招来蚜虫和白粉虱，可以挂几张黄色粘虫板，或者用稀释的肥皂水喷洒叶片背面。开花时如果阳台上没有昆虫帮忙，可以每天上午轻轻摇动花枝，帮助授粉。

从播种到第一批果实转红，大约需要三个月。亲手摘下的番茄也许没有超市里的那么整齐，但咬下去酸甜多汁，那份成就感是买不来的。
"""

NEWS_BEFORE = """市图书馆延长夜间开放 旧物交换市集周六开张

本报讯：记者从市图书馆获悉，自下月一日起，图书馆总馆将把周五和周六的闭馆时间由晚上八点推迟到晚上十点，自习区、少儿阅览区和数字体验区同步延长开放。馆方介绍，去年以来夜间到馆人数持续增长，不少上班族希望下班后能有一个安静的读书去处。延长开放期间，馆内将增加安保和保洁人员，地铁站至图书馆的接驳公交也会相应调整末班时间。

另外，由多个社区联合举办的旧物交换市集将于本周六上午九点在中心广场开张。居民可以带上闲置的图书、玩具、小家电和衣物，以物换物或者低价转让，所得收入将捐给社区儿童活动中心。主办方提醒，参加交换的电器需要能够正常使用，衣物应清洗干净。
"""

NEWS_AFTER = """下期预告：本版将邀请资深家居设计师，聊聊小户型收纳的十个好办法，欢迎读者来信提问。

（本版编辑：韩雪　校对：周扬）
"""

ABOUT = f"""关于{SITE_NAME}

{SITE_NAME}是一个免费的小说阅读网站，致力于为广大书友提供最新、最全的网络小说与精选美文，全站无弹窗、无需注册，打开即可阅读。

本站所有作品均由网友上传或转载自互联网公开资源，版权归原作者所有，仅供书友试读交流，请勿用于商业用途。如果您喜欢某部作品，请购买正版支持作者。

如果本站内容侵犯了您的合法权益，请将权属证明发送到下面的邮箱，我们将在核实后四十八小时内删除：

service@shuhaige-example.com

商务合作与广告投放请联系 ad@shuhaige-example.com。
"""

FOOTER_NOTE = (
    "本站所有小说均为网友上传或转载，转载至本站只为方便书友阅读交流，如有侵权请联系我们删除。"
)


@dataclass(frozen=True)
class Work:
    """A registered work: its file name, title (first line) and body paragraphs."""

    name: str
    title: str
    body: tuple[str, ...]

    @property
    def chars(self) -> int:
        """Characters of the title and body paragraphs (line breaks not counted)."""
        return len(self.title) + sum(len(p) for p in self.body)


@dataclass(frozen=True)
class Page:
    """One generated file: where it goes, its bytes and its row in the ground-truth table."""

    path: str
    data: bytes
    charset: str
    contents: str
    expected: str

    @property
    def copies(self) -> list[str]:
        """The works a scan should report this page as copying (named in ``expected``)."""
        return re.findall(r"`([\w-]+\.txt)`", self.expected) if self.is_copy else []

    @property
    def is_copy(self) -> bool:
        """Whether the page is expected to be reported as a copy."""
        return self.expected.startswith("copy of")


def read_work(name: str, works_dir: Path = WORKS_DIR) -> Work:
    """Read ``works_dir/name``: the first non-empty line is the title, the rest paragraphs."""
    return paragraphs_work(name, (works_dir / name).read_text(encoding="utf-8"))


def paragraphs_work(name: str, text: str) -> Work:
    """Split a text into title and paragraphs (non-empty lines, stripped)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return Work(name=name, title=lines[0], body=tuple(lines[1:]))


def substitute_homophones(
    paragraphs: Sequence[str], rate: float, rng: random.Random
) -> tuple[list[str], int]:
    """Replace ``rate`` of all characters by same-pinyin characters from ``HOMOPHONES``.

    >>> substitute_homophones(["他在河边"], 0.5, random.Random(1))[1]
    2
    """
    total = sum(len(p) for p in paragraphs)
    slots = [(i, j) for i, p in enumerate(paragraphs) for j, ch in enumerate(p) if ch in HOMOPHONES]
    chosen = rng.sample(slots, min(len(slots), round(rate * total)))
    edited = [list(p) for p in paragraphs]
    for i, j in chosen:
        edited[i][j] = HOMOPHONES[edited[i][j]]
    return ["".join(chars) for chars in edited], len(chosen)


def diary_entries(work: Work) -> list[tuple[str, str]]:
    """Pair each diary date line with the paragraph that follows it."""
    body = work.body
    return [(body[i], body[i + 1]) for i in range(0, len(body) - 1, 2)]


def drop_and_shuffle(
    entries: Sequence[tuple[str, str]], rate: float, rng: random.Random
) -> list[tuple[str, str]]:
    """Drop ``rate`` of the entries at random and shuffle the rest (never left in order)."""
    keep = sorted(rng.sample(range(len(entries)), len(entries) - round(rate * len(entries))))
    order = list(keep)
    while order == keep:
        rng.shuffle(order)
    return [entries[i] for i in order]


def middle_run(
    paragraphs: Sequence[str], total: int, share: float, tolerance: float = 0.03
) -> tuple[int, int]:
    """The most central run of paragraphs ``[start, stop)`` holding ``share`` of ``total``.

    Runs within ``tolerance`` of ``share`` come first, the most central of them wins; the
    first and last paragraphs are never taken.
    """
    best: tuple[bool, float, float, int, int] | None = None
    n = len(paragraphs)
    for start in range(1, n - 1):
        for stop in range(start + 1, n):
            miss = abs(sum(len(p) for p in paragraphs[start:stop]) / total - share)
            centre = abs((start + stop) / 2 - n / 2)
            key = (miss > tolerance, centre, miss, start, stop)
            if best is None or key < best:
                best = key
    assert best is not None
    return best[3], best[4]


def tail_run(paragraphs: Sequence[str], total: int, share: float) -> int:
    """The start of the final paragraphs whose length is nearest ``share`` of ``total``."""
    sizes = [
        (abs(sum(len(p) for p in paragraphs[k:]) / total - share), k)
        for k in range(1, len(paragraphs))
    ]
    return min(sizes)[1]


def split_half(paragraphs: Sequence[str]) -> int:
    """The paragraph index where the first half of the characters ends."""
    total = sum(len(p) for p in paragraphs)
    running = 0
    for index, paragraph in enumerate(paragraphs):
        running += len(paragraph)
        if running * 2 >= total:
            return index + 1
    return len(paragraphs)


def with_ads(paragraphs: Sequence[str], every: int, start: int = 0) -> list[str]:
    """Insert one of ``AD_LINES`` after every ``every`` paragraphs, cycling from ``start``."""
    out: list[str] = []
    ad = start
    for index, paragraph in enumerate(paragraphs, 1):
        out.append(paragraph)
        if index % every == 0 and index < len(paragraphs):
            out.append(AD_LINES[ad % len(AD_LINES)])
            ad += 1
    return out


# --- HTML ---------------------------------------------------------------------------------


def esc(text: str) -> str:
    """Escape text for HTML content."""
    return html.escape(text, quote=False)


def link(page: str, target: str, text: str) -> str:
    """An ``<a>`` from ``page`` to ``target`` (both site-relative paths), relative href."""
    href = posixpath.relpath(target, posixpath.dirname(page) or ".")
    return f'<a href="{href}">{esc(text)}</a>'


def chapter_text(paragraphs: Iterable[str]) -> str:
    """Paragraphs the pirate-site way: indented with four no-break spaces, ``<br><br>``."""
    return "".join(f"&nbsp;&nbsp;&nbsp;&nbsp;{esc(p)}<br><br>\n" for p in paragraphs)


def article_text(paragraphs: Iterable[str]) -> str:
    """Paragraphs as ``<p>`` elements."""
    return "".join(f"<p>{esc(p)}</p>\n" for p in paragraphs)


def layout(
    page: str,
    title: str,
    charset: str,
    crumbs: Sequence[tuple[str, str]],
    body: str,
) -> str:
    """The whole page: head, header and nav bar, breadcrumbs, banner ad, ``body``, footer."""
    nav = " ".join(
        link(page, target, text)
        for target, text in (
            ("index.html", "首页"),
            ("list/novel.html", "小说书库"),
            ("list/article.html", "资讯频道"),
            ("about.html", "关于本站"),
        )
    )
    about = link(page, "about.html", "关于我们")
    trail = [link(page, "index.html", SITE_NAME)]
    trail += [link(page, target, text) if target else esc(text) for target, text in crumbs]
    return f"""<!DOCTYPE html>
<html>
<head>
<meta charset="{charset}">
<title>{esc(title)}_{SITE_NAME}</title>
<meta name="keywords" content="{esc(title)},{SITE_NAME},免费小说,最新章节">
<style>.nav a {{ margin: 0 8px }} #content {{ line-height: 2 }} .ad {{ color: #c00 }}</style>
</head>
<body>
<div class="header">
  <div class="logo">{link(page, "index.html", SITE_NAME)} <span>{SITE_DOMAIN}</span></div>
  <div class="nav">{nav}</div>
  <div class="search">搜索：<input name="q" placeholder="书名或作者"> <button>搜索</button></div>
</div>
<div class="con_top">{" &gt; ".join(trail)}</div>
<div class="ad">{esc(BANNER_AD)}</div>
{body}<div class="footer">
  <p>{esc(FOOTER_NOTE)}</p>
  <p>Copyright &copy; 2024 {SITE_NAME} {SITE_DOMAIN} All Rights Reserved. {about}</p>
  <p>{ICP_NUMBER}</p>
</div>
</body>
</html>
"""


def chapter(
    page: str,
    title: str,
    book: str,
    paragraphs: Sequence[str],
    pager: str = "",
    charset: str = "utf-8",
) -> str:
    """A chapter page: heading, the text in ``<div id="content">`` and the pager below."""
    catalogue = link(page, "list/novel.html", "章节目录")
    bottom = f'<div class="bottem">{catalogue}{" " + pager if pager else ""}</div>\n'
    body = (
        f'<div class="bookname"><h1>{esc(title)}</h1></div>\n'
        f'<div id="content">\n{chapter_text(paragraphs)}</div>\n{bottom}'
    )
    crumbs = [("list/novel.html", "小说书库"), ("", book), ("", "正文")]
    return layout(page, title, charset, crumbs, body)


def article(page: str, title: str, paragraphs: Sequence[str], about: bool = False) -> str:
    """A news/article page (heading, source line, ``<p>`` paragraphs), or the about page."""
    source = "" if about else f'<div class="meta">来源：{SITE_NAME}综合　编辑：小书</div>\n'
    body = (
        f'<div class="article">\n<h1>{esc(title)}</h1>\n{source}{article_text(paragraphs)}</div>\n'
    )
    crumbs = [("", "关于本站")] if about else [("list/article.html", "资讯频道"), ("", "正文")]
    return layout(page, title, "utf-8", crumbs, body)


def link_list(page: str, title: str, links: Sequence[tuple[str, str]]) -> str:
    """A page of links only (the index and the two list pages)."""
    items = "".join(f"<li>{link(page, target, text)}</li>\n" for target, text in links)
    body = f'<div class="list">\n<h2>{esc(title)}</h2>\n<ul>\n{items}</ul>\n</div>\n'
    return layout(page, title, "utf-8", [] if page == "index.html" else [("", title)], body)


def malformed(page: str, work: Work) -> str:
    """A page of broken HTML: unclosed ``<p>``, ``<div>``, ``<b>``, ``<font>``, stray end tags."""
    paragraphs = "".join(f"<p>{esc(p)}\n" for p in work.body)
    home, channel = link(page, "index.html", "首页"), link(page, "list/article.html", "资讯频道")
    return f"""<html><head>
<meta charset="utf-8">
<title>{esc(work.title)}_{SITE_NAME}</title>
<body bgcolor=#ffffff>
<div class=header><b>{SITE_NAME}</b> {home} {channel}
<div class="con_top">{link(page, "index.html", SITE_NAME)} &gt; 园艺 &gt; 正文
<div class="article"><h1>{esc(work.title)}</h1>
<font color=red><b>{esc(BANNER_AD)}</font>
{paragraphs}<table><tr><td>{link(page, "about.html", "关于我们")}<td>{ICP_NUMBER}
</span></div></div>
"""


# --- The site -----------------------------------------------------------------------------


def encode(text: str, charset: str) -> bytes:
    """Encode a page; characters the charset lacks become numeric character references."""
    return text.encode(charset, errors="xmlcharrefreplace")


def pct(part: int, whole: int) -> str:
    """``part`` of ``whole`` as a rounded percentage."""
    return f"{100 * part / whole:.0f}%"


def build_pages(works_dir: Path = WORKS_DIR) -> list[Page]:
    """Every file of the site, in table order, with its ground-truth description."""
    rng = random.Random(SEED)
    s2t = opencc.OpenCC("s2t")
    lighthouse = read_work("lighthouse.txt", works_dir)
    river = read_work("river-town.txt", works_dir)
    tea_history = read_work("tea-history.txt", works_dir)
    star = read_work("star-voyage.txt", works_dir)
    chef = read_work("chef-diary.txt", works_dir)
    brewing = read_work("tea-brewing.txt", works_dir)
    sanguo = read_work("sanguo-01.txt", works_dir)
    pages: list[Page] = []

    def add(path: str, text: str, contents: str, expected: str, cs: str = "utf-8") -> None:
        pages.append(Page(path, encode(text, cs), cs, contents, expected))

    novels = [
        ("book/1021/1.html", "灯塔"),
        ("book/1022/1.html", "河埠四时"),
        ("tw/book/1023/1.html", "茶史漫谈（繁體版）"),
        ("book/1024/9.html", "启明号 第九章 静默之歌"),
        ("book/1025/1.html", "灶台边的日子"),
        ("book/1026/1.html", "三国演义 第一回（附：灯塔 节选）"),
    ]
    articles = [
        ("news/5501.html", "市图书馆延长夜间开放 旧物交换市集周六开张"),
        ("news/5502.html", "本市发布未来三天天气预报"),
        ("news/5503.html", "城市业余足球联赛决赛落幕"),
        ("tech/7701.html", "扫地机器人青禾S3上手体验"),
        ("travel/8801.html", "敦煌三日：在鸣沙山等一场日落"),
        ("life/6601.html", "香蕉燕麦小松饼（烤箱版）"),
        ("life/6602.html", "阳台种番茄，新手也能收获满满"),
    ]
    index_links = [
        ("list/novel.html", "小说书库"),
        ("list/article.html", "资讯频道"),
        novels[0],
        novels[3],
        articles[1],
        ("about.html", "关于本站"),
    ]
    links_only = "links only (site chrome)"
    add("index.html", link_list("index.html", "书海阁首页", index_links), links_only, "no match")
    add(
        "list/novel.html",
        link_list("list/novel.html", "小说书库", novels),
        links_only,
        "no match",
    )
    add(
        "list/article.html",
        link_list("list/article.html", "资讯频道", articles),
        links_only,
        "no match",
    )
    about = paragraphs_work("about", ABOUT)
    add(
        "about.html",
        article("about.html", about.title, about.body, about=True),
        "boilerplate only (about us, disclaimer, contact)",
        "no match",
    )
    add("robots.txt", "User-agent: *\nAllow: /\n", "robots.txt allowing everything", "—")

    # 1. exact copy
    path = "book/1021/1.html"
    add(
        path,
        chapter(path, lighthouse.title, lighthouse.title, lighthouse.body),
        "`lighthouse.txt`, exact copy, UTF-8",
        "copy of `lighthouse.txt` (containment ~100%)",
    )

    # 2. homophones
    path = "book/1022/1.html"
    edited, count = substitute_homophones(river.body, HOMOPHONE_RATE, rng)
    body_chars = sum(len(p) for p in river.body)
    add(
        path,
        chapter(path, river.title, river.title, edited),
        f"`river-town.txt`, {count} of {body_chars} characters ({pct(count, body_chars)}) "
        "replaced by homophones (same pinyin, e.g. 在→再, 的→地)",
        "copy of `river-town.txt` (pinyin-initial fingerprints unchanged)",
    )

    # 3. Traditional script, Big5
    path = "tw/book/1023/1.html"
    simplified = chapter(path, tea_history.title, tea_history.title, tea_history.body, "", "big5")
    add(
        path,
        s2t.convert(simplified),
        "`tea-history.txt` converted to Traditional script (OpenCC s2t), encoded Big5 "
        "(characters Big5 lacks, such as 爲 and 裏, as `&#NNNNN;`)",
        "copy of `tea-history.txt`",
        "big5",
    )

    # 4. one chapter over two pages, with ad lines
    first, second = "book/1024/9.html", "book/1024/9_2.html"
    half = split_half(star.body)
    part_one = [*with_ads(star.body[:half], 4), CONTINUE_LINE]
    part_two = with_ads(star.body[half:], 4, start=2)
    add(
        first,
        chapter(first, f"{star.title}（1/2）", "启明号", part_one, link(first, second, "下一页")),
        f"`star-voyage.txt`, paragraphs 1-{half} of {len(star.body)}, ad lines inserted, "
        'ends with "本章未完…" and a "下一页" link to page 2',
        "copy of `star-voyage.txt` (half of it; matched alone and as part 1 of the split "
        "chapter with page 2)",
    )
    add(
        second,
        chapter(second, f"{star.title}（2/2）", "启明号", part_two, link(second, first, "上一页")),
        f"`star-voyage.txt`, paragraphs {half + 1}-{len(star.body)}, ad lines inserted, "
        'a "上一页" link back',
        "copy of `star-voyage.txt` (the other half; part 2 of the split chapter, a page "
        "record and a match of its own)",
    )

    # 5. paragraphs dropped and shuffled, GBK
    path = "book/1025/1.html"
    entries = diary_entries(chef)
    kept = drop_and_shuffle(entries, DROP_RATE, rng)
    dropped = len(entries) - len(kept)
    lines = [line for entry in kept for line in entry]
    add(
        path,
        chapter(path, chef.title, chef.title, lines, "", "gbk"),
        f"`chef-diary.txt`, {dropped} of {len(entries)} diary entries (date + text: "
        f"{2 * dropped} of {len(chef.body)} paragraphs) dropped, the rest shuffled, encoded GBK",
        f"copy of `chef-diary.txt` (containment ~{pct(sum(map(len, lines)), chef.chars)})",
        "gbk",
    )

    # 6. an excerpt inside a news page
    path = "news/5501.html"
    start, stop = middle_run(brewing.body, brewing.chars, EXCERPT_SHARE)
    excerpt = brewing.body[start:stop]
    before = paragraphs_work("news", NEWS_BEFORE)
    after = paragraphs_work("after", NEWS_AFTER)
    news = [*before.body, "【生活小课堂】泡茶的讲究", *excerpt, *after.body]
    share = sum(len(p) for p in excerpt)
    add(
        path,
        article(path, before.title, news),
        f"news page (library hours, flea market) quoting paragraphs {start + 1}-{stop} "
        f"(of {len(brewing.body)}) of "
        f"`tea-brewing.txt` ({pct(share, brewing.chars)} of it, a contiguous middle part)",
        f"copy of `tea-brewing.txt` (excerpt, containment ~{pct(share, brewing.chars)})",
    )

    # 7. two works on one page
    path = "book/1026/1.html"
    tail = tail_run(lighthouse.body, lighthouse.chars, QUARTER)
    quarter = lighthouse.body[tail:]
    both = [sanguo.title, *sanguo.body, "推荐阅读：灯塔（节选）", *quarter]
    quarter_share = sum(len(p) for p in quarter)
    add(
        path,
        chapter(path, "三国演义 第一回（附：灯塔 节选）", "三国演义", both),
        f"all of `sanguo-01.txt`, then the last {len(quarter)} paragraphs of `lighthouse.txt` "
        f"({pct(quarter_share, lighthouse.chars)} of it)",
        "copy of `sanguo-01.txt` (containment ~100%) and of `lighthouse.txt` "
        f"(containment ~{pct(quarter_share, lighthouse.chars)})",
    )

    # 8. unrelated pages, 9. malformed HTML
    for (path, _), text, topic in zip(
        articles[1:6],
        (WEATHER, SPORTS, TECH, TRAVEL, RECIPE),
        ("weather report", "sports news", "tech review", "travel notes", "recipe (banana muffins)"),
        strict=True,
    ):
        work = paragraphs_work(path, text)
        add(
            path,
            article(path, work.title, work.body),
            f"unrelated original text: {topic} ({work.chars} characters)",
            "not a copy",
        )
    garden = paragraphs_work("garden", GARDEN)
    path = "life/6602.html"
    add(
        path,
        malformed(path, garden),
        f"malformed HTML (unclosed tags, no `</html>`) around an unrelated original text: "
        f"balcony gardening ({garden.chars} characters)",
        "not a copy",
    )
    return pages


class _Hrefs(HTMLParser):
    """Collects the ``href`` of every ``<a>``."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs.extend(value for name, value in attrs if tag == "a" and name == "href" and value)


def links_of(page: Page) -> list[str]:
    """The site-relative paths ``page`` links to."""
    if not page.path.endswith(".html"):
        return []
    parser = _Hrefs()
    parser.feed(page.data.decode(page.charset))
    base = posixpath.dirname(page.path)
    return [posixpath.normpath(posixpath.join(base, href)) for href in parser.hrefs]


def clicks_from_index(pages: Sequence[Page]) -> dict[str, int]:
    """Fewest clicks from ``index.html`` to each page it leads to (breadth-first)."""
    by_path = {page.path: page for page in pages}
    clicks = {"index.html": 0}
    queue = deque(["index.html"])
    while queue:
        path = queue.popleft()
        for target in links_of(by_path[path]):
            if target in by_path and target not in clicks:
                clicks[target] = clicks[path] + 1
                queue.append(target)
    return clicks


def readme(pages: Sequence[Page]) -> str:
    """The ground-truth table of the site, as Markdown."""
    clicks = clicks_from_index(pages)
    rows = "".join(
        f"| `{p.path}` | {p.charset if p.path.endswith('.html') else '—'} | "
        f"{clicks.get(p.path, '—')} | {p.contents} | {p.expected} |\n"
        for p in pages
    )
    copies = [page for page in pages if page.is_copy]
    pairs = [f"- `{page.path}` copies `{work}`\n" for page in copies for work in page.copies]
    records = sum(1 for page in pages if page.path.endswith(".html"))
    return f"""# samples/site: a sample pirate site for `fptrack scan`

Generated by `python samples/make_site.py` (deterministic; do not edit by hand). The site
imitates "{SITE_NAME}", an invented pirate novel and article site: a nav bar, breadcrumbs,
a banner ad and a footer with a fake ICP number ({ICP_NUMBER}) around every page. The
registered works are the seven files of `samples/works/`.

    fptrack scan --works samples/works --site-dir samples/site --json scan.json

serves this folder on 127.0.0.1 and crawls it from `index.html`. Every page is reachable
from `index.html` in at most three clicks ("clicks" below; `robots.txt` is fetched, not
linked).

## Ground truth

{len(copies)} pages copy works (each part of the split chapter is a page of its own, with a
match of its own); every other page is not a copy and should produce no match.

| page | charset | clicks | contents | expected outcome |
|---|---|---|---|---|
{rows}
Expected in `scan.json`: `"works": 7`, `"pages": {records}` (one per HTML page; the lists
and the about page have enough text of their own to be stored, and match nothing) and these
{len(pairs)} matches, one per (page, work) pair, nothing else (`scan.json` names a work by its
file name under `samples/works/`):

{"".join(pairs)}
Ad lines inside the split chapter are lines such as "{AD_LINES[0]}" and
"{CONTINUE_LINE}"; the banner on every page reads "{BANNER_AD}".
Normalisation drops such lines, so they do not count against containment.
"""


def build_site(out_dir: Path, works_dir: Path = WORKS_DIR) -> list[Path]:
    """Write the site (pages, ``robots.txt`` and ``README.md``) into ``out_dir``.

    Returns the paths written. Files already in ``out_dir`` are left alone.
    """
    pages = build_pages(works_dir)
    files = {page.path: page.data for page in pages}
    files["README.md"] = readme(pages).encode("utf-8")
    written = []
    for relative, data in files.items():
        target = out_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written.append(target)
    return written


def main() -> None:
    """Rewrite ``samples/site/`` and remove files a previous run wrote but this one did not."""
    written = set(build_site(SITE_DIR))
    for stale in sorted(p for p in SITE_DIR.rglob("*") if p.is_file() and p not in written):
        stale.unlink()
        print(f"removed stale {stale.relative_to(HERE)}")
    print(f"wrote {len(written)} files to {SITE_DIR.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()

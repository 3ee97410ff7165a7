"""Sample texts of the fingerprint tests (their fixtures in ``tests/fingerprint/conftest.py``).

The classical passages are public-domain novels (三国演义, 西游记, 红楼梦, 水浒传, 儒林外史),
typed in here so that no test depends on files that may change. ``TRADITIONAL`` is the
``SIMPLIFIED`` passage written in Traditional characters by hand (周末, 並, 為: the forms a
Traditional edition prints, not what a converter would produce), so it exercises the
library's own t2s conversion rather than echoing OpenCC's s2t.
"""

from __future__ import annotations

import re

SIMPLIFIED = (
    "话说天下大势，分久必合，合久必分。周末七国分争，并入于秦。及秦灭之后，楚、汉分争，"
    "又并入于汉。汉朝自高祖斩白蛇而起义，一统天下，后来光武中兴，传至献帝，遂分为三国。"
    "推其致乱之由，殆始于桓、灵二帝。桓帝禁锢善类，崇信宦官。及桓帝崩，灵帝即位，"
    "大将军窦武、太傅陈蕃共相辅佐。时有宦官曹节等弄权，窦武、陈蕃谋诛之，机事不密，"
    "反为所害，中涓自此愈横。"
)

TRADITIONAL = (
    "話說天下大勢，分久必合，合久必分。周末七國分爭，並入於秦。及秦滅之後，楚、漢分爭，"
    "又並入於漢。漢朝自高祖斬白蛇而起義，一統天下，後來光武中興，傳至獻帝，遂分為三國。"
    "推其致亂之由，殆始於桓、靈二帝。桓帝禁錮善類，崇信宦官。及桓帝崩，靈帝即位，"
    "大將軍竇武、太傅陳蕃共相輔佐。時有宦官曹節等弄權，竇武、陳蕃謀誅之，機事不密，"
    "反為所害，中涓自此愈橫。"
)

MIXED = (
    "我们在 Google 的 TensorFlow 团队工作，每天用 Python 3.11 和 NumPy 做 MinHash 实验。"
    "The quick brown fox jumps over the lazy dog. 这段中英文混排的文字里还有数字 2024 年"
    "和缩写 AI、NLP，以及全角的ＡＢＣ与１２３。"
)

EMOJI = (
    "今天天气真好😀，我们去公园散步吧🌳🌞！晚上一起吃火锅🍲🔥，不见不散👋。"
    "周末还要去看电影🎬，记得带上爆米花🍿哦～"
)

SANGUO = (
    "滚滚长江东逝水，浪花淘尽英雄。是非成败转头空。青山依旧在，几度夕阳红。"
    "白发渔樵江渚上，惯看秋月春风。一壶浊酒喜相逢。古今多少事，都付笑谈中。\n"
    + SIMPLIFIED
    + "\n建宁二年四月望日，帝御温德殿。方升座，殿角狂风骤起。只见一条大青蛇，从梁上飞将下来，"
    "蟠于椅上。帝惊倒，左右急救入宫，百官俱奔避。须臾，蛇不见了。忽然大雷大雨，加以冰雹，"
    "落到半夜方止，坏却房屋无数。建宁四年二月，洛阳地震；又海水泛溢，沿海居民，"
    "尽被大浪卷入海中。光和元年，雌鸡化雄。六月朔，黑气十余丈，飞入温德殿中。"
    "秋七月，有虹现于玉堂；五原山岸，尽皆崩裂。种种不祥，非止一端。\n"
    "时钜鹿郡有兄弟三人，一名张角，一名张宝，一名张梁。那张角本是个不第秀才，因入山采药，"
    "遇一老人，碧眼童颜，手执藜杖，唤角至一洞中，以天书三卷授之。角拜问姓名。"
    "老人曰：吾乃南华老仙也。言讫，化阵清风而去。角得此书，晓夜攻习，能呼风唤雨，"
    "号为太平道人。"
)

XIYOU = (
    "盖闻天地之数，有十二万九千六百岁为一元。将一元分为十二会，乃子、丑、寅、卯、辰、巳、"
    "午、未、申、酉、戌、亥之十二支也。每会该一万八百岁。且就一日而论：子时得阳气，"
    "而丑则鸡鸣；寅不通光，而卯则日出；辰时食后，而巳则挨排；日午天中，而未则西蹉；"
    "申时晡而日落酉，戌黄昏而人定亥。譬于大数，若到戌会之终，则天地昏蒙而万物否矣。"
    "再去五千四百岁，交亥会之初，则当黑暗，而两间人物俱无矣，故曰混沌。"
    "感盘古开辟，三皇治世，五帝定伦，世界之间，遂分为四大部洲。"
    "海外有一国土，名曰傲来国。国近大海，海中有一座名山，唤为花果山。"
    "那座山正当顶上，有一块仙石。其石有三丈六尺五寸高，有二丈四尺围圆。"
)

HONGLOU = (
    "此开卷第一回也。作者自云：因曾历过一番梦幻之后，故将真事隐去，而借通灵之说，"
    "撰此石头记一书也。故曰甄士隐云云。但书中所记何事何人？自又云：今风尘碌碌，一事无成，"
    "忽念及当日所有之女子，一一细考较去，觉其行止见识，皆出于我之上。何我堂堂须眉，"
    "诚不若彼裙钗哉？实愧则有余，悔又无益之大无可如何之日也！当此，则自欲将已往所赖天恩祖德，"
    "锦衣纨绔之时，饫甘餍肥之日，背父兄教育之恩，负师友规谈之德，以至今日一技无成、"
    "半生潦倒之罪，编述一集，以告天下人。虽我之罪固不免，然闺阁中本自历历有人，"
    "万不可因我之不肖，自护己短，一并使其泯灭也。"
)

SHUIHU = (
    "话说大宋仁宗天子在位，嘉祐三年三月三日五更三点，天子驾坐紫宸殿，受百官朝贺。"
    "但见：祥云迷凤阁，瑞气罩龙楼。含烟御柳拂旌旗，带露宫花迎剑戟。"
    "天香影里，玉簪珠履聚丹墀；仙乐声中，绣袄锦衣扶御驾。"
    "当有殿头官喝道：有事出班早奏，无事卷帘退朝。只见班部丛中，宰相赵哲、参政文彦博出班奏曰："
    "目今京师瘟疫盛行，民不聊生，伤损军民多矣。伏望陛下释罪宽恩，省刑薄税，祈禳天灾，救济万民。"
    "天子听奏，急敕翰林院随即草诏，一面降赦天下罪囚，应有民间税赋，悉皆赦免。"
)

RULIN = (
    "人生南北多歧路，将相神仙，也要凡人做。百代兴亡朝复暮，江风吹倒前朝树。"
    "功名富贵无凭据，费尽心情，总把流光误。浊酒三杯沉醉去，水流花谢知何处。"
    "这一首词，也是个老生常谈。不过说人生富贵功名，是身外之物；但世人一见了功名，"
    "便舍着性命去求他，及至到手之后，味同嚼蜡。自古及今，那一个是看得破的！"
    "虽然如此说，元朝末年，也曾出了一个嶔崎磊落的人。这人姓王名冕，在诸暨县乡村里住。"
    "七岁上死了父亲，他母亲做些针指，供给他到村学堂里去读书。"
    "看看三个年头，王冕已是十岁了。母亲唤他到面前来说道：儿啊，不是我有心要耽误你。"
)

CLASSICAL = {
    "sanguo": SANGUO,
    "xiyou": XIYOU,
    "honglou": HONGLOU,
    "shuihu": SHUIHU,
    "rulin": RULIN,
}

BIG_TARGET_BYTES = 5_000_000


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` with their closing punctuation (test helper, not the library's)."""
    return [s for s in re.findall(r"[^。！？；\n]+[。！？；]?", text) if s.strip()]


def build_big_text(target_bytes: int = BIG_TARGET_BYTES) -> str:
    """A deterministic ~5 MB text: the classical passages, each copy prefixed by a counter."""
    paragraphs = list(CLASSICAL.values())
    parts: list[str] = []
    size = 0
    i = 0
    while size < target_bytes:
        paragraph = f"第{i}段：{paragraphs[i % len(paragraphs)]}\n"
        parts.append(paragraph)
        size += len(paragraph.encode("utf-8"))
        i += 1
    return "".join(parts)


def gb2312_level1() -> tuple[str, ...]:
    """The 3,755 frequent Simplified characters of GB2312 level 1, from the codec itself."""
    chars = []
    for lead in range(0xB0, 0xD8):
        for trail in range(0xA1, 0xFF):
            try:
                chars.append(bytes([lead, trail]).decode("gb2312"))
            except UnicodeDecodeError:
                continue
    return tuple(chars)

"""Golden values: exact fingerprints pinned as literals, to catch silent drift.

Values were computed once from the sample texts of ``conftest.py`` and written here by hand;
a change to any of them changes every stored fingerprint, so it needs a new ``VERSION`` of the
method concerned (and re-registration of the works), not an edit of this file alone.

The pinyin values depend on ``fingerprint/reference_frequencies.py`` (the generated
frequencies, not the uniform placeholder): regenerating that module changes them.
"""

from __future__ import annotations

import pytest

from fingerprint.bloom import bloom
from fingerprint.document import fingerprint_document
from fingerprint.minhash import MinHashParams, minhash
from fingerprint.normalize import normalize
from fingerprint.pinyin import PinyinParams, pinyin_fingerprint
from fingerprint.sentences import sentence_signature
from fingerprint.shingles import winnow
from fingerprint.simhash import simhash

EMPTY_SLOT = 0xFFFFFFFF
"""The value of a MinHash slot that no element reached."""

GOLDEN = {
    "simplified": {
        "normalized": (
            "话说天下大势,分久必合,合久必分。周末七国分争,并入于秦。及"
            "秦灭之后,楚、汉分争,又并入于汉。汉朝自高祖斩白蛇而起义,一"
            "统天下,后来光武中兴,传至献帝,遂分为三国。推其致乱之由,殆"
            "始于桓、灵二帝。桓帝禁锢善类,崇信宦官。及桓帝崩,灵帝即位,"
            "大将军窦武、太傅陈蕃共相辅佐。时有宦官曹节等弄权,窦武、陈蕃"
            "谋诛之,机事不密,反为所害,中涓自此愈横。"
        ),
        "simhash": "4c6b959cc6a26e27",
        "minhash_affine32": (
            [73490290, 34374255, 471332, 38869183, 598735, 59116395, 43454949, 23720514],
            139,
        ),
        "minhash_oph": (
            [
                3535115315,
                863150614,
                4008939900,
                2694386628,
                3704674888,
                345850193,
                345850193,
                789624439,
            ],
            139,
        ),
        "winnow": (26, [929482318956002879, 2713533365715818972, 2736758679913560814]),
        "bloom_weight": 244,
        "sentences": [(47, 81), (135, 170), (110, 134), (0, 16), (29, 46)],
        "pinyin": ([32151329694982, 24441624319895, 23879264585637, 25288534984084], 5),
        "pinyin_anchored": ([31189592565333, 32013962047750, 29802066452811, 34462101755223], 10),
    },
    "mixed": {
        "normalized": (
            "我们在 google 的 tensorflow 团队工作,每"
            "天用 python 3.11 和 numpy 做 minha"
            "sh 实验。the quick brown fox jump"
            "s over the lazy dog. 这段中英文混排的文"
            "字里还有数字 2024 年和缩写 ai、nlp,以及全角的a"
            "bc与123。"
        ),
        "simhash": "ea39fb266a5d5a4d",
        "minhash_affine32": (
            [20990225, 37119779, 2461613, 20939186, 11305079, 7757788, 125694546, 1542577],
            123,
        ),
        "minhash_oph": (
            [
                2291378450,
                2172896095,
                1620455454,
                2586112233,
                56603664,
                1049589239,
                2810766355,
                3611002945,
            ],
            123,
        ),
        "winnow": (25, [4211643430775015180, 2988310852722648113, 503277892933159393]),
        "bloom_weight": 213,
        "sentences": [(66, 156), (0, 65)],
        "pinyin": ([18218473707215], 1),
        "pinyin_anchored": ([18218473707215], 1),
    },
    "emoji": {
        "normalized": (
            "今天天气真好😀,我们去公园散步吧🌳🌞!晚上一起吃火锅🍲🔥,不"
            "见不散👋。周末还要去看电影🎬,记得带上爆米花🍿哦~"
        ),
        "simhash": "015acce4597b7f27",
        "minhash_affine32": (
            [42064643, 58361510, 78311776, 41227756, 203960504, 11561553, 17173551, 149540894],
            39,
        ),
        "minhash_oph": (
            [
                4197069588,
                3545363172,
                1586044545,
                2669841470,
                962322266,
                1854351816,
                962322266,
                2476052658,
            ],
            39,
        ),
        "winnow": (6, [621903390598760220, 2029136367567723007, 5586888439711275790]),
        "bloom_weight": 74,
        "sentences": [(35, 55), (0, 18), (19, 34)],
        "pinyin": ([32241864268420], 1),
        "pinyin_anchored": ([23187015717845, 31982890637704, 32253737818504, 28405401475416], 4),
    },
    "empty": {
        "normalized": "",
        "simhash": "0000000000000000",
        "minhash_affine32": (
            [EMPTY_SLOT] * 8,
            0,
        ),
        "minhash_oph": (
            [EMPTY_SLOT] * 8,
            0,
        ),
        "winnow": (0, []),
        "bloom_weight": 0,
        "sentences": [],
        "pinyin": ([], 0),
        "pinyin_anchored": ([], 0),
    },
}
# Traditional text normalises to the Simplified text, so every fingerprint is the same.
GOLDEN["traditional"] = GOLDEN["simplified"]
BIG_GOLDEN = {
    "simhash": "d7411016ac2bed2b",
    "normalized_chars": 1685604,
    "minhash_size": 2581,
    "pinyin": 58464,
    "pinyin_anchored": 111959,
    "winnow": 323022,
}

NAMES = list(GOLDEN)


@pytest.fixture(scope="module")
def normalized(sample_texts) -> dict[str, str]:
    return {name: normalize(text).text for name, text in sample_texts.items()}


def test_samples_are_the_pinned_ones(sample_texts):
    assert set(sample_texts) == set(GOLDEN)


@pytest.mark.parametrize("name", NAMES)
def test_normalized_text(normalized, name):
    assert normalized[name] == GOLDEN[name]["normalized"]


@pytest.mark.parametrize("name", NAMES)
def test_simhash(normalized, name):
    assert simhash(normalized[name]).to_hex() == GOLDEN[name]["simhash"]


@pytest.mark.parametrize(
    ("name", "scheme"),
    [(name, scheme) for name in NAMES for scheme in ("affine32", "oph")],
)
def test_minhash(normalized, name, scheme):
    mh = minhash(normalized[name], MinHashParams(scheme=scheme))
    values, size = GOLDEN[name][f"minhash_{scheme}"]
    assert mh.hashvalues[:8].tolist() == values
    assert mh.size == size


@pytest.mark.parametrize("name", NAMES)
def test_winnow(normalized, name):
    fp = winnow(normalized[name])
    count, first = GOLDEN[name]["winnow"]
    assert len(fp) == count
    assert fp.hashes[:3].tolist() == first


@pytest.mark.parametrize("name", NAMES)
def test_bloom_weight(normalized, name):
    assert bloom(normalized[name]).weight == GOLDEN[name]["bloom_weight"]


@pytest.mark.parametrize("name", NAMES)
def test_sentence_spans(normalized, name):
    assert list(sentence_signature(normalized[name]).spans) == GOLDEN[name]["sentences"]


def test_traditional_and_simplified_documents_fingerprint_alike(sample_texts):
    simplified = fingerprint_document(sample_texts["simplified"]).to_dict()
    assert fingerprint_document(sample_texts["traditional"]).to_dict() == simplified


def test_five_megabyte_text(big_fingerprint):
    fp = big_fingerprint
    assert fp.simhash.to_hex() == BIG_GOLDEN["simhash"]
    assert len(fp.normalized.text) == BIG_GOLDEN["normalized_chars"]
    assert fp.minhash.size == BIG_GOLDEN["minhash_size"]
    assert len(fp.pinyin) == BIG_GOLDEN["pinyin"]
    assert len(fp.pinyin_anchored) == BIG_GOLDEN["pinyin_anchored"]
    assert len(fp.winnow) == BIG_GOLDEN["winnow"]


# Pinyin last: these depend on the generated reference frequencies.


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("anchored", [False, True], ids=["fixed", "anchored"])
def test_pinyin(normalized, name, anchored):
    fp = pinyin_fingerprint(normalized[name], PinyinParams(anchored=anchored))
    first, count = GOLDEN[name]["pinyin_anchored" if anchored else "pinyin"]
    assert len(fp) == count
    assert fp.keys[:4].tolist() == first

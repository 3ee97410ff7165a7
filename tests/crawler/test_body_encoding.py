"""Response bodies in the encodings Chinese sites use, declared right, wrong or not at all."""

from __future__ import annotations

import codecs

import pytest

from crawler.encoding import (
    UndecodableBody,
    decode_body,
    header_charset,
    meta_charset,
    normalise_charset,
)

SIMPLIFIED = "那天夜里雨下得很大，渡口的灯笼被风吹得左右摇晃，船家老周披着蓑衣蹲在石阶上抽旱烟。"
TRADITIONAL = "那天夜裡雨下得很大，渡口的燈籠被風吹得左右搖晃，船家老周披著蓑衣蹲在石階上抽旱煙。"
# U+20000 and U+9FA6 are in GB18030 but neither in GBK nor in Big5.
GB18030_ONLY = "𠀀龦"


def html(text: str, meta: str | None) -> str:
    head = f'<meta charset="{meta}">' if meta else ""
    return f"<html><head>{head}<title>渡口</title></head><body><p>{text}</p></body></html>"


@pytest.mark.parametrize(
    ("text", "codec", "header", "meta", "expected"),
    [
        (SIMPLIFIED, "gbk", "gbk", "gbk", "gb18030"),
        (SIMPLIFIED, "gb2312", None, "gb2312", "gb18030"),
        (SIMPLIFIED + GB18030_ONLY, "gb18030", "gb18030", None, "gb18030"),
        (TRADITIONAL, "big5", "big5", "big5", "big5hkscs"),
        (TRADITIONAL, "big5", None, None, "big5hkscs"),
        (SIMPLIFIED, "utf-8", "utf-8", "utf-8", "utf-8"),
        (SIMPLIFIED, "gbk", None, None, "gb18030"),
    ],
)
def test_declared_or_undeclared_encodings(
    text: str, codec: str, header: str | None, meta: str | None, expected: str
) -> None:
    body = html(text, meta).encode(codec)
    content_type = f"text/html; charset={header}" if header else "text/html"
    decoded, encoding = decode_body(body, content_type)
    assert text in decoded
    assert encoding == expected


@pytest.mark.parametrize(
    ("text", "codec", "header", "meta", "expected"),
    [
        # The header says UTF-8, the page is GBK and its <meta> says so.
        (SIMPLIFIED, "gbk", "utf-8", "gbk", "gb18030"),
        # The header says GBK, the page is Big5 (its <meta> says Big5, or nothing).
        (TRADITIONAL, "big5", "gbk", "big5", "big5hkscs"),
        (TRADITIONAL, "big5", "gbk", None, "big5hkscs"),
        # The header says Big5, the page is GBK.
        (SIMPLIFIED, "gbk", "big5", "gb2312", "gb18030"),
        # The header says GBK, the page is UTF-8; and a server default of ISO-8859-1.
        (SIMPLIFIED, "utf-8", "gbk", "utf-8", "utf-8"),
        (SIMPLIFIED, "gbk", "iso-8859-1", "gbk", "gb18030"),
        # Both header and <meta> are wrong.
        (TRADITIONAL, "big5", "gbk", "gb2312", "big5hkscs"),
    ],
)
def test_header_and_meta_disagree(
    text: str, codec: str, header: str, meta: str | None, expected: str
) -> None:
    body = html(text, meta).encode(codec)
    decoded, encoding = decode_body(body, f"text/html; charset={header}")
    assert text in decoded
    assert encoding == expected


def test_wrong_reading_really_differs() -> None:
    """The disagreement cases above are real: the wrong codec gives other text, no error."""
    big5 = html(TRADITIONAL, None).encode("big5")
    assert TRADITIONAL not in big5.decode("gb18030")  # decodes, but into other characters
    gbk = html(SIMPLIFIED, None).encode("gbk")
    assert SIMPLIFIED not in gbk.decode("latin-1")


def test_byte_order_marks() -> None:
    for bom, codec in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le")):
        decoded, encoding = decode_body(bom + html(SIMPLIFIED, "gbk").encode(codec), "text/html")
        assert SIMPLIFIED in decoded and encoding.startswith("utf-")


def test_a_few_broken_bytes_do_not_spoil_the_page() -> None:
    body = html(SIMPLIFIED * 4, "gbk").encode("gbk")
    body = body[:60] + b"\xff" + body[60:]  # one invalid byte, as truncated pages have
    decoded, encoding = decode_body(body, "text/html; charset=gbk")
    assert encoding == "gb18030"
    assert SIMPLIFIED[:10] in decoded


def test_non_chinese_declared_encoding_is_kept() -> None:
    page = '<html><head><meta charset="windows-1252"><title>Menu</title></head>'
    body = (page + "<p>café crème brûlée</p></html>").encode("cp1252")
    decoded, encoding = decode_body(body, "text/html; charset=windows-1252")
    assert "café crème brûlée" in decoded and encoding == "cp1252"


@pytest.mark.parametrize(
    "body",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00",
        b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Length 5 \x00>>",
        bytes(range(1, 9)) * 64,
    ],
)
def test_binary_body_is_a_clear_error(body: bytes) -> None:
    with pytest.raises(UndecodableBody, match="binary body"):
        decode_body(body, "text/html")


def test_charset_helpers() -> None:
    assert header_charset("text/html; Charset=GB2312") == "GB2312"
    assert header_charset(b'text/html; charset="big5"') == "big5"
    assert header_charset("text/html") is None
    assert meta_charset(b'<meta http-equiv="Content-Type" content="text/html; charset=gbk">') == (
        "gbk"
    )
    assert meta_charset(b"<html><body>no meta</body></html>") is None
    assert normalise_charset("GBK") == "gb18030"
    assert normalise_charset("x-gbk") == "gb18030"
    assert normalise_charset("Big5") == "big5hkscs"
    assert normalise_charset("utf8") == "utf-8"
    assert normalise_charset("no-such-charset") is None

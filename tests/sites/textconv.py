"""Plain text from the document formats of Debian's Chinese documentation packages.

HTML pages (visible text only), groff man pages (requests and escapes removed) and fortune
files (``%``-separated); :func:`tidy` normalises blanks and :func:`han_share` measures how
Chinese a text is.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

FORTUNE_GROUP_CHARS = 3000
MIN_HAN_SHARE = 0.3
FORTUNE_DROP = re.compile(r"Debian 参考手册")
"""Fortunes quoting the Debian Reference: that text is in the corpus already (as a source)."""

HAN = re.compile(r"[\u4e00-\u9fff]")
_SPACE = re.compile(r"\s")
_CJK_GAP = re.compile(r"(?<=[\u3000-\u9fff\uff00-\uffef]) +(?=[\u3000-\u9fff\uff00-\uffef])")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def han_share(text: str) -> float:
    """Share of Han characters (U+4E00-U+9FFF) among the non-whitespace characters."""
    visible = len(text) - len(_SPACE.findall(text))
    return len(HAN.findall(text)) / visible if visible else 0.0


def tidy(text: str) -> str:
    """Collapse blanks, drop empty lines and the blanks that line-wrapping left inside Chinese."""
    lines = (re.sub(r"[ \t\u00a0\u3000]+", " ", line).strip() for line in text.splitlines())
    return _CJK_GAP.sub("", "\n".join(line for line in lines if line))


# --- HTML ------------------------------------------------------------------------------------
_SKIP_TAGS = {"head", "script", "style", "noscript", "template", "header", "footer", "nav", "aside"}
_SKIP_CLASSES = {"navheader", "navfooter", "toc", "breadcrumbs"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "wbr", "source"}
_BLOCKS = {"p", "div", "br", "li", "tr", "td", "th", "dt", "dd", "pre", "table", "title", "hr"}
_BLOCKS |= {"h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "section", "ul", "ol", "dl"}


class _HTMLText(HTMLParser):
    """Collects the visible text of a page; block elements become line breaks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)  # entities are unescaped in handle_data
        self.parts: list[str] = []
        self.skip: tuple[str, int] | None = None  # (tag, nesting depth) of a skipped element
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skip:
            if tag == self.skip[0]:
                self.skip = (tag, self.skip[1] + 1)
            return
        classes = set((dict(attrs).get("class") or "").split())
        if (tag in _SKIP_TAGS or classes & _SKIP_CLASSES) and tag not in _VOID:
            self.skip = (tag, 1)
            return
        self.pre += tag == "pre"
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if self.skip:
            if tag == self.skip[0]:
                self.skip = (tag, self.skip[1] - 1) if self.skip[1] > 1 else None
            return
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_to_text(page: str) -> str:
    """Visible text of an HTML page (no head, scripts, styles or navigation)."""
    parser = _HTMLText()
    parser.feed(page)
    parser.close()
    return "".join(parser.parts)


# --- man pages (groff: man, mdoc and pod2man macros) -----------------------------------------
_ESCAPE = re.compile(
    r"""\\(?:f(?:\[[^\]]*\]|\(..|.) | s[+-]?(?:\d+|\(\d\d|\[\d+\]) | \*(?:\[[^\]]*\]|\(..|.)
    | n[+-]?(?:\[[^\]]*\]|\(..|.) | [hvwlLDxNoHSbZR]'[^']*' | \((..) | \[([^\]]*)\] | (.))""",
    re.X,
)
_SPECIAL = {"em": "—", "en": "–", "hy": "-", "mi": "-", "bu": "•", "co": "©", "rg": "®"}
_SPECIAL |= {"lq": "“", "rq": "”", "oq": "‘", "cq": "’", "aq": "'", "dq": '"', "rs": "\\"}
_SPECIAL |= {"tm": "™", "de": "°", "mu": "×", "->": "→", "<-": "←", "ba": "|", "ti": "~"}
_SINGLE = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "'": "'", ".": "."}
_MAN_DROP = {"TH", "IX", "PD", "RS", "RE", "DT", "UC", "Vb", "Ve", "Sp", "TS", "TE", "Dd", "Dt"}
_MAN_DROP |= {"Os", "Bl", "El", "Bd", "Ed", "CS", "CE", "Pp", "PP", "LP", "P", "TP", "HP"}
_MAN_DROP |= {"AS", "BS", "BE", "VS", "VE", "DS", "DE", "SO", "SE"}  # Tcl's man.macros
_MAN_BREAK = {"SH", "SS", "Sh", "Ss", "PP", "LP", "P", "Pp", "TP", "IP", "HP", "br", "sp", "Sp"}
_MAN_BREAK |= {"It", "nf", "fi", "RS", "RE", "TS", "TE", "Vb", "Ve", "Bl", "El", "Bd", "Ed"}
_MAN_JOIN = {"BR", "BI", "IB", "IR", "RB", "RI"}
_MAN_CREDITS = re.compile(r"跋|译者|中文版|翻译计划|中文 ?man")
_ARG = re.compile(r'"((?:[^"]|"")*)"?|(\S+)')


def _unescape(text: str) -> str:
    """Resolve groff escapes: fonts, sizes, strings vanish; special characters are mapped."""

    def one(m: re.Match[str]) -> str:
        special, bracket, single = m.groups()
        if special is not None:
            return _SPECIAL.get(special, "")
        if bracket is not None:
            if re.fullmatch(r"u[0-9A-Fa-f]{4,6}", bracket):
                return chr(int(bracket[1:], 16))
            return _SPECIAL.get(bracket, "")
        return _SINGLE.get(single, "") if single is not None else ""

    return _ESCAPE.sub(one, text)


def man_to_text(source: str) -> str:
    """Plain text of a groff man page: requests dropped, macro arguments and text kept.

    The translators' credit sections (跋, [中文版维护人] ...), the same in every page, are left out.
    """
    paras: list[str] = []
    buf: list[str] = []
    fill, skip_to_dots, table_format, credits = True, False, False, False

    def flush(extra: str = "") -> None:
        if buf and not credits:
            paras.append(" ".join(buf))
        buf.clear()
        if extra and not credits:
            paras.append(extra)

    for raw in source.splitlines():
        if skip_to_dots:
            skip_to_dots = raw.strip() != ".."
            continue
        line = re.sub(r'\\["#].*', "", raw)
        if table_format:
            table_format = not line.rstrip().endswith(".")
            continue
        if line[:1] in (".", "'"):
            name, rest = re.match(r"[.']\s*(\S*)\s*(.*)", line).groups()  # type: ignore[union-attr]
            skip_to_dots = name in ("de", "de1", "ig", "am")
            table_format = name == "TS"
            if name in _MAN_BREAK:
                flush()
            fill = {"nf": False, "fi": True}.get(name, fill)
            if not name or name[0].islower() or name in _MAN_DROP:
                continue
            args = [_unescape(a or b) for a, b in _ARG.findall(rest)]
            text = ("" if name in _MAN_JOIN else " ").join(args[:1] if name == "IP" else args)
            if name in ("SH", "Sh"):
                credits = bool(_MAN_CREDITS.search(text))
            if name in ("SH", "SS", "Sh", "Ss"):
                flush(text)
                continue
        else:
            text = _unescape(line)
        if not text.strip():
            flush()
        elif fill:
            buf.append(text.strip())
        else:
            flush(text.rstrip())
    flush()
    return "\n".join(paras)


def fortunes_to_texts(source: str) -> list[str]:
    """Fortunes (split on ``%`` lines) that are Chinese, grouped into texts of about
    FORTUNE_GROUP_CHARS characters (one fortune alone is mostly too short to be a document)."""
    items = (p.strip() for p in re.split(r"(?m)^%\s*$", _ANSI.sub("", source)))
    keep = [i for i in items if han_share(i) >= MIN_HAN_SHARE and not FORTUNE_DROP.search(i)]
    texts: list[str] = []
    group: list[str] = []
    for item in keep:
        group.append(item)
        if sum(map(len, group)) >= FORTUNE_GROUP_CHARS:
            texts.append("\n\n".join(group))
            group = []
    return [*texts, "\n\n".join(group)] if group else texts

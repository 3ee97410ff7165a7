"""Sizes and durations written for people, and read back from what people write.

>>> size(64 * 1024 * 1024)
'64 MiB'
>>> parse_size("64MiB") == parse_size("64 MiB") == 67108864
True
>>> duration(7200)
'2 h'
>>> duration(95)
'1 min 35 s'
>>> parse_duration("2m"), parse_duration("90"), parse_duration("1.5 h")
(120.0, 90.0, 5400.0)
"""

from __future__ import annotations

import re

_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_DURATIONS = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)?\s*", re.IGNORECASE)
_SECONDS = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)


def size(n: int) -> str:
    """``n`` bytes in the largest binary unit that keeps it whole or one decimal (``64 MiB``)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            text = f"{value:.1f}".removesuffix(".0") if unit != "B" else str(int(value))
            return f"{text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def parse_size(text: str) -> int:
    """Bytes from ``67108864``, ``64M``, ``64 MiB`` or ``1.5GB`` (binary units: K = 1024).

    Raises ``ValueError`` with a message naming the accepted forms.
    """
    match = _SIZE.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a size: give bytes or a number with KiB, MiB or GiB")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def duration(seconds: float) -> str:
    """A duration in its largest unit and the next one (``2 h``, ``1 min 35 s``, ``0.4 s``)."""
    if seconds < 10 and seconds != int(seconds):
        return f"{seconds:.1f} s"
    rest = round(seconds)
    for i, (unit, length) in enumerate(_DURATIONS):
        if rest >= length or unit == "s":
            text = f"{rest // length} {unit}"
            if i + 1 < len(_DURATIONS):
                sub_unit, sub_length = _DURATIONS[i + 1]
                if sub := rest % length // sub_length:
                    text += f" {sub} {sub_unit}"
            return text
    raise AssertionError("unreachable")


def parse_duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``2m``, ``2 min``, ``1.5h`` or ``1d``.

    Raises ``ValueError`` with a message naming the accepted forms.
    """
    match = _DURATION.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration: give seconds, or a number with s, m, h or d")
    return float(match.group(1)) * _SECONDS[(match.group(2) or "").lower()]

"""What every fingerprint carries: its method, its parameters and a version.

Two fingerprints can be compared only when all three agree; otherwise the comparison
raises :class:`IncompatibleFingerprints` instead of returning a silently wrong answer
(datasketch refuses to compare MinHashes of different seeds in the same way).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # imported by the two array helpers: reading a file needs no numpy
    import numpy as np


class FingerprintError(ValueError):
    """Base class of the errors this library raises on bad input."""


class IncompatibleFingerprints(FingerprintError):
    """Two fingerprints made by different methods, parameters or versions were compared."""


class CorruptFingerprint(FingerprintError):
    """A stored fingerprint value cannot be decoded or does not fit its parameters."""


class Fingerprint(Protocol):
    method: str
    version: int

    @property
    def params(self) -> Any: ...


def params_dict(params: Any) -> dict[str, Any]:
    """Parameters of a frozen dataclass as a plain, JSON-ready dict."""
    out = {}
    for field in dataclasses.fields(params):
        value = getattr(params, field.name)
        out[field.name] = list(value) if isinstance(value, tuple) else value
    return out


def check_compatible(a: Fingerprint, b: Fingerprint) -> None:
    """Raise :class:`IncompatibleFingerprints` unless ``a`` and ``b`` can be compared."""
    if a.method != b.method:
        raise IncompatibleFingerprints(f"cannot compare {a.method!r} with {b.method!r}")
    if a.version != b.version:
        raise IncompatibleFingerprints(
            f"{a.method}: version {a.version} cannot be compared with version {b.version}"
        )
    if a.params != b.params:
        raise IncompatibleFingerprints(
            f"{a.method}: parameters differ ({params_dict(a.params)} vs {params_dict(b.params)})"
        )


def check_header(data: dict[str, Any], method: str, version: int) -> None:
    """Validate the ``method`` / ``version`` header of a stored fingerprint dict."""
    if not isinstance(data, dict):
        raise CorruptFingerprint(f"{method}: stored value is not a mapping")
    if data.get("method") != method:
        raise CorruptFingerprint(f"expected method {method!r}, found {data.get('method')!r}")
    if data.get("version") != version:
        raise IncompatibleFingerprints(
            f"{method}: stored version {data.get('version')!r}, this library makes {version}"
        )


def header(fp: Fingerprint) -> dict[str, Any]:
    """The ``method`` / ``version`` / ``params`` part of a fingerprint's stored form."""
    return {"method": fp.method, "version": fp.version, "params": params_dict(fp.params)}


@contextmanager
def decoding(what: str) -> Iterator[None]:
    """Turn any error met while decoding a stored ``what`` into :class:`CorruptFingerprint`."""
    try:
        yield
    except FingerprintError:
        raise
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise CorruptFingerprint(f"{what} cannot be decoded: {exc}") from exc


def array_to_hex(values: np.ndarray, dtype: str) -> str:
    """Hex of an array stored as ``dtype`` (a little-endian numpy type such as ``"<u8"``)."""
    import numpy as np

    return np.asarray(values).astype(dtype).tobytes().hex()


def array_from_hex(text: str, dtype: str, out: type) -> np.ndarray:
    """Inverse of :func:`array_to_hex`, converted to the in-memory type ``out``."""
    import numpy as np

    return np.frombuffer(bytes.fromhex(text), dtype=dtype).astype(out)

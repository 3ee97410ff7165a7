"""Fixtures of the fingerprint tests: the sample texts of :mod:`tests.support.texts`."""

from __future__ import annotations

import pytest

from tests.support.texts import (
    CLASSICAL,
    EMOJI,
    MIXED,
    SIMPLIFIED,
    TRADITIONAL,
    build_big_text,
    gb2312_level1,
)


@pytest.fixture(scope="session")
def sample_texts() -> dict[str, str]:
    return {
        "simplified": SIMPLIFIED,
        "traditional": TRADITIONAL,
        "mixed": MIXED,
        "emoji": EMOJI,
        "empty": "",
    }


@pytest.fixture(scope="session")
def classical() -> dict[str, str]:
    return dict(CLASSICAL)


@pytest.fixture(scope="session")
def common_simplified() -> tuple[str, ...]:
    return gb2312_level1()


@pytest.fixture(scope="session")
def big_text() -> str:
    return build_big_text()


@pytest.fixture(scope="session")
def big_fingerprint(big_text):
    from fingerprint.document import fingerprint_document

    return fingerprint_document(big_text)

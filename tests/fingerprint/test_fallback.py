"""Without numba, or with its JIT off, fingerprints come from the numpy reference, unchanged."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fingerprint.document import fingerprint_documents

TEXT = "天下大势，分久必合，合久必分。周末七国分争，并入于秦。" * 5
SCRIPT = """
import json, sys
{setup}
from fingerprint import kernels
from fingerprint.document import fingerprint_documents
print(json.dumps([kernels.available(), fingerprint_documents([sys.argv[1]])[0].to_dict()]))
"""


def run(setup: str, env: dict[str, str]) -> list:
    import json

    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(setup=setup), TEXT],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize(
    ("setup", "env"),
    [("sys.modules['numba'] = None", {}), ("", {"NUMBA_DISABLE_JIT": "1"})],
    ids=["numba missing", "JIT off"],
)
def test_the_reference_runs_with_the_same_values(setup, env):
    available, values = run(setup, env)
    assert available is False
    assert values == fingerprint_documents([TEXT], compiled=False)[0].to_dict()

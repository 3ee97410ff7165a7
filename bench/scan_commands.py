"""``fptrack scan`` with its store's commands counted: ``python -m bench.scan_commands OUT
SCAN-ARGUMENTS...`` runs the scan in this process, mongomock's calls counted
(:func:`bench.command_log.record_mongomock`), and writes the counts to ``OUT`` as JSON (a
:func:`bench.command_log.snapshot`). Its exit status is the scan's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from bench import command_log


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m bench.scan_commands OUT SCAN-ARGUMENTS...", file=sys.stderr)
        return 2
    out = Path(argv[0])
    tally = command_log.CommandTally()
    command_log.record_mongomock(tally)
    from admin.cli import main as fptrack

    status = fptrack(["scan", *argv[1:]])
    out.write_text(json.dumps(tally.snapshot()), encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

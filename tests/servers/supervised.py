"""One program of the one-machine deployment (``deploy/local/supervisord.conf``) run by
supervisord alone, with the deployment's restart policy: the benchmarks' process cases put
a worker or the ``mongodb`` program under it, as the deployment runs them.

:func:`one_program` writes a copy of the configuration holding that program only (its
command replaced when the case needs other arguments) with every file of supervisord's
under the run's folder; :func:`exits` reads what supervisord logged of the program's exits.
"""

from __future__ import annotations

import configparser
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "deploy" / "local" / "supervisord.conf"
EXITED = re.compile(r"exited: (\S+) \((?:exit status (\d+)|terminated by (\w+))")


def supervisord() -> str:
    """The ``supervisord`` beside this interpreter (the ``local`` or ``test`` extra)."""
    return str(Path(sys.executable).with_name("supervisord"))


def one_program(folder: Path, program: str, command: list[str] | None = None) -> list[str]:
    """Write ``folder/supervisord.conf`` with ``program`` only and return the command that
    runs supervisord on it in the foreground. Its log is ``folder/supervisord.log``, the
    program's ``folder/PROGRAM.log``."""
    parser = configparser.RawConfigParser()
    parser.read(CONF, encoding="utf-8")
    for section in parser.sections():
        if section.startswith("program:") and section != f"program:{program}":
            parser.remove_section(section)
    settings = parser[f"program:{program}"]
    if command is not None:
        settings["command"] = shlex.join(command)
    settings["directory"] = str(ROOT)
    settings["stdout_logfile"] = str(folder / f"{program}.log")
    parser["supervisord"].update(
        logfile=str(folder / "supervisord.log"),
        pidfile=str(folder / "supervisord.pid"),
        childlogdir=str(folder),
    )
    parser["unix_http_server"]["file"] = str(folder / "supervisor.sock")
    parser["supervisorctl"]["serverurl"] = f"unix://{folder / 'supervisor.sock'}"
    path = folder / "supervisord.conf"
    with path.open("w", encoding="utf-8") as out:
        parser.write(out)
    return [supervisord(), "-n", "-c", str(path)]


def exits(folder: Path, program: str) -> list[str]:
    """Each exit of ``program`` supervisord logged: its status (``"1"``) or its signal
    (``"SIGKILL"``), in order."""
    log = folder / "supervisord.log"
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    return [m[2] or m[3] for m in EXITED.finditer(text) if m[1] == program]

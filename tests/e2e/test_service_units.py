"""The systemd units of ``deploy/`` survive a reboot and a blip (no systemd runs here: the
units are read as systemd reads them, one ``[Section]`` of ``Key=value`` lines each).

Each restarts on failure after a pause (a restart every 100 ms hit systemd's start limit
while MongoDB was still booting), never gives up, does not retry a bad configuration
(fptrack's exit status 2), starts after Redis and MongoDB where they run on the host, waits
for them at start, and the worker's stop fits the crawl lease.
"""

from __future__ import annotations

import configparser
import shlex

import pytest
import yaml

from matcher.settings import Settings
from tests.support.e2e import ROOT

UNITS = ("worker", "beat", "admin")


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign] - systemd keys are cased
    parser.read_string((ROOT / "deploy" / f"fptrack-{name}.service").read_text(encoding="utf-8"))
    return parser


def restarts(name: str, status: int) -> bool:
    """Whether systemd starts the unit ``name`` again after its command exited with
    ``status`` (``Restart=on-failure``: any status but 0 and those of
    ``RestartPreventExitStatus``)."""
    service = unit(name)["Service"]
    assert service["Restart"] == "on-failure"
    return status != 0 and str(status) not in service["RestartPreventExitStatus"].split()


@pytest.mark.parametrize("name", UNITS)
def test_a_unit_restarts_after_a_pause_and_starts_after_the_stores(name: str) -> None:
    service, start = unit(name)["Service"], unit(name)["Unit"]
    assert service["Restart"] == "on-failure"
    assert int(service["RestartSec"]) >= 1
    assert service["RestartPreventExitStatus"] == "2"
    assert start["StartLimitIntervalSec"] == "0"  # keeps trying while a store is away
    for store in ("redis-server.service", "mongod.service"):
        assert store in start["After"].split() and store in start["Wants"].split()
    argv = shlex.split(service["ExecStart"])
    assert argv[1] == name
    assert argv[argv.index("--wait") + 1] == "60s"


def test_every_deployment_restarts_a_service_that_stopped() -> None:
    """Compose restarts every long-running service whatever its exit status; supervisord, on
    one machine, every program but on a bad argument or setting (exit status 2), with
    back-off while it keeps failing at start, each program's process group stopped as one
    and its log of its own (tests/e2e/test_one_machine_supervisord.py runs it)."""
    services = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text(encoding="utf-8"))
    for name in ("mongo", "redis", *UNITS):
        assert services["services"][name]["restart"] == "unless-stopped", name
    conf = configparser.ConfigParser(interpolation=None)
    conf.read_string((ROOT / "deploy" / "local" / "supervisord.conf").read_text(encoding="utf-8"))
    programs = {s.partition(":")[2]: conf[s] for s in conf.sections() if s.startswith("program:")}
    assert set(programs) == {"mongodb", *UNITS}
    for name, program in programs.items():
        assert (program["autorestart"], program["exitcodes"]) == ("unexpected", "2"), name
        assert int(program["startsecs"]) >= 1 and int(program["startretries"]) >= 5, name
        assert program["stopasgroup"] == program["killasgroup"] == "true", name
        assert program["stdout_logfile"].endswith("/%(program_name)s.log"), name
        assert program["redirect_stderr"] == "true", name
    assert int(programs["worker"]["stopwaitsecs"]) >= Settings().crawl_lease + 30


def test_the_worker_stops_within_a_crawl_lease_and_a_download() -> None:
    service = unit("worker")["Service"]
    lease = Settings().crawl_lease
    assert service["KillMode"] == "control-group"  # every process of the unit gets SIGTERM
    assert service["KillSignal"] == "SIGTERM"
    assert int(service["TimeoutStopSec"]) >= lease + 30

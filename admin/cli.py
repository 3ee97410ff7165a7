"""The ``fptrack`` command line: works, sites, crawls, matches, reports, services, the scan.

Every command fails with one line, ``fptrack: error: ...``, and a non-zero exit status, never
a traceback: 2 for bad arguments (argparse's usage line), 1 for everything else, including a
server that does not answer (one line naming it and the setting to change, see
:mod:`admin.outage`); nothing already stored is lost. Connections come from the ``FPTRACK_*``
environment variables (see docs/configuration.md), read once.

The commands are the modules of :mod:`admin.commands`, one each; only the one being run is
imported (``fptrack --help`` and ``--version`` import none), and the database drivers only
when a command uses them: the errors of pymongo and redis-py are recognised here without
importing either (an instance of their classes means the command loaded them).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import TYPE_CHECKING

from admin.commands import parse
from admin.errors import CommandError

if TYPE_CHECKING:
    from admin.context import Context


def _loaded_instance(exc: BaseException, module: str, name: str) -> bool:
    """``exc`` is an instance of ``module.name``, a class of a library imported only if the
    command used it (so when it is not loaded, ``exc`` cannot be one)."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(exc, getattr(loaded, name))


def _mongo_error(exc: BaseException) -> bool:
    return _loaded_instance(exc, "pymongo.errors", "PyMongoError")


def _redis_error(exc: BaseException) -> bool:
    return _loaded_instance(exc, "redis.exceptions", "RedisError")


def _outage(ctx: Context, exc: BaseException) -> str:
    """The one line for a server that failed to answer during a command."""
    from admin import outage
    from matcher.errors import StoreUnavailable

    settings = ctx.settings
    if isinstance(exc, StoreUnavailable) or _mongo_error(exc):
        return outage.line("MongoDB", settings.mongo_uri, exc.__cause__ or exc)
    return outage.line("Redis", settings.redis_url, exc.__cause__ or exc)


def main(argv: list[str] | None = None, context: Context | None = None) -> int:
    """Run the command ``argv`` names (default: ``sys.argv[1:]``); its exit status.

    ``context`` defaults to one read from ``FPTRACK_*``, which is closed when the command ends
    (:meth:`Context.close`): main can run command after command in one process. Argparse's
    errors and ``--help`` raise ``SystemExit`` as usual. Run as the process's own command
    line, ``check`` and ``schedules`` end the process once done (:func:`_quick_exit`)."""
    args = parse(sys.argv[1:] if argv is None else list(argv))
    owned = context is None
    if context is None:
        from admin.context import Context

        context = Context()
    try:
        status = args.func(args, context)
    except BaseException as exc:
        status = _report(exc, context)
        if status is None:
            raise
    finally:
        if owned:
            context.close()
            _end_without_mongo_join()
    if argv is None and owned and getattr(args, "quick_exit", False):
        _quick_exit(status)
    return status


def _quick_exit(status: int) -> None:
    """End the ``fptrack`` process now, with ``status``, skipping the interpreter's
    finalization: the commands that must answer in seconds whatever hangs (``check``,
    ``schedules``: a container's health check) set ``quick_exit``. Tearing down the modules
    they loaded (drivers, Celery, numpy) took 0.4-0.75 s after their last line; their
    threads that still wait on a hung server are daemons with nothing to finish, every
    write was acknowledged before the command returned, and the output is flushed here.
    Only for the process's own command line (``argv`` None), never when :func:`main` is
    called as a function."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone, or a stream closed
            stream.flush()
    os._exit(status)


def _end_without_mongo_join() -> None:
    """Let the command's process end without joining pymongo's monitor threads.

    pymongo joins them in an exit handler; they sleep in steps of 0.5 s (its
    ``MIN_HEARTBEAT_INTERVAL``) counted from when the client was made, so a command that used
    MongoDB ended up to 0.5 s after its work: 0.45 s of the 1.07 s ``fptrack check`` took
    with every service up (``python -m bench.cli_bench --services``). They are daemon
    threads that only watch the servers, and every write was acknowledged before the command
    returned, so the process ends with them. Done once the command ran with a context of its
    own (the ``fptrack`` process), never for a context handed in; nothing to do when the
    command did not load pymongo, or a pymongo without that handler."""
    monitor = sys.modules.get("pymongo.synchronous.monitor")
    handler = getattr(monitor, "_shutdown_resources", None)
    if handler is not None:
        atexit.unregister(handler)


def _report(exc: BaseException, ctx: Context) -> int | None:
    """Print the one line of an error a command raised; its exit status, or None for what
    is not a command's failure (``SystemExit`` from argparse, a bug: raised on)."""
    if isinstance(exc, CommandError):
        _error(str(exc))
        return exc.status
    if isinstance(exc, KeyboardInterrupt):
        print("fptrack: interrupted", file=sys.stderr)
        return 130
    if not isinstance(exc, Exception):
        return None
    from matcher.errors import (
        IndexUnavailable,
        MatcherError,
        SettingsError,
        StoreUnavailable,
    )
    from matcher.sites.site_config import SiteConfigError

    if (
        isinstance(exc, StoreUnavailable | IndexUnavailable)
        or _mongo_error(exc)
        or _redis_error(exc)
    ):
        _error(_outage(ctx, exc))
        return 1
    if isinstance(exc, SettingsError | SiteConfigError | ValueError):
        _error(str(exc))
        return 2
    if isinstance(exc, MatcherError):
        _error(str(exc))
        return 1
    if isinstance(exc, BrokenPipeError):
        # The reader went away (``fptrack ... | head``): stop quietly, as the Python docs advise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if isinstance(exc, OSError):  # a file that cannot be written or read
        where = f"{exc.filename}: " if exc.filename else ""
        _error(f"{where}{exc.strerror or exc}")
        return 1
    return None


def _error(message: str) -> None:
    print(f"fptrack: error: {' '.join(message.split())}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

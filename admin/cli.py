"""The ``fptrack`` command line: works, sites, crawls, matches, reports, services, the scan.

Every command fails with one line, ``fptrack: error: ...``, and a non-zero exit status, never
a traceback: 2 for bad arguments (argparse's usage line), 1 for everything else, including a
server that does not answer (one line naming it and the setting to change, see
:mod:`admin.outage`); nothing already stored is lost. Connections come from the ``FPTRACK_*``
environment variables (see the README), read once. The parser is :mod:`admin.parser`; the
commands are in :mod:`admin.commands`, :mod:`admin.service_commands` and
:mod:`admin.scan_command`.
"""

from __future__ import annotations

import os
import sys

import pymongo.errors
import redis

from admin import outage
from admin.context import Context
from admin.errors import CommandError
from admin.parser import parse
from matcher.errors import IndexUnavailable, MatcherError, SettingsError, StoreUnavailable
from matcher.sites import SiteConfigError


def _outage(ctx: Context, exc: BaseException) -> str:
    """The one line for a server that failed to answer during a command."""
    settings = ctx.settings
    if isinstance(exc, StoreUnavailable | pymongo.errors.PyMongoError):
        return outage.line("MongoDB", settings.mongo_uri, exc.__cause__ or exc)
    return outage.line("Redis", settings.redis_url, exc.__cause__ or exc)


def main(argv: list[str] | None = None, context: Context | None = None) -> int:
    args = parse(argv)
    ctx = context or Context()
    try:
        return args.func(args, ctx)
    except CommandError as exc:
        _error(str(exc))
        return exc.status
    except (StoreUnavailable, IndexUnavailable) as exc:
        _error(_outage(ctx, exc))
        return 1
    except (pymongo.errors.PyMongoError, redis.RedisError) as exc:
        _error(_outage(ctx, exc))
        return 1
    except (SettingsError, SiteConfigError, ValueError) as exc:
        _error(str(exc))
        return 2
    except MatcherError as exc:
        _error(str(exc))
        return 1
    except BrokenPipeError:
        # The reader went away (``fptrack ... | head``): stop quietly, as the Python docs advise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a file that cannot be written or read
        where = f"{exc.filename}: " if exc.filename else ""
        _error(f"{where}{exc.strerror or exc}")
        return 1
    except KeyboardInterrupt:
        print("fptrack: interrupted", file=sys.stderr)
        return 130


def _error(message: str) -> None:
    print(f"fptrack: error: {' '.join(message.split())}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())

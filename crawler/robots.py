"""robots.txt that cannot be read: one line and a count, not a traceback.

Scrapy's :class:`~scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware` fetches each
host's robots.txt before its first request there, and when that fetch fails (a server that
sends it one byte a second until ``DOWNLOAD_TIMEOUT``, a refused connection, a body over
``DOWNLOAD_MAXSIZE``) it crawls the host as if robots.txt allowed everything, logging the
failure at ERROR level with a traceback. :class:`RobotsMiddleware` (in its place, at 100) does
the same, except for the log: one WARNING line naming the host, the error and what follows
from it, and the stats ``fptrack/robots_unread`` (hosts whose robots.txt was not read) and
``fptrack/robots_problem`` (the last such line), which
:func:`matcher.sites.crawl_runs.problems` reports with the crawl's problems.
"""

from __future__ import annotations

import logging

from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Request
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import RobotParser
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from matcher.sites.crawl_runs import ROBOTS_PROBLEM, ROBOTS_UNREAD

log = logging.getLogger(__name__)


def unread_line(robots_url: str, exc: BaseException) -> str:
    """The one line of a robots.txt that could not be read.

    >>> print(unread_line("http://h/robots.txt", TimeoutError("took  3 s")))
    http://h/robots.txt not read (TimeoutError: took 3 s): crawled as if it allowed everything
    """
    message = " ".join(str(exc).split())
    why = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return f"{robots_url} not read ({why}): crawled as if it allowed everything"


class RobotsMiddleware(RobotsTxtMiddleware):
    """Scrapy's robots.txt middleware, with a failed fetch said in one line and counted
    (see the module docstring)."""

    async def robot_parser(self, request: Request) -> RobotParser | None:
        """Scrapy 2.19's ``robot_parser`` (the host's parser, its robots.txt fetched on the
        host's first request; None when it could not be: everything allowed), its failure
        logged by :meth:`_unread`."""
        url = urlparse_cached(request)
        netloc = url.netloc
        if netloc not in self._parsers:
            self._parsers[netloc] = Deferred()
            robotsurl = f"{url.scheme}://{url.netloc}/robots.txt"
            robotsreq = Request(
                robotsurl,
                priority=self.DOWNLOAD_PRIORITY,
                meta={"dont_obey_robotstxt": True},
                callback=NO_CALLBACK,
            )
            try:
                resp = await self.crawler.engine.download_async(robotsreq)
                await self._parse_robots(resp, netloc, request)
            except Exception as exc:
                self._unread(robotsurl, exc)
                self._robots_error(exc, netloc)
            self._stats.inc_value("robotstxt/request_count")
        parser = self._parsers[netloc]
        if isinstance(parser, Deferred):
            return await maybe_deferred_to_future(parser)
        return parser

    def _unread(self, robots_url: str, exc: Exception) -> None:
        line = unread_line(robots_url, exc)
        self._stats.inc_value(ROBOTS_UNREAD)
        self._stats.set_value(ROBOTS_PROBLEM, line)
        level = logging.INFO if isinstance(exc, IgnoreRequest) else logging.WARNING
        log.log(level, "%s", line, extra={"spider": self.crawler.spider})

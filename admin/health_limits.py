"""The bounds of ``fptrack check`` (:mod:`admin.health`), in a module of their own so that
the command's parser reads them without importing the checks."""

from __future__ import annotations

from datetime import timedelta

FAILED_CRAWL_WINDOW = timedelta(hours=24)
"""``fptrack check crawls`` reports the crawls that failed within this window (until they
are seen to: acknowledged, crawled successfully since, or their site removed)."""
PENDING_AFTER = timedelta(minutes=30)
"""``fptrack check crawls`` reports pages still waiting for their match after this long
(before that, it says ``catching-up``)."""
DEFAULT_TIMEOUT_S = 15.0
"""How long a check may run, from when the servers were asked, before it is reported failed
(``--timeout``): a bound for a check whose servers answered their ping and then hang, under
compose's 20 s health check. A server that does not answer its ping is named down after
:data:`admin.context.CONNECT_TIMEOUT_S` whatever this is. The workers' check takes 1 s of
ping (2 s when a worker bound meanwhile) after its imports, and over 5 s on a machine as
busy as a test run's (at 5 s, a healthy worker was once said to have no answer)."""

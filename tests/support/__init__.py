"""What the test suites share, in one place (as Scrapy keeps its ``tests/mockserver/``):

- :mod:`tests.support.servers`: the session's Redis and MongoDB-wire servers, and a server of
  one test's own (started by ``tests/conftest.py``);
- :mod:`tests.support.waits`: :func:`~tests.support.waits.eventually`, a wait that fails the
  test;
- :mod:`tests.support.e2e`: the Celery app of the test process and the sample texts;
- :mod:`tests.support.outage`: servers a test restarts and the services it runs on them;
- :mod:`tests.support.one_machine`: supervisord running the quick start's deployment;
- :mod:`tests.support.alerts`: a webhook receiver and an SMTP server;
- :mod:`tests.support.outbound`: slow-loris servers at the tests' pace, TLS certificates;
- :mod:`tests.support.crawl`: a recording stand-in for the ingest of crawled pages;
- :mod:`tests.support.script_site`: a site whose text a script loads (the render tests).

The fixture servers themselves, and free ports and waits, are in ``bench/``
(:mod:`bench.http_server`, :mod:`bench.fixture_site`, :mod:`bench.slow_server`,
:mod:`bench.net`), which the benchmarks use too: the tests import ``bench``, never the other
way round.
"""

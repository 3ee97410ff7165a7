"""Helpers the test suites share (the conftest files keep only fixtures); the servers they
start are in :mod:`tests.servers`, the sites and corpora those serve in :mod:`tests.sites`.

- :mod:`tests.support.waits`: :func:`~tests.support.waits.eventually`, a wait that fails the
  test;
- :mod:`tests.support.e2e`: the Celery app of the test process and the sample texts;
- :mod:`tests.support.one_machine`: supervisord running the quick start's deployment;
- :mod:`tests.support.crawl`: a recording stand-in for the ingest of crawled pages;
- :mod:`tests.support.commands`: counting the commands a MongoDB client sends;
- :mod:`tests.support.ordering`: the costly tests spread over pytest-xdist's workers.
"""

"""Every server the tests and the benchmarks start, one module each (as Scrapy keeps its
``tests/mockserver/``); the benchmarks import them from here, the tests never import ``bench``.

- :mod:`~tests.servers.net`: free ports of 127.0.0.1 and the waits every start-up uses;
- :mod:`~tests.servers.http_server`: a threaded HTTP server of a folder or a WSGI app;
- :mod:`~tests.servers.fixture_site`: the HTTP fixture site (resources made per request);
- :mod:`~tests.servers.hostile_site`: a site that attacks its crawler (floods, bombs, traps);
- :mod:`~tests.servers.takedown_site`: a site whose pages change and disappear;
- :mod:`~tests.servers.slow_server`: slow-loris servers (a byte at a time, or none);
- :mod:`~tests.servers.outbound`: those servers at the tests' pace, TLS certificates;
- :mod:`~tests.servers.raw_servers`: TCP servers below HTTP and Redis that hang up or stall;
- :mod:`~tests.servers.local_tsa`: an RFC 3161 time-stamping authority;
- :mod:`~tests.servers.alerts`: a webhook receiver and an SMTP server;
- :mod:`~tests.servers.local_cluster` and :mod:`~tests.servers.local_sentinel`: a Redis
  Cluster and a Redis Sentinel group of real ``redis-server`` processes;
- :mod:`~tests.servers.session`: the test session's Redis and MongoDB-wire servers (started
  by ``tests/conftest.py``);
- :mod:`~tests.servers.outage`: servers a test stops and starts again, with the services on
  them;
- :mod:`~tests.servers.small_disk`: a tmpfs of a few megabytes for a store whose disk fills.

What these servers serve (generated sites and corpora) is in :mod:`tests.sites`.
"""

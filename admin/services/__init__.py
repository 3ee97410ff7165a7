"""The admin's services: what its pages, its API and its server do with the store, the
engine and the settings, one small module per domain, on the model of the FastAPI template's
``crud`` module. The web views (:mod:`admin.web`) call them and never reach the store, and
the commands (:mod:`admin.commands`) call the same ones for the same operations, but those
about the store itself or an in-process run; a service takes what it needs (the store, the
engine, the settings, the archive) in its constructor, returns plain data, and imports no web
framework (``tests/test_seams.py``).

- :mod:`~admin.services.matches`: the match list (filters, keyset pages), one match with its
  evidence, its archived exchange, reviews one by one and in bulk;
- :mod:`~admin.services.works`: the work list and search, one work, registration, removal;
- :mod:`~admin.services.sites`: watched sites, their crawls and learnt URL rules;
- :mod:`~admin.services.reports`: summaries, exports, the printable report, takedown notices
  and their template, evidence bundles;
- :mod:`~admin.services.takedowns`: takedown figures, cases, contacts, sending a notice;
- :mod:`~admin.services.discovery`: discovered pirate sites, watched or dismissed;
- :mod:`~admin.services.alerts`: alert rules, test messages, the delivery log;
- :mod:`~admin.services.dashboard`: the dashboard's figures;
- :mod:`~admin.services.query`: the query by text or by URL (one fetch for the page and the
  API);
- :mod:`~admin.services.accounts` and :mod:`~admin.services.api_tokens`: users (passwords,
  roles, throttled logins, sessions) and API tokens;
- :mod:`~admin.services.dispatch`: background work (Celery tasks, or threads in the embedded
  scan);
- :mod:`~admin.services.startup`: the store's indexes and the session secret, once at start;
- :mod:`~admin.services.container`: every service over one context
  (:class:`~admin.services.container.AdminServices`), which :mod:`admin.web.deps` hands out.

Importing this package imports none of them.
"""

"""The admin's services: what its pages, its API and its server do beyond the web itself,
with no web framework: :mod:`~admin.services.accounts` (users: passwords, roles, throttled
logins, sessions), :mod:`~admin.services.api_tokens` (API tokens) and
:mod:`~admin.services.dispatch` (background work: Celery tasks, or threads in the embedded
scan). Importing this package imports none of them.
"""

"""The Celery app of ``celery -A matcher.worker.celery worker`` (and ``beat``): the entry point that
reads :class:`~matcher.settings.Settings` from the ``FPTRACK_*`` environment, once.

``fptrack worker`` and ``fptrack beat`` build their app from the settings the command read;
this module is for running Celery's own command line on the same configuration.
"""

from __future__ import annotations

from matcher.settings import Settings
from matcher.worker.celery_app import make_app

app = make_app(Settings.from_env())

"""The backend: store, Redis indexes, matching engine, Celery app and tasks."""

"""``fptrack admin serve``: the admin application under gunicorn.

Gunicorn's sync workers (``--workers``, default 2), each building the application from the
``FPTRACK_*`` settings after the fork (so no MongoDB client crosses a fork).
"""

from __future__ import annotations

from typing import Any

from gunicorn.app.base import BaseApplication

DEFAULT_BIND = "127.0.0.1:8000"
DEFAULT_WORKERS = 2
DEFAULT_TIMEOUT_S = 120


class AdminServer(BaseApplication):
    def __init__(self, options: dict[str, Any], secure_cookies: bool) -> None:
        self.options = options
        self.secure_cookies = secure_cookies
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        from admin.context import Context
        from admin.web.app import create_app
        from matcher.redis_clients import SERVICE

        return create_app(Context(patience=SERVICE), secure_cookies=self.secure_cookies)


def serve(bind: str, workers: int, secure_cookies: bool, access_log: bool) -> None:
    options = {
        "bind": bind,
        "workers": workers,
        "timeout": DEFAULT_TIMEOUT_S,
        "preload_app": False,
        "accesslog": "-" if access_log else None,
    }
    AdminServer(options, secure_cookies).run()

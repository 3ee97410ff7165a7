"""What the admin application reads of the store once, as it starts: the store's indexes
ensured, and the session secret shared by every process and restart.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from admin.context import Context

SECRET_STATE_KEY = "admin_session_secret"
"""The key of the kept session secret in the store's ``state`` collection."""


def ensure_store(ctx: Context) -> None:
    """Ensure the indexes of the context's store (its engine's, when it was given one)."""
    ctx.engine.store.ensure_indexes()


def session_secret(ctx: Context) -> str:
    """``FPTRACK_ADMIN_SECRET`` (``Settings.admin_secret``), else one made at random on first
    start and kept in the store, so every gunicorn worker and restart shares it."""
    if ctx.settings.admin_secret:
        return ctx.settings.admin_secret
    kept = ctx.store.state.get_state(SECRET_STATE_KEY)
    if not kept:
        kept = ctx.store.state.state_once(key=SECRET_STATE_KEY, value=secrets.token_hex(32))
    return kept

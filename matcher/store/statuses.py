"""The review statuses of a match record, in their order (the store's, the admin's and the
command line's ``--status`` choices); a module of its own so that reading them needs no
database driver."""

from __future__ import annotations

STATUSES = ("new", "confirmed", "false_positive", "authorised", "takedown_sent")

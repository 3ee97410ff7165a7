"""The recipient kinds of a takedown notice, in the order a URL still up is escalated (the
store's, the admin's and the command line's choices; :mod:`matcher.evidence.recipients`);
a module of its own so that reading them needs no database driver."""

from __future__ import annotations

RECIPIENTS = ("operator", "host", "registrar", "search")
"""The site's operator, its hosting provider's abuse desk, its domain's registrar, and the
search engines' delisting forms."""

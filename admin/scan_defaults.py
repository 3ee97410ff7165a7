"""The embedded scan's defaults (:mod:`admin.scan`), in a module that imports nothing:
``fptrack scan --help`` names them without loading the engine."""

MAX_PAGES = 10_000
MAX_DEPTH = 10
OUTAGE_WAIT = 120
DEADLINE = 1800

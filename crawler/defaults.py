"""The crawler's defaults that the command line shows in its help, in a module that imports
nothing: ``fptrack scan --help`` names them without loading Scrapy. Their meaning is in
:mod:`crawler.settings` (the links and pending caps, the bytes in flight) and
:mod:`crawler.render` (the browser).
"""

MAX_LINKS_PER_PAGE = 5000
MAX_PENDING = 100_000
MAX_BYTES_IN_FLIGHT = 32 * 1024 * 1024
CHROMIUM = "/usr/bin/chromium"

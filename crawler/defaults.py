"""The crawler's defaults that the command line shows in its help, in a module that imports
nothing: ``fptrack scan --help`` names them without loading Scrapy. Their meaning is in
:mod:`crawler.settings` (the links and pending caps) and :mod:`crawler.render` (the browser).
"""

MAX_LINKS_PER_PAGE = 5000
MAX_PENDING = 100_000
CHROMIUM = "/usr/bin/chromium"

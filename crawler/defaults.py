"""The crawler's defaults that the command line shows in its help, in a module that imports
nothing: ``fptrack scan --help`` names them without loading Scrapy. Their meaning is in
:mod:`crawler.settings` (the links and pending caps, the bytes in flight), :mod:`crawler.render`
(the browser), :mod:`crawler.asset_fetch` (what a page is fetched with) and
:mod:`crawler.ocr` (images read by OCR).
"""

MAX_LINKS_PER_PAGE = 5000
MAX_PENDING = 100_000
MAX_BYTES_IN_FLIGHT = 32 * 1024 * 1024
CHROMIUM = "/usr/bin/chromium"
AUTO_RENDER = True
"""Pages whose text is built by script are rendered in the browser when it is available
(``FPTRACK_AUTO_RENDER``; :mod:`crawler.render`)."""
OCR_MAX_IMAGES = 20
"""Images read by OCR per page, at most (in page order)."""
OCR_MAX_BYTES = 8 << 20
OCR_MAX_PIXELS = 30_000_000
"""An image read by OCR is at most this large (a phone's screenshot of a long chapter,
1080 x 27,000 pixels, is within it)."""
OCR_SECONDS = 60.0
OCR_PAGE_SECONDS = 180.0
"""OCR time per image and per page, at most."""
OCR_MAX_MEMORY_MB = 1536
"""Memory of an OCR worker process and its children, at most (MiB)."""
ASSET_MAX_STYLESHEETS = 8
ASSET_MAX_FONTS = 4
"""Stylesheets and web fonts fetched with a page, at most (:mod:`crawler.asset_fetch`)."""
ASSET_MAX_BYTES = 2 << 20
"""A stylesheet or a web font fetched with a page is at most this large (2 MiB)."""
ASSET_CACHE_BYTES = 32 << 20
"""Stylesheets and fonts kept for a crawl, at most (32 MiB, least recently used out)."""
OCR_ENGINE = "rapidocr"
"""The OCR engine a crawl reads content images with (``rapidocr`` or ``tesseract``)."""

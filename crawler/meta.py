"""The keys fptrack sets in a Scrapy request's ``meta``, read by the spider
(:mod:`crawler.spiders.site`) and the renderer (:mod:`crawler.render`)."""

DEPTH = "fptrack_depth"
"""Meta key: how many links the request is from a start page."""
NEW = "fptrack_new"
"""Meta key of a new request until it reaches the scheduler
(:meth:`crawler.spiders.caps.CrawlCaps.pending`)."""
START = "fptrack_start"
"""Meta key of a start URL's request (and of its redirects): the start URL."""
RENDER = "fptrack_render"
"""Meta key of a page requested again to be rendered in the browser because its text is
built by script (:func:`crawler.scripted.needs_browser`; :mod:`crawler.render`)."""

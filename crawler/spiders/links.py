"""Which links of a site the spider follows: its ``include`` and ``exclude`` patterns, its
``allowed_domains``, its start URLs' origins.

:class:`SiteLinks` answers for one site: a link is wanted when it is no file Scrapy's link
extractor ignores (images, archives... but the downloads fptrack reads, ZIP, EPUB and 7z),
is not on another port of a start URL's host (counted in ``fptrack/other_port`` and named),
and matches ``include`` (regular expressions searched in the absolute URL) and not
``exclude``. A next or previous page link is followed whatever ``include`` says.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from scrapy.linkextractors import IGNORED_EXTENSIONS

from crawler.downloads import DOWNLOAD_SUFFIXES
from crawler.origin import Origins
from crawler.spiders.counts import CrawlCounts
from matcher.sites.site_config import SiteConfig

_SKIPPED_EXTENSIONS = [e for e in IGNORED_EXTENSIONS if e not in DOWNLOAD_SUFFIXES]
_IGNORED_SUFFIX = re.compile(
    r"\.(?:" + "|".join(map(re.escape, _SKIPPED_EXTENSIONS)) + r")$", re.IGNORECASE
)


class SiteLinks:
    """The links of ``site`` worth following (see the module docstring)."""

    def __init__(self, site: SiteConfig, counts: CrawlCounts) -> None:
        self.counts = counts
        self.domains = [d.lower().lstrip(".") for d in site.allowed_domains]
        self.origins = Origins(list(site.start_urls))
        self._include = [re.compile(p) for p in site.include]
        self._exclude = [re.compile(p) for p in site.exclude]

    def on_site(self, url: str) -> bool:
        """Within ``allowed_domains`` (what Scrapy's offsite filter lets through: the host,
        any port)."""
        host = (urlsplit(url).hostname or "").lower()
        return any(host == d or host.endswith("." + d) for d in self.domains)

    def same_origin(self, url: str) -> bool:
        """Not another port of a start URL's host (:mod:`crawler.origin`)."""
        return self.origins.admits(url)

    def canonical_taken(self, url: str) -> bool:
        """A page's declared canonical URL is taken when on the site, of the same origin."""
        return self.on_site(url) and self.same_origin(url)

    def neighbour(self, url: str | None) -> str | None:
        """A next or previous page link, unless ``exclude`` rules it out."""
        if url is None or any(p.search(url) for p in self._exclude):
            return None
        return url

    def followed(self, url: str) -> bool:
        """A next or previous page link is followed: not a skipped file, same origin."""
        return not _IGNORED_SUFFIX.search(url.split("?", 1)[0]) and self.same_origin(url)

    def beyond(self, url: str) -> bool:
        """A link beyond ``max_depth`` is counted when wanted and on the site."""
        return self.wanted(url, count=False) and self.on_site(url)

    def wanted(self, url: str, count: bool = True) -> bool:
        path = url.split("?", 1)[0]
        if _IGNORED_SUFFIX.search(path):
            return False
        if not self.same_origin(url):
            if count:
                self.counts.inc("fptrack/other_port")
                self.counts.name("other_port", url, "on another port of the site's host")
            return False
        if self._include and not any(p.search(url) for p in self._include):
            return False
        return not any(p.search(url) for p in self._exclude)

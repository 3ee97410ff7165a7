"""Scrapy's meta-refresh redirect, read from the head of the body only.

Scrapy's ``MetaRefreshMiddleware`` looks for ``<meta http-equiv="refresh">`` in the first
4,096 characters of ``response.text``, but ``response.text`` decodes the whole body and the
response keeps it: a 6 MB page waiting for a reader then holds its body twice, or three
times over for Chinese text decoded to UCS-2. :class:`HeadMetaRefreshMiddleware` looks in
the first :data:`HEAD_BYTES` of the body instead (4,096 characters need at most that many
bytes in any encoding a page uses) and hands the response to Scrapy's middleware only when
a refresh is found there, so that redirects are followed exactly as Scrapy follows them.
"""

from __future__ import annotations

from typing import Any

from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
from scrapy.http import HtmlResponse, Request, Response
from scrapy.utils.response import get_meta_refresh

HEAD_BYTES = 4 * 4096


class HeadMetaRefreshMiddleware(MetaRefreshMiddleware):
    """:class:`~scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware` that decodes
    no more than :data:`HEAD_BYTES` of a page without a refresh."""

    def process_response(self, request: Request, response: Response, *args: Any) -> Any:
        if isinstance(response, HtmlResponse) and len(response.body) > HEAD_BYTES:
            head = response.replace(body=response.body[:HEAD_BYTES])
            if get_meta_refresh(head, ignore_tags=self._ignore_tags)[1] is None:
                return response
        return super().process_response(request, response, *args)

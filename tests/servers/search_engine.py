"""A local search engine answering as SearXNG's JSON API does (``/search`` with ``q`` and
``format=json``, in the query string of a GET or the form of a POST -> ``{"query": ...,
"results": [{"url", "title", "content", "engine"}, ...]}``), its results
given by the test, and the ways a real instance fails: rate-limited (429), the JSON format
not enabled (403), an answer that is not JSON, or no answer in time.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.servers.http_server import FixtureServer, Handler, QuietHandler

Answer = Callable[[str], list[dict[str, Any]]]
"""The results of a query (the ``q`` asked, quotes included)."""
MODES = ("ok", "rate-limited", "no-json-format", "not-json", "hang")


class SearchEngineServer(FixtureServer):
    """SearXNG's JSON API on 127.0.0.1: ``answer`` gives each query's results; ``mode``
    (one of :data:`MODES`) how it answers; ``asked`` records every ``q``, in order."""

    def __init__(self, answer: Answer, mode: str = "ok") -> None:
        self.answer, self.mode = answer, mode
        self.asked: list[str] = []
        self.released = threading.Event()
        super().__init__()

    def stop(self) -> None:
        self.released.set()  # a hanging answer ends
        super().stop()

    def make_handler(self) -> Handler:
        engine = self

        class Search(QuietHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                self._search(parts.path, parse_qs(parts.query))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = self.rfile.read(length).decode("utf-8", "replace")
                self._search(urlsplit(self.path).path, parse_qs(form))

            def _search(self, path: str, params: dict[str, list[str]]) -> None:
                query = params.get("q", [""])[0]
                parts = urlsplit(path)
                if parts.path != "/search":
                    return self._send(404, b"not found", "text/plain")
                engine.asked.append(query)
                if engine.mode == "rate-limited":
                    return self._send(429, b"Too Many Requests", "text/plain")
                if engine.mode == "no-json-format" or params.get("format") != ["json"]:
                    return self._send(403, b"Forbidden", "text/plain")
                if engine.mode == "not-json":
                    return self._send(200, b"<html><body>results</body></html>", "text/html")
                if engine.mode == "hang":
                    engine.released.wait(60)
                    return
                results = [
                    {"engine": "local", "content": "", **result} for result in engine.answer(query)
                ]
                body = json.dumps({"query": query, "results": results, "answers": []})
                self._send(200, body.encode("utf-8"), "application/json")

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Search

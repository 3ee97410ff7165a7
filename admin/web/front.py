"""The admin's front: an ASGI application that serves the WSGI admin (Flask) the way a
buffering reverse proxy would, so that a slow client costs a buffer, never a thread.

gunicorn's asyncio worker (:class:`admin.web.serve.AdminWorker`) reads every connection in
its event loop: a client sending its headers one byte at a time holds no thread. Once the
headers are in, :class:`BufferedFront` asks the application how large a body this request
may have (``limit``, :func:`admin.web.security.body_limit`: by route) and reads the body in
the loop too, at most that many bytes, into a :class:`~tempfile.SpooledTemporaryFile`
(memory up to :data:`SPOOL_BYTES`, disk beyond), so a slow body holds no thread either and
no body costs more memory than :data:`SPOOL_BYTES`. A body declared larger than the limit
is not read at all, and one that turns out larger (chunked) is read no further: the
application is then called with an empty body and the length seen, and answers 413 itself
(:func:`admin.web.security.check_body`). Only then does the request take one of the
``threads`` threads, which run the application with the whole request at hand.

The answer goes back the same way: the thread collects it up to :data:`HOLD_BYTES`
(pages, their errors, small exports) and returns, and the loop sends it to the client however
slowly that reads; a larger answer (a big export, an evidence download) is sent from its
thread chunk by chunk, each waiting for the client to take the previous ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import IO, Any

log = logging.getLogger(__name__)

SPOOL_BYTES = 1024 * 1024
"""A request body is kept in memory up to this size, on disk beyond."""
HOLD_BYTES = 4 * 1024 * 1024
"""An answer up to this size is handed to the event loop whole and its thread freed."""
PLAIN_500 = b"internal error: see the admin's log\n"

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class BufferedFront:
    """An ASGI application serving ``app`` (WSGI) in ``threads`` threads, each request's
    body read first, at most ``limit(environ)`` bytes (see the module docstring)."""

    def __init__(self, app: WSGIApp, limit: Callable[[dict[str, Any]], int], threads: int) -> None:
        self.app = app
        self.limit = limit
        self.threads = threads
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="admin-request")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        # anything else (a WebSocket) is not served: returning closes it

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.pool.shutdown(wait=False, cancel_futures=True)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        environ = environ_of(scope)
        limit = self.limit(environ)
        declared = environ.get("CONTENT_LENGTH", "")
        body: IO[bytes] = io.BytesIO()
        if declared.isdigit() and int(declared) > limit:
            seen = int(declared)  # not read: the application answers 413
        else:
            try:
                body, seen = await read_body(receive, limit)
            except ConnectionResetError:
                return  # nothing to answer
            if seen > limit:
                body.close()
                body = io.BytesIO()
        environ["wsgi.input"] = body
        environ["CONTENT_LENGTH"] = str(seen)
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        loop = asyncio.get_running_loop()
        try:
            answer = await loop.run_in_executor(self.pool, self._run, environ, send, loop)
        finally:
            body.close()
        if answer is not None:
            status, headers, chunks = answer
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": b"".join(chunks)})

    def _run(
        self, environ: dict[str, Any], send: Send, loop: asyncio.AbstractEventLoop
    ) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]] | None:
        """Call the application in this thread: its whole answer when it is no larger than
        :data:`HOLD_BYTES` (the loop sends it), else None once this thread has sent it."""
        started: list[Any] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            if exc_info is not None and started and started[0] == "sent":
                raise exc_info[1].with_traceback(exc_info[2])
            started[:] = [
                int(status.split(" ", 1)[0]),
                [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers],
            ]
            return lambda data: held.append(data)

        def forward(message: Message) -> None:
            asyncio.run_coroutine_threadsafe(send(message), loop).result()

        held: list[bytes] = []
        size = 0
        streaming = False
        try:
            result = self.app(environ, start_response)
        except Exception:
            log.exception("the admin application failed")
            return 500, [(b"content-type", b"text/plain")], [PLAIN_500]
        try:
            for chunk in result:
                if not chunk:
                    continue
                if not streaming:
                    held.append(chunk)
                    size += len(chunk)
                    if size <= HOLD_BYTES:
                        continue
                    streaming = True
                    status, headers = started
                    forward({"type": "http.response.start", "status": status, "headers": headers})
                    started[:] = ["sent"]
                    chunk = b"".join(held)
                    held.clear()
                forward({"type": "http.response.body", "body": chunk, "more_body": True})
        except OSError:  # the client went away while its answer was sent
            return None
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        if streaming:
            with contextlib.suppress(OSError):
                forward({"type": "http.response.body", "body": b"", "more_body": False})
            return None
        status, headers = started
        return status, headers, held


async def read_body(receive: Receive, limit: int) -> tuple[IO[bytes], int]:
    """The request's body, in a spooled file at its start, and its length; reading stops
    once more than ``limit`` bytes came (the length then says how many)."""
    body: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115
    seen = 0
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ConnectionResetError("the client went away while sending its request")
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                break
            body.write(chunk)
            if not message.get("more_body", False):
                break
    except BaseException:
        body.close()
        raise
    body.seek(0)
    return body, seen


def environ_of(scope: Scope) -> dict[str, Any]:
    """The WSGI environ (PEP 3333) of an ASGI HTTP request's scope, without its body."""
    root = scope.get("root_path", "")
    path = scope["path"]
    if root and path.startswith(root):
        path = path[len(root) :]
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": root.encode("utf-8").decode("latin-1"),
        "PATH_INFO": path.encode("utf-8").decode("latin-1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1]) if server[1] is not None else "",
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "REMOTE_ADDR": str(client[0]),
        "REMOTE_PORT": str(client[1]),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        key = name if name in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{name}"
        if key in environ:
            value = f"{environ[key]}{'; ' if key == 'HTTP_COOKIE' else ','}{value}"
        environ[key] = value
    return environ

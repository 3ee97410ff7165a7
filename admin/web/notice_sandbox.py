"""The takedown template's sandbox, run as a process of its own.

``python -m admin.web.notice_sandbox`` reads ``{"source", "context", "html"}`` as JSON on
its standard input and writes ``[true, text]`` or ``[false, reason]`` as JSON on its
standard output. :func:`admin.web.reports.render_notice` starts it for every render and
kills it after ``RENDER_SECONDS``: a fresh interpreter, not a fork of the admin's threaded
server, whose locks (held by other threads at the moment of a fork) the child would inherit
held. The child caps its own address space at :data:`MEMORY_BYTES`.

The sandbox is Jinja2's immutable sandbox (no attribute starting with ``_``, no changing the
data, ranges of at most 100,000) with no loader, strict about undefined names, no ``safe``
filter, no ``autoescape`` tag, no ``*`` or ``**`` whose result would exceed
:data:`MAX_NOTICE_CHARS` characters, no call with an integer argument above it, and output
of at most that many characters.
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

from jinja2 import StrictUndefined, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

MAX_NOTICE_CHARS = 1_000_000
MEMORY_BYTES = 1 << 30
"""The render process's address-space limit (1 GiB)."""


class NoticeError(ValueError):
    """A takedown template that cannot be used."""


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """The sandbox, with ``*`` and ``**`` and calls refused when they would build
    something larger than :data:`MAX_NOTICE_CHARS`."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int) and abs(right) > 64:
            raise SecurityError("unsafe: a power above 64")
        if operator == "*":
            sized = [v for v in (left, right) if isinstance(v, str | list | tuple)]
            count = [v for v in (left, right) if isinstance(v, int)]
            if sized and count and len(sized[0]) * count[0] > MAX_NOTICE_CHARS:
                raise SecurityError(f"unsafe: a result over {MAX_NOTICE_CHARS:,} characters")
        return super().call_binop(context, operator, left, right)

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            integer = isinstance(value, int) and not isinstance(value, bool)
            if integer and abs(value) > MAX_NOTICE_CHARS:
                raise SecurityError(f"unsafe: an argument over {MAX_NOTICE_CHARS:,}")
        return super().call(__context, __obj, *args, **kwargs)


def _sandbox(html: bool) -> ImmutableSandboxedEnvironment:
    env = _BoundedSandbox(
        autoescape=html,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.pop("safe", None)
    return env


def render(source: str, context: dict[str, Any], *, html: bool) -> str:
    """``source`` rendered in the sandbox, in this process; a template the sandbox refuses
    is a :class:`NoticeError`."""
    env = _sandbox(html)
    tree = env.parse(source)
    if any(True for _ in tree.find_all((nodes.EvalContextModifier,))):
        raise NoticeError("the autoescape tag is not allowed in a takedown template")
    out, size = [], 0
    for chunk in env.from_string(tree).generate(context):
        size += len(chunk)
        if size > MAX_NOTICE_CHARS:
            raise NoticeError(f"the notice would exceed {MAX_NOTICE_CHARS:,} characters")
        out.append(chunk)
    return "".join(out)


def answer(request: dict[str, Any]) -> tuple[bool, str]:
    """``(True, text)`` or ``(False, why the template cannot be rendered)``."""
    try:
        return True, render(request["source"], request["context"], html=bool(request["html"]))
    except NoticeError as exc:
        return False, str(exc)
    except Exception as exc:
        where = f" (line {exc.lineno})" if getattr(exc, "lineno", None) else ""
        return False, f"{type(exc).__name__}{where}: {exc}"


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    request = json.loads(sys.stdin.buffer.read())
    sys.stdout.write(json.dumps(answer(request), ensure_ascii=True))


if __name__ == "__main__":
    main()

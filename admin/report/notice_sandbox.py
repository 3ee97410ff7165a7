"""The takedown template's sandbox, run as a process of its own.

``python -m admin.report.notice_sandbox`` reads ``{"source", "context", "html"}`` as JSON on
its standard input and writes ``[true, text]`` or ``[false, reason]`` as JSON on its
standard output. :func:`admin.report.takedown.render_notice` starts it for every render and
kills it after ``RENDER_SECONDS``: a fresh interpreter, not a fork of the admin's threaded
server, whose locks (held by other threads at the moment of a fork) the child would inherit
held. The child caps its own address space at :data:`MEMORY_BYTES`.

The sandbox is Jinja2's immutable sandbox (no attribute starting with ``_``, no changing the
data, ranges of at most 100,000) with no loader, strict about undefined names, no ``safe``
filter and no ``autoescape`` tag. Nothing may build a string or list larger than
:data:`MAX_NOTICE_CHARS`: ``*`` and ``**``, and the filters and string methods that
multiply size (``format``, ``replace``, ``join``, ``center``, ``indent``, the ``%`` operator
and the padding methods), are sized before they run and refused when over; no filter or
call takes an integer argument above it; every filter's string result is measured; and the
output is counted as it is produced. What slips past those (``~`` doubling a string, say)
meets the address-space limit and is refused as needing too much memory.
"""

from __future__ import annotations

import json
import re
import resource
import sys
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any

from jinja2 import Environment, StrictUndefined, nodes
from jinja2.exceptions import SecurityError
from jinja2.nodes import EvalContext
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

MAX_NOTICE_CHARS = 1_000_000
MEMORY_BYTES = 256 << 20
"""The render process's address-space limit (256 MiB; the interpreter with Jinja2 takes
about 25 MiB of it)."""
_PRINTF_WIDTH = re.compile(r"%[#0\- +]*(\d*)(?:\.(\d*))?")
_STR_METHODS = {"replace", "join", "center", "ljust", "rjust", "zfill", "expandtabs", "format"}


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
            if sized and count:
                _refuse_over(len(sized[0]) * count[0])
        if operator == "%" and isinstance(left, str):
            _check_printf(left)
        return super().call_binop(context, operator, left, right)

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _check_arguments(args, kwargs)
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str) and getattr(__obj, "__name__", "") in _STR_METHODS:
            _check_str_method(owner, __obj.__name__, args)
        return _measured(super().call(__context, __obj, *args, **kwargs))


def _refuse_over(size: int, what: str = "a result") -> None:
    if size > MAX_NOTICE_CHARS:
        raise SecurityError(f"unsafe: {what} over {MAX_NOTICE_CHARS:,} characters")


def _measured(result: Any) -> Any:
    if isinstance(result, str | list | tuple):
        _refuse_over(len(result))
    return result


def _check_arguments(args: Iterable[Any], kwargs: dict[str, Any]) -> None:
    for value in (*args, *kwargs.values()):
        integer = isinstance(value, int) and not isinstance(value, bool)
        if integer and abs(value) > MAX_NOTICE_CHARS:
            raise SecurityError(f"unsafe: an argument over {MAX_NOTICE_CHARS:,}")


def _check_printf(spec: str) -> None:
    """``%`` formatting whose widths or precisions would pad past the limit is refused."""
    for width, precision in _PRINTF_WIDTH.findall(spec):
        for digits in (width, precision):
            if digits and (len(digits) > 7 or int(digits) > MAX_NOTICE_CHARS):
                raise SecurityError(f"unsafe: a width over {MAX_NOTICE_CHARS:,}")


def _replaced_size(value: str, old: str, new: str) -> int:
    hits = len(value) + 1 if old == "" else value.count(old)
    return len(value) + hits * (len(new) - len(old))


def _joined_size(items: list[Any], separator: str) -> int:
    return sum(len(str(i)) for i in items) + len(separator) * max(0, len(items) - 1)


def _check_str_method(value: str, name: str, args: tuple[Any, ...]) -> None:
    if name == "replace" and len(args) >= 2:
        _refuse_over(_replaced_size(value, str(args[0]), str(args[1])))
    elif name == "join" and args:
        items = args[0] if isinstance(args[0], list | tuple | str) else []
        _refuse_over(_joined_size(list(items), value))
    elif name == "expandtabs":
        size = int(args[0]) if args and isinstance(args[0], int) else 8
        _refuse_over(len(value) + value.count("\t") * size)
    elif name == "format":
        _refuse_over(len(value) + sum(len(str(a)) for a in args))


def _bounded_filter(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """The filter, with its result sized before (where it can multiply size) and after."""

    @wraps(original)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _check_arguments(args, kwargs)
        values = [a for a in args if not _is_context(a)]
        first = values[0] if values else None
        if name == "format" and isinstance(first, str):
            _check_printf(first)
        elif name == "replace" and len(values) >= 3:
            _refuse_over(_replaced_size(str(values[0]), str(values[1]), str(values[2])))
        elif name == "join" and values:
            items = list(values[0]) if isinstance(values[0], Iterable) else []
            separator = str(values[1]) if len(values) > 1 else str(kwargs.get("d", ""))
            _refuse_over(_joined_size(items, separator))
            values[0] = items
            args = (*[a for a in args if _is_context(a)], *values)
        elif name == "indent" and isinstance(first, str):
            width = values[1] if len(values) > 1 else kwargs.get("width", 4)
            pad = len(width) if isinstance(width, str) else int(width or 0)
            _refuse_over(len(first) + (first.count("\n") + 1) * pad)
        elif name == "center" and len(values) > 1 and isinstance(values[1], int):
            _refuse_over(values[1])
        return _measured(original(*args, **kwargs))

    return bounded


def _is_context(value: Any) -> bool:
    return isinstance(value, Context | EvalContext | Environment)


def _sandbox(html: bool) -> ImmutableSandboxedEnvironment:
    env = _BoundedSandbox(
        autoescape=html,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.pop("safe", None)
    for name, original in list(env.filters.items()):
        env.filters[name] = _bounded_filter(name, original)
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
    except MemoryError:
        return False, f"the template needs more than {MEMORY_BYTES >> 20} MB of memory"
    except Exception as exc:
        where = f" (line {exc.lineno})" if getattr(exc, "lineno", None) else ""
        return False, f"{type(exc).__name__}{where}: {exc}"


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    request = json.loads(sys.stdin.buffer.read())
    sys.stdout.write(json.dumps(answer(request), ensure_ascii=True))


if __name__ == "__main__":
    main()

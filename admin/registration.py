"""Registering what the platform watches: sites (their configuration, beat schedules and
authorised matches) and works (files or a text, each matched against the pages already
crawled). Used by the admin's pages and the API alike; the caller looks the services up.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Protocol

from admin.reading import DEFAULT_MAX_BYTES, iter_work_files
from matcher.errors import MatcherError
from matcher.sites.site_config import SiteConfig

if TYPE_CHECKING:
    from matcher.matching.engine import Engine
    from matcher.store import Store
    from matcher.worker.schedules import Schedules

Registered = tuple[list[tuple[str, str]], list[str]]
"""``([(work id, title)], [problem])``."""


class Upload(Protocol):
    """An uploaded file: what a web framework's file object offers."""

    filename: str | None

    def save(self, dst: Path) -> None: ...


def save_site(store: Store, schedules: Schedules | None, config: SiteConfig, *, by: str) -> str:
    """Save a site's configuration and its beat schedules (``schedules=None``: the store
    only), and classify the unreviewed matches of an authorised site as such, in the name of
    user ``by``; what was done, in a line."""
    store.sites.save_site(config)
    note = "saved"
    if schedules is not None:
        note += "; schedule " + (config.schedule if schedules.sync_site(config) else "off")
        if config.recrawl != "never":
            note += f"; incremental crawl {config.recrawl}"
    if config.authorised:
        changed = mark_authorised(store, config.name, by=by)
        if changed:
            note += f"; {changed} unreviewed match(es) classified authorised"
    return note


def remove_site(store: Store, schedules: Schedules | None, name: str) -> None:
    """Remove a site's configuration and schedules (its pages and matches stay)."""
    store.sites.delete_site(name)
    if schedules is not None:
        schedules.remove_site(name)


def mark_authorised(store: Store, site: str, *, by: str) -> int:
    """Classify the unreviewed matches of a licensed site as authorised; how many."""
    ids = store.matches.match_ids(limit=None, site=site, status="new")
    return sum(store.matches.set_status(i, "authorised", "site marked authorised", by) for i in ids)


def register_text(
    engine: Engine,
    store: Store,
    text: str,
    *,
    title: str,
    source: str,
    author: str = "",
    added: Callable[[str], None],
) -> Registered:
    """Register one work from its text; ``added(work_id)`` then (the dispatch's matching
    against the pages already crawled)."""
    try:
        work_id = engine.add_work(text, title=title, source=source, author=author)
    except MatcherError as exc:
        return [], [str(exc)]
    note = store.twins.same_text_note(work_id)
    added(work_id)
    return [(work_id, title)], [note] if note else []


def register_files(
    engine: Engine, store: Store, paths: Iterable[Path], *, added: Callable[[str], None]
) -> Registered:
    """Register every work file of ``paths`` (zip archives unpacked, each titled by its
    file name's stem), ``added(work_id)`` after each."""
    works, problems = [], []
    for work in iter_work_files(list(paths), DEFAULT_MAX_BYTES):
        if work.error:
            problems.append(work.error)
            continue
        title = PurePath(work.name).stem
        try:
            work_id = engine.add_work(work.text, title=title, source=work.name)
        except MatcherError as exc:
            problems.append(f"{work.name}: {exc}")
            continue
        works.append((work_id, title))
        note = store.twins.same_text_note(work_id)
        if note:
            problems.append(f"{work.name}: {note}")
        added(work_id)
    return works, problems


def register_uploads(
    engine: Engine, store: Store, uploads: Iterable[Upload], *, added: Callable[[str], None]
) -> Registered:
    """Register uploaded files (:func:`register_files`), each saved under its own base name
    (a client's folders and Windows separators dropped) in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="fptrack-upload-") as tmp:
        paths = []
        for n, f in enumerate(uploads):
            name = PurePath((f.filename or f"upload-{n}").replace("\\", "/")).name or f"upload-{n}"
            folder = Path(tmp, str(n))
            folder.mkdir()
            path = folder / name
            f.save(path)
            paths.append(path)
        return register_files(engine, store, paths, added=added)

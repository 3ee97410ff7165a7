"""Stamping the evidence archive: the queued WARC files under TSA tokens, a batch at a time.

The ingest queues each WARC file it archives (:class:`matcher.worker.ingest.Ingest`, when
``FPTRACK_TSA_URL`` is set); beat's ``evidence:stamp`` runs :func:`stamp_waiting` every
``FPTRACK_TSA_EVERY`` seconds (and ``fptrack evidence stamp`` at once): the files waiting
longest, up to ``FPTRACK_TSA_BATCH``, make one batch list (:func:`matcher.evidence.timestamps.
batch_list`), the TSA stamps it, and the list and token are kept before the files are
pointed at them. A TSA that is down or refuses leaves the files queued for the next run,
which stamps them then: a crawl never waits for a TSA, and no file is left out. The last
run's outcome is kept in ``state`` (:data:`STATE_KEY`), for ``fptrack check``.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

from matcher.evidence import timestamps
from matcher.store import Store, now

log = logging.getLogger(__name__)

STATE_KEY = "evidence_stamping"
"""The ``state`` key of the last stamping run's outcome."""


@dataclass
class Stamped:
    """What one run did: files and batches stamped, files still waiting, and the TSA's
    failure that stopped it ("" when none did)."""

    stamped: int = 0
    batches: int = 0
    waiting: int = 0
    error: str = ""


def stamp_waiting(
    store: Store, tsa_url: str, batch: int, timeout: float = timestamps.TIMEOUT_SECONDS
) -> Stamped:
    """Stamp every queued file, ``batch`` files a token (see the module docstring)."""
    done = Stamped()
    while True:
        waiting = store.stamps.waiting_stamps(batch)
        if not waiting:
            break
        listed = timestamps.batch_list(waiting)
        try:
            token = timestamps.ask(tsa_url, listed, timeout)
        except timestamps.StampError as exc:
            done.error = str(exc)
            log.warning("evidence not stamped yet (queued for the next run): %s", exc)
            break
        record = {"der": token.der, "tsa": tsa_url, "gen_time": token.gen_time}
        record["serial"] = token.serial
        store.stamps.save_batch(timestamps.list_name(listed), listed, waiting, record)
        done.stamped += len(waiting)
        done.batches += 1
        if len(waiting) < batch:
            break
    done.waiting = store.stamps.waiting_count()
    store.state.set_state(STATE_KEY, {**asdict(done), "at": now()})
    return done

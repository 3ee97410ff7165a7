"""One match record per whole-book download and work, from the matches of its parts.

A download longer than ``FPTRACK_DOWNLOAD_PART_CHARS`` is stored as one page per part
(:func:`matcher.pages.part_url`), each matched on its own text. What a team sends a
takedown for is the download: :func:`merge` folds the parts' records of one work into one
record of the download's first page, its URL the download's:

- ``parts``: the numbers of the parts that copy the work (from 1);
- ``score``, ``scores``, ``methods`` and ``containment_page``: those of the best-scored part;
- ``containment_work`` (and ``containment``): the share of the work the parts hold between
  them (their own shares added, at most 1: the parts hold disjoint text);
- ``segments``: every segment (chapter) of the work any part holds, in order;
- ``evidence``: the longest passages of all the parts (at most
  :data:`matcher.matching.match_records.MAX_PASSAGES`), in the order of the download, each naming
  its
  ``part``, its ``page_span`` in the text of the whole download: the parts' texts joined
  by one newline, in order (:meth:`matcher.store.pages.Pages.download_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matcher.matching.match_records import MAX_PASSAGES


def merge(first: dict[str, Any], parts: Sequence[tuple[int, int, list[dict]]]) -> list[dict]:
    """The download's records, one per work, from ``parts``: per part, ``(its number, where
    its text starts in the download's text, its records)``; ``first`` is the first part's
    page (the records' page)."""
    by_work: dict[Any, list[tuple[int, int, dict]]] = {}
    for number, start, records in parts:
        for record in records:
            by_work.setdefault(record["work_id"], []).append((number, start, record))
    merged = []
    for held in by_work.values():
        best = max(held, key=lambda h: (h[2]["score"], -h[0]))[2]
        share = min(1.0, sum(float(r["containment_work"]) for _, _, r in held))
        segments = {int(s["index"]): s for _, _, r in held for s in r.get("segments", [])}
        passages = [
            {**item, "part": number, "page_span": [item["page_span"][0] + start,
                                                   item["page_span"][1] + start]}
            for number, start, r in held
            for item in r.get("evidence", [])
        ]  # fmt: skip
        longest = sorted(passages, key=lambda e: -int(e.get("chars", 0)))[:MAX_PASSAGES]
        record = {
            **best,
            "containment_work": share,
            "containment": share,
            "scores": {**best.get("scores", {}), "containment_work": share},
            "segments": [segments[i] for i in sorted(segments)],
            "evidence": sorted(longest, key=lambda e: e["page_span"][0]),
            "parts": sorted(number for number, _, _ in held),
            "page_id": first["_id"],
            "url": first["url"],
            "site": first.get("site", ""),
        }
        record.pop("archive", None)
        if first.get("archive"):
            record["archive"] = first["archive"]
        merged.append(record)
    return merged

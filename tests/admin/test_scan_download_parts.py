"""The scan's contract names a download stored in parts by its own URL: one entry per
(download URL, work), whichever parts copy the work, the parts listed beside it."""

from __future__ import annotations

from pathlib import Path

from admin.scan import contract_matches
from matcher.engine import Engine
from matcher.pages import part_url

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "works"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


def test_a_download_in_parts_is_one_entry_per_work(engine: Engine) -> None:
    engine.add_work(sample("lighthouse.txt"), title="灯塔", source="lighthouse.txt")
    engine.add_work(sample("tea-history.txt"), title="茶史", source="tea-history.txt")
    download = "http://pirate.test/down/book.zip"
    first, second = part_url(download, 1), part_url(download, 2)
    lighthouse, tea = sample("lighthouse.txt"), sample("tea-history.txt")
    engine.process_page(first, lighthouse[: len(lighthouse) // 2], site="pirate")
    engine.process_page(second, lighthouse[len(lighthouse) // 2 :] + "\n" + tea, site="pirate")
    engine.process_page("http://pirate.test/1.html", tea, site="pirate")

    entries = {(e["url"], e["work"]): e for e in contract_matches(engine)}
    assert set(entries) == {
        (download, "lighthouse.txt"),
        (download, "tea-history.txt"),
        ("http://pirate.test/1.html", "tea-history.txt"),
    }
    assert entries[download, "lighthouse.txt"]["parts"] == [first, second]
    assert entries[download, "tea-history.txt"]["parts"] == [second]
    assert "parts" not in entries["http://pirate.test/1.html", "tea-history.txt"]
    assert all(e["evidence"] for e in entries.values())

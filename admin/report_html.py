"""The old import path of :mod:`admin.report.html_report` (the HTML report of matches), kept
for the command modules that still import it from here."""

from admin.report.html_report import Counts, match_texts, render, served_folders, when

__all__ = ["Counts", "match_texts", "render", "served_folders", "when"]

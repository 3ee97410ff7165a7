"""Reports: per period, site and work; CSV and XLSX exports, a printable report, takedown
notices per site."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, render_template

bp = Blueprint("reports", __name__, url_prefix="/reports")


@bp.get("/")
def index() -> Any:
    from admin.web.app import services

    sites = [s.name for s in services().ctx.ops.list_sites()]
    return render_template("reports.html", sites=sites)

"""The admin web platform: dashboards, match review, works, sites, queries and reports.

:func:`admin.web.app.create_app` builds the Flask application over a
:class:`admin.context.Context`; ``fptrack admin serve`` runs it under gunicorn.
"""

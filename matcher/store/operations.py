"""The operators' view of the store: sites, crawl runs, failures, accounts, API tokens, job
state, reports, dashboard counters, and the works and match queries of the admin's pages.

:class:`Operations` is a facade kept so its callers need not all change at once: each of its
methods is the same-named method of one family of :mod:`matcher.store` (``store.sites``,
``store.crawls``, ``store.failure_log``, ``store.users``, ``store.tokens``, ``store.state``,
``store.reports``, ``store.dashboard``, ``store.works``, ``store.matches``), where its query
lives. New code can call the family directly.
"""

from __future__ import annotations

from matcher.store import Store
from matcher.store.common import MAX_LIST, Forward, site_name, status_name

__all__ = ["MAX_LIST", "Operations", "site_name", "status_name"]


class Operations:
    """Sites, crawl runs, failure records, accounts, job state and match queries over one
    store (forwards to its families)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.db = store.db
        self.sites = store.sites
        self.crawls = store.crawls
        self.pages = store.pages
        self.failure_log = store.failure_log
        self.users = store.users
        self.tokens = store.tokens
        self.fingerprints = store.fingerprints
        self.state = store.state
        self.reports = store.reports
        self.dashboard = store.dashboard
        self.works = store.works
        self.matches = store.matches

    # sites -------------------------------------------------------------------------------
    save_site = Forward("sites")
    get_site = Forward("sites")
    list_sites = Forward("sites")
    delete_site = Forward("sites")
    authorised_sites = Forward("sites")

    # crawls ------------------------------------------------------------------------------
    record_crawl = Forward("crawls")
    record_crawl_process = Forward("crawls")
    crawl_of_task = Forward("crawls")
    crawl_progress = Forward("crawls")
    failed_crawls = Forward("crawls")
    running_crawls_started_before = Forward("crawls")
    running_crawls = Forward("crawls")
    close_crawl_processes = Forward("crawls")
    last_crawls = Forward("crawls")
    latest_crawls = Forward("crawls")
    crawl_outcomes = Forward("crawls")
    crawls_started = Forward("crawls")

    # pages -------------------------------------------------------------------------------
    pending_since = Forward("pages")
    stale_pending_pages = Forward("pages")
    pending_page_count = Forward("pages")
    pages_fetched = Forward("pages")

    # failure_log -------------------------------------------------------------------------
    record_failure = Forward("failure_log")
    clear_failure = Forward("failure_log")
    failures = Forward("failure_log", "recent")
    failure_count = Forward("failure_log")
    failure_counts = Forward("failure_log")

    # users -------------------------------------------------------------------------------
    has_users = Forward("users")
    user_record = Forward("users")
    user_records = Forward("users")
    save_user = Forward("users")
    update_user = Forward("users")
    count_login_failure = Forward("users")
    hold_logins = Forward("users")
    login_succeeded = Forward("users")

    # tokens ------------------------------------------------------------------------------
    save_api_token = Forward("tokens")
    api_token = Forward("tokens")
    api_tokens = Forward("tokens")
    revoke_api_token = Forward("tokens")
    api_token_used = Forward("tokens")

    # fingerprints ------------------------------------------------------------------------
    fingerprint_counts = Forward("fingerprints")

    # state -------------------------------------------------------------------------------
    get_state = Forward("state")
    set_state = Forward("state")
    state_once = Forward("state")

    # reports -----------------------------------------------------------------------------
    save_report = Forward("reports")

    # dashboard ---------------------------------------------------------------------------
    tally_total = Forward("dashboard")
    tally_sites = Forward("dashboard")
    tally_days = Forward("dashboard")
    tally_top = Forward("dashboard")
    infringing_by_work = Forward("dashboard")
    recount = Forward("dashboard")

    # works -------------------------------------------------------------------------------
    works_registered_since = Forward("works")
    search_works = Forward("works")
    work_sources = Forward("works")
    twin_pairs = Forward("works")
    same_text_note = Forward("works")
    list_works = Forward("works")
    find_works = Forward("works")

    # matches -----------------------------------------------------------------------------
    match_filter = Forward("matches")
    list_matches = Forward("matches")
    find_matches = Forward("matches")
    match_ids = Forward("matches")
    match = Forward("matches")
    active_matches = Forward("matches")
    iter_matches = Forward("matches")
    set_status = Forward("matches")

"""Every setting of the backend, read once at the entry point and passed down.

``Settings.from_env()`` reads the ``FPTRACK_*`` environment variables (names below); code
below the entry point never reads the environment itself. Defaults are the ones
docs/configuration.md lists.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import unquote, urlsplit

from matcher.errors import SettingsError

CLUSTER_SCHEME = "redis+cluster://"
SENTINEL_SCHEME = "redis+sentinel://"
SERVER_SCHEMES = ("redis://", "rediss://", "unix://")
DEFAULT_REDIS_PORT = 6379
DEFAULT_SENTINEL_PORT = 26379
SENTINEL_FORM = "redis+sentinel://[[user]:password@]host:port[,host:port...]/SERVICE[/DB]"


def spec_error(spec: str) -> str:
    """Why ``spec`` (``FPTRACK_ARCHIVE``, opened by :func:`matcher.evidence.archive.open_archive`)
    names no archive (``gridfs``, ``none`` or an absolute folder), or ""."""
    if spec in ("gridfs", "none") or spec.startswith("/"):
        return ""
    return f"archive must be gridfs, none or an absolute folder, got {spec!r}"


@dataclass(frozen=True)
class SmtpConfig:
    """Where email alerts go out: ``FPTRACK_SMTP_URL`` (``smtp://[user:password@]host[:port]``,
    port 25 by default, or ``smtps://`` for TLS from the start, port 465), the sender
    ``FPTRACK_SMTP_FROM``, and ``FPTRACK_SMTP_STARTTLS`` (upgrade a ``smtp://`` connection).

    >>> SmtpConfig.parse("smtp://bot:s%40cret@mail.example:2525", "fptrack@example.com").port
    2525
    >>> SmtpConfig.parse("", "") is None
    True
    """

    host: str
    port: int
    sender: str
    tls: bool = False
    starttls: bool = False
    user: str = ""
    password: str = field(default="", repr=False)

    @classmethod
    def parse(cls, url: str, sender: str, starttls: bool = False) -> SmtpConfig | None:
        """The configuration, None when ``url`` is empty; :class:`SettingsError` when bad."""
        if not url:
            return None
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise SettingsError(f"FPTRACK_SMTP_URL must be smtp:// or smtps://host, got {url!r}")
        try:
            port = parts.port or (465 if parts.scheme == "smtps" else 25)
        except ValueError:
            raise SettingsError(f"FPTRACK_SMTP_URL has a bad port: {url!r}") from None
        if "@" not in sender:
            raise SettingsError("FPTRACK_SMTP_FROM must be an email address for email alerts")
        return cls(
            parts.hostname, port, sender, parts.scheme == "smtps", bool(starttls),
            unquote(parts.username or ""), unquote(parts.password or ""),
        )  # fmt: skip


@dataclass(frozen=True)
class RedisTarget:
    """Where a Redis is: one server (``url``), a Redis Cluster (``nodes``), or the primary
    that Redis Sentinel watches (``nodes`` are the sentinels, ``service`` the primary's name).

    Every Redis setting (``FPTRACK_REDIS_URL``, ``FPTRACK_BROKER_URL``,
    ``FPTRACK_INDEX_REDIS_URL``) takes one of:

    - a redis-py URL of one server: ``redis://``, ``rediss://``, ``unix://``;
    - ``redis+cluster://host:port[,host:port...]``: the startup nodes of a cluster, any of
      its masters (the client learns the rest from ``CLUSTER SLOTS``); indexes only;
    - ``redis+sentinel://[[user]:password@]host:port[,host:port...]/SERVICE[/DB]``: the
      sentinels (port 26379 unless given) watching the primary they call ``SERVICE``, and
      its database ``DB`` (default 0). Clients ask the sentinels where the primary is and
      ask again when it fails over. The user and password (percent-encoded) are the
      primary's and its replicas'; the sentinels are asked without a password.

    :mod:`matcher.index.redis_clients` builds the clients of a target.

    >>> RedisTarget.parse("redis+cluster://10.0.0.1:7000,10.0.0.2").nodes
    (('10.0.0.1', 7000), ('10.0.0.2', 6379))
    >>> RedisTarget.parse("redis://cache:6379/3").kind
    'server'
    >>> t = RedisTarget.parse("redis+sentinel://:s%40cret@10.0.0.1,10.0.0.2:26380/fptrack/2")
    >>> t.kind, t.nodes, t.service, t.database, t.password
    ('sentinel', (('10.0.0.1', 26379), ('10.0.0.2', 26380)), 'fptrack', 2, 's@cret')
    """

    url: str
    nodes: tuple[tuple[str, int], ...] = ()
    service: str = ""
    database: int = 0
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)

    @property
    def kind(self) -> str:
        """``server``, ``cluster`` or ``sentinel``."""
        if self.service:
            return "sentinel"
        return "cluster" if self.nodes else "server"

    @property
    def cluster(self) -> bool:
        return self.kind == "cluster"

    @property
    def sentinel(self) -> bool:
        return self.kind == "sentinel"

    @classmethod
    def parse(cls, url: str) -> RedisTarget:
        """A validated target; :class:`SettingsError` on a malformed URL."""
        if url.startswith(CLUSTER_SCHEME):
            return cls(url, _hosts(url, url[len(CLUSTER_SCHEME) :].rstrip("/"), DEFAULT_REDIS_PORT))
        if url.startswith(SENTINEL_SCHEME):
            return cls._sentinel(url)
        if url.startswith(SERVER_SCHEMES):
            return cls(url)
        raise SettingsError(
            f"not a Redis URL: {redact_url(url)!r} (give redis://, rediss://, unix://,"
            f" {CLUSTER_SCHEME} or {SENTINEL_SCHEME})"
        )

    @classmethod
    def _sentinel(cls, url: str) -> RedisTarget:
        rest = url[len(SENTINEL_SCHEME) :]
        authority, _, path = rest.partition("/")
        userinfo, at, hosts = authority.rpartition("@")
        username, _, password = userinfo.partition(":")
        service, _, db = path.rstrip("/").partition("/")
        bad_service = not service or any(c in service for c in " ?#/")
        if "?" in rest or "#" in rest or bad_service or (db and not db.isdigit()):
            raise SettingsError(f"{redact_url(url)!r} is not {SENTINEL_FORM}")
        return cls(
            url,
            _hosts(url, hosts, DEFAULT_SENTINEL_PORT),
            unquote(service),
            int(db or 0),
            (unquote(username) or None) if at else None,
            (unquote(password) or None) if at else None,
        )


IndexRedis = RedisTarget
"""The former name of :class:`RedisTarget` (when it named the indexes' Redis only)."""


def _hosts(url: str, text: str, default_port: int) -> tuple[tuple[str, int], ...]:
    """The ``host[:port]`` list of a cluster or sentinel URL."""
    hosts = []
    for part in text.split(","):
        part = part.strip()
        if part.startswith("["):  # [IPv6]:port
            host, _, tail = part[1:].partition("]")
            port = tail[1:] if tail.startswith(":") else tail
        else:
            host, sep, port = part.rpartition(":")
            if not sep:
                host, port = part, ""
        if not host or (port and not port.isdigit()) or not 0 < int(port or 1) < 65536:
            raise SettingsError(f"{redact_url(url)!r}: {part!r} is not host:port")
        hosts.append((host, int(port or default_port)))
    return tuple(hosts)


def redact_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***`` (for messages and logs; unlike
    kombu's ``maybe_sanitize_url``, it reads the host lists of cluster and Sentinel URLs).

    >>> redact_url("redis+sentinel://:s3cret@10.0.0.1,10.0.0.2/fptrack/0")
    'redis+sentinel://:***@10.0.0.1,10.0.0.2/fptrack/0'
    """
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    userinfo, at, hosts = authority.rpartition("@")
    if not (sep and at and ":" in userinfo):
        return url
    return f"{scheme}://{userinfo.partition(':')[0]}:***@{hosts}{slash}{path}"


@dataclass(frozen=True)
class MatchPolicy:
    """When a verified candidate becomes a match (lengths in content characters).

    A page copies a work when the passages they share cover at least ``min_work_share`` of
    the work (whole copies, excerpts, a chapter split over pages), or cover at least
    ``min_page_share`` of the page and ``min_page_chars`` characters (a page that is an
    excerpt of a long work), or ``min_work_share`` of one segment of a long work (a chapter)
    and ``min_page_chars`` characters, or total ``min_quote_chars`` characters covering
    ``min_quote_share`` of the work or of one segment (a long quotation among other text,
    such as a forum post with its replies); either way the shared passages must total
    ``min_chars``. A passage lying mostly (over ``boilerplate_share``) in boilerplate, text
    that ``boilerplate_works`` registered works or more hold, does not count, nor one lying
    mostly in text a better-matching work explains (``matcher.matching.verify``). Works that each
    lie
    at least ``edition_share`` inside the other are editions of one work
    (``matcher.matching.editions``): they count as one work for boilerplate, and a page copying
    their
    text is attributed to the edition that explains it best, the others named (0: no work
    is an edition of another). Candidates are works with a segment within ``simhash_k`` of
    the page or holding ``min_window_hits`` of its postings keys; every candidate is
    verified.
    """

    min_work_share: float = 0.2
    min_page_share: float = 0.5
    min_page_chars: int = 300
    min_chars: int = 60
    min_quote_chars: int = 500
    min_quote_share: float = 0.1
    simhash_k: int = 3
    min_window_hits: int = 2
    boilerplate_works: int = 3
    boilerplate_share: float = 0.5
    edition_share: float = 0.6

    def __post_init__(self) -> None:
        for name in ("min_work_share", "min_page_share", "min_quote_share", "boilerplate_share"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise SettingsError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        for name in ("min_page_chars", "min_chars", "min_quote_chars", "min_window_hits"):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.boilerplate_works < 2:
            raise SettingsError(f"boilerplate_works must be >= 2, got {self.boilerplate_works}")
        if not 0.0 <= self.edition_share <= 1.0:
            raise SettingsError(f"edition_share must be in 0..1 (0: off), got {self.edition_share}")
        if not 0 <= self.simhash_k <= 16:
            raise SettingsError(f"simhash_k must be in 0..16, got {self.simhash_k}")


@dataclass(frozen=True)
class Settings:
    """Connection strings, key prefix, index parameters and the match policy."""

    mongo_uri: str = "mongodb://127.0.0.1:27017"
    mongo_db: str = "fptrack"
    redis_url: str = "redis://127.0.0.1:6379/0"
    index_redis_url: str = ""
    redis_prefix: str = "fptrack"
    simhash_permuted: bool = False
    window_bucket_bits: int = 20
    window_max_df: int = 1000
    max_text_chars: int = 4_000_000
    max_work_chars: int = 20_000_000
    min_work_chars: int = 50
    near_twin_share: float = 0.95
    """A work whose text and an earlier indexed work's each lie at least this share inside
    the other (content 8-grams, :mod:`matcher.matching.near_twins`) is that work's near twin:
    reported as such (``same_text_as``, ``near_twin``) and indexed as an edition of it
    (:mod:`matcher.matching.editions`). 0 turns near twins off."""
    max_split_parts: int = 50
    candidate_batch: int = 64
    segment_cache_mb: int = 256
    """Parsed work segments kept in each matching process
    (:mod:`matcher.matching.segment_cache`)."""
    query_allow_private: bool = False
    """Let a query by URL fetch private, loopback and link-local addresses (admin/fetch.py)."""
    query_deadline: float = 20.0
    """Seconds a query by URL's fetch may take in all (:mod:`matcher.outbound`)."""
    query_max_bytes: int = 10 * 1024 * 1024
    """The largest page a query by URL fetches."""
    api_rate_per_minute: int = 120
    """Requests each API token may make per minute (:mod:`admin.web.rate_limit`)."""
    metrics_allow: str = ""
    """Addresses (comma-separated IPs or CIDR networks) that may read the admin's
    ``/metrics`` without a token ("": none, every scrape needs a viewer's API token)."""
    metrics_cache_seconds: float = 15.0
    """How long the admin keeps the metrics it computed before computing them again
    (:mod:`admin.metrics`; 0: at every scrape)."""
    archive: str = "gridfs"
    """Where the evidence archive keeps pages' HTTP exchanges (:mod:`matcher.evidence.archive`):
    ``gridfs`` (the store's database), ``none``, or an absolute folder."""
    outbound_allow_private: bool = False
    """Let fptrack's own requests outside the crawl (discovery's candidate sites and where a
    watched site's pages lead, where a takedown recheck is redirected) reach private,
    loopback and link-local addresses (:mod:`matcher.outbound`)."""
    discover_every: int = 7 * 86400
    """Seconds between beat's pirate-site discoveries (``sites:discover``,
    :mod:`matcher.sites.discovery`); 0: never (``fptrack sites discover`` runs one)."""
    discover_sample: int = 10
    """Pages of each candidate site a discovery samples."""
    discover_harvest: int = 20
    """Pages of each watched site a discovery reads for the hosts it leads to."""
    search_url: str = ""
    """A SearXNG instance (``http(s)://HOST[:PORT]``, its JSON format enabled) that
    ``fptrack sites search`` asks for sentences of the registered works
    (:mod:`matcher.sites.search`); "": no search."""
    search_results: int = 10
    """Result URLs kept per search query."""
    search_daily_queries: int = 100
    """Search queries fptrack sends a day (UTC), whatever runs them."""
    search_queries_per_chapter: int = 1
    """Sentences searched for of each newly registered chapter (a segment of a work:
    :mod:`fingerprint.segments`), the rarest in the works' index."""
    search_every: int = 0
    """Seconds between beat's searches for pirate sites (``sites:search``, with a
    ``search_url``); 0: never (``fptrack sites search`` runs one)."""
    rdap_bootstrap_url: str = "https://data.iana.org/rdap/"
    """Where the RDAP bootstrap files (RFC 9224: ``dns.json``, ``ipv4.json``, ``ipv6.json``)
    are fetched for ``fptrack sites hosting`` (:mod:`matcher.sites.hosting`), kept a week
    in the store; a host the operator named (reached even on an internal address)."""
    rdap_deadline: float = 10.0
    """Seconds each RDAP request (and bootstrap file) may take in all."""
    rdap_max_requests: int = 6
    """RDAP requests one site's hosting lookup makes at most (bootstrap files apart)."""
    hosting_every: int = 7 * 86400
    """Seconds between beat's hosting lookups (``sites:hosting``: the sites with matches
    whose hosting was last tried a week ago or never); 0: never (``fptrack sites hosting``
    runs one)."""
    takedown_rechecks: str = "1,3,7,14"
    """Days after a takedown notice when each URL it names is rechecked
    (:mod:`matcher.evidence.takedowns`), comma-separated."""
    takedown_recheck_every: int = 600
    """Seconds between beat's runs of the due rechecks (``takedowns:recheck``)."""
    takedown_escalate_days: float = 7.0
    """A URL still up this many days after its notice is listed to escalate."""
    tsa_url: str = ""
    """The RFC 3161 Time-Stamp Authority the archived WARC files are stamped by
    (:mod:`matcher.evidence.timestamps`; "": none, nothing is stamped)."""
    tsa_ca: str = ""
    """A PEM file of the CA certificates a TSA's tokens must chain to (``fptrack evidence
    verify``, and the evidence bundle's copy of them)."""
    tsa_every: int = 600
    """Seconds between the beat's stamping runs (``evidence:stamp``), when ``tsa_url`` is set."""
    tsa_batch: int = 10_000
    """At most this many WARC files under one token (:mod:`matcher.evidence.timestamps`)."""
    tally_seconds: float = 1.0
    """A worker gathers the dashboard tallies of the match records it writes this long and
    sends them together (:class:`matcher.store.tallies.Sender`; 0: each at once)."""
    page_lock_seconds: int = 30
    """How long a page's matching lock lasts: a worker killed mid-page holds the page (and
    the other parts of its chapter) this long before a redelivered task may match it."""
    broker_url: str = ""
    visibility_timeout: int = 60
    """Seconds after a worker's last heartbeat before the broker hands its unacknowledged
    tasks to another worker (:mod:`matcher.worker.heartbeat`)."""
    pending_after: int = 60
    """Seconds after its last ``process_page`` was sent before a page still pending is sent
    again by beat's sweep (:func:`matcher.worker.jobs.requeue_pending`)."""
    task_max_retries: int = 8
    crawl_timeout: int = 6000
    crawl_lease: int = 30
    chromium: str = "/usr/bin/chromium"
    """The headless browser that renders the pages of sites with ``render`` on, and the
    pages whose text is built by script (:mod:`crawler.render`)."""
    auto_render: bool = True
    """Render in ``chromium`` the pages whose text is built by script (little text and a
    script that builds it: :mod:`crawler.scripted`), in every crawl and scan; off
    (``FPTRACK_AUTO_RENDER=0``), they are read as served (:mod:`crawler.render`)."""
    webfont_reference: str = "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc"
    """The CJK font obfuscating web fonts' glyphs are identified against
    (:mod:`crawler.webfont`; Debian's ``fonts-wqy-zenhei``; ``PATH#N``: the N-th font of a
    collection)."""
    webfont_cache: str = "~/.cache/fptrack/webfont"
    """Where the reference font's index is kept between processes (built once, 10-20 s;
    "": rebuilt by every process that meets a web font)."""
    daily_at: str = "03:00"
    admin_secret: str = field(default="", repr=False)
    admin_url: str = ""
    """The admin platform's public base URL, for links in alerts ("": no links)."""
    smtp_url: str = field(default="", repr=False)
    """Where email alerts go out (:class:`SmtpConfig`; "": no email)."""
    smtp_from: str = ""
    smtp_starttls: bool = False
    digest_at: str = "08:00"
    """When the daily alert digests are sent (UTC)."""
    alert_max_attempts: int = 6
    alert_backoff: float = 30.0
    """Seconds before an alert's first retry, doubled at each further one."""
    alert_backoff_max: float = 3600.0
    alert_timeout: float = 10.0
    """Seconds one webhook attempt may take in all (:mod:`matcher.outbound`: connect, send,
    status line and headers), and one SMTP exchange."""
    alert_allow_private: bool = False
    """Let webhooks go to private, loopback and link-local addresses (refused by default)."""
    policy: MatchPolicy = field(default_factory=MatchPolicy)
    explicit: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    """The fields that :meth:`from_env` found in the environment (not defaults)."""

    @property
    def crawl_overrides(self) -> dict[str, Any]:
        """The Scrapy settings a crawl takes from these: the browser and whether pages built
        by script are rendered in it (``FPTRACK_CHROMIUM``, ``FPTRACK_AUTO_RENDER``), the
        web-font reference and where its index is kept (``FPTRACK_WEBFONT_REFERENCE``,
        ``FPTRACK_WEBFONT_CACHE``; :mod:`crawler.webfont`)."""
        return {
            "FPTRACK_CHROMIUM": self.chromium,
            "FPTRACK_AUTO_RENDER": self.auto_render,
            "FPTRACK_WEBFONT_REFERENCE": self.webfont_reference,
            "FPTRACK_WEBFONT_CACHE": os.path.expanduser(self.webfont_cache)
            if self.webfont_cache
            else "",
        }

    @property
    def celery_broker(self) -> str:
        """The Celery broker: ``broker_url``, else the standalone Redis of ``redis_url``."""
        return self.broker_url or self.redis_url

    @cached_property
    def redis_target(self) -> RedisTarget:
        """``redis_url`` parsed: a server or a primary that Sentinel watches."""
        return RedisTarget.parse(self.redis_url)

    @cached_property
    def broker_target(self) -> RedisTarget:
        """The Celery broker's Redis (:attr:`celery_broker`) parsed."""
        return RedisTarget.parse(self.celery_broker)

    @cached_property
    def metrics_networks(self) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
        """``metrics_allow`` parsed (an address alone is a network of one).

        >>> Settings(metrics_allow="10.0.0.0/8, ::1").metrics_networks
        (IPv4Network('10.0.0.0/8'), IPv6Network('::1/128'))
        """
        out = []
        for part in self.metrics_allow.split(","):
            if part.strip():
                try:
                    out.append(ipaddress.ip_network(part.strip(), strict=False))
                except ValueError as exc:
                    raise SettingsError(
                        f"metrics_allow: {part.strip()!r} is not an IP address or network"
                    ) from exc
        return tuple(out)

    @cached_property
    def index_redis(self) -> RedisTarget:
        """The indexes' Redis: ``index_redis_url`` (a server, a cluster or a primary that
        Sentinel watches), else ``redis_url``."""
        return RedisTarget.parse(self.index_redis_url or self.redis_url)

    def __post_init__(self) -> None:
        if not self.redis_prefix or any(c in self.redis_prefix for c in " *?[]{}"):
            raise SettingsError(f"redis_prefix must be a plain word, got {self.redis_prefix!r}")
        for name, target in (("redis_url", self.redis_target), ("broker_url", self.broker_target)):
            if target.cluster:
                raise SettingsError(
                    f"{name} must be a standalone Redis or Sentinel (the Celery broker, redbeat"
                    " and the crawl frontiers cannot use Redis Cluster); put the cluster in"
                    " FPTRACK_INDEX_REDIS_URL"
                )
        self.index_redis  # noqa: B018 - validates the URL once, at the entry point
        self.metrics_networks  # noqa: B018 - validated once, at the entry point
        if self.metrics_cache_seconds < 0:
            raise SettingsError("metrics_cache_seconds must be >= 0")
        if not 0 <= self.tally_seconds <= 60:
            raise SettingsError(f"tally_seconds must be in 0..60, got {self.tally_seconds}")
        if not 8 <= self.window_bucket_bits <= 28:
            raise SettingsError("window_bucket_bits must be in 8..28")
        for name in (
            "window_max_df", "max_text_chars", "max_work_chars", "min_work_chars",
            "max_split_parts", "candidate_batch", "segment_cache_mb", "page_lock_seconds",
            "api_rate_per_minute", "pending_after", "query_max_bytes", "tsa_every", "tsa_batch",
            "takedown_recheck_every", "discover_sample", "discover_harvest", "search_results",
            "search_daily_queries", "search_queries_per_chapter", "rdap_max_requests",
        ):  # fmt: skip
            if getattr(self, name) < 1:
                raise SettingsError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.near_twin_share and not 0.5 <= self.near_twin_share <= 1:
            raise SettingsError(
                f"near_twin_share must be 0 (off) or in 0.5..1, got {self.near_twin_share}"
            )
        if self.visibility_timeout < 2:
            raise SettingsError("visibility_timeout must be at least 2 s")
        if self.task_max_retries < 0 or self.crawl_timeout < 1:
            raise SettingsError("task_max_retries must be >= 0 and crawl_timeout >= 1")
        if not 3 <= self.crawl_lease <= self.crawl_timeout:
            raise SettingsError("crawl_lease must be at least 3 s and at most crawl_timeout")
        if spec_error(self.archive):
            raise SettingsError(spec_error(self.archive))
        for name in ("daily_at", "digest_at"):
            hour, _, minute = getattr(self, name).partition(":")
            if not (hour.isdigit() and minute.isdigit() and int(hour) < 24 and int(minute) < 60):
                raise SettingsError(f"{name} must be HH:MM (UTC), got {getattr(self, name)!r}")
        if self.query_deadline <= 0:
            raise SettingsError(f"query_deadline must be > 0, got {self.query_deadline}")
        if self.alert_max_attempts < 1 or self.alert_timeout <= 0:
            raise SettingsError("alert_max_attempts must be >= 1 and alert_timeout > 0")
        if not 0 < self.alert_backoff <= self.alert_backoff_max:
            raise SettingsError("alert_backoff must be > 0 and at most alert_backoff_max")
        self.takedown_days  # noqa: B018 - validates the recheck days once, at the entry point
        if self.discover_every < 0 or max(self.discover_sample, self.discover_harvest) > 1000:
            raise SettingsError("discover_every must be >= 0, and sample and harvest 1 to 1000")
        if self.takedown_escalate_days <= 0:
            raise SettingsError("takedown_escalate_days must be > 0")
        if self.rdap_deadline <= 0 or self.hosting_every < 0 or self.rdap_max_requests > 100:
            raise SettingsError(
                "rdap_deadline must be > 0, hosting_every >= 0 and rdap_max_requests at most 100"
            )
        if not self.rdap_bootstrap_url.startswith(("http://", "https://")):
            raise SettingsError(
                f"rdap_bootstrap_url must be an http(s) URL, got {self.rdap_bootstrap_url!r}"
            )
        if self.search_every < 0:
            raise SettingsError(f"search_every must be >= 0, got {self.search_every}")
        if self.search_url and not self.search_url.startswith(("http://", "https://")):
            raise SettingsError(f"search_url must be an http(s) URL, got {self.search_url!r}")
        if self.tsa_url and not self.tsa_url.startswith(("http://", "https://")):
            raise SettingsError(f"tsa_url must be an http(s) URL, got {self.tsa_url!r}")
        if self.admin_url and not self.admin_url.startswith(("http://", "https://")):
            raise SettingsError(f"admin_url must be an http(s) URL, got {self.admin_url!r}")
        self.smtp  # noqa: B018 - validates the SMTP settings once, at the entry point

    @property
    def takedown_days(self) -> tuple[float, ...]:
        """``takedown_rechecks`` parsed: days after a notice, increasing.

        >>> Settings(takedown_rechecks="1, 3,7,14").takedown_days
        (1.0, 3.0, 7.0, 14.0)
        """
        try:
            days = tuple(float(x) for x in self.takedown_rechecks.split(",") if x.strip())
        except ValueError:
            days = ()
        if not days or any(d <= 0 for d in days) or list(days) != sorted(set(days)):
            raise SettingsError(
                "takedown_rechecks must be increasing positive days, comma-separated,"
                f" got {self.takedown_rechecks!r}"
            )
        return days

    @property
    def smtp(self) -> SmtpConfig | None:
        """Where email alerts go out, or None (``FPTRACK_SMTP_URL`` not set)."""
        return SmtpConfig.parse(self.smtp_url, self.smtp_from, self.smtp_starttls)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``FPTRACK_<FIELD>`` variables (e.g. ``FPTRACK_MONGO_URI``).

        Policy fields are ``FPTRACK_POLICY_<FIELD>`` (e.g. ``FPTRACK_POLICY_MIN_WORK_SHARE``).
        Keyword ``overrides`` win over the environment.
        """
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name not in ("policy", "explicit") and f"FPTRACK_{f.name.upper()}" in environ:
                values[f.name] = _parse(f.name, environ[f"FPTRACK_{f.name.upper()}"], f.type)
        policy: dict[str, Any] = {}
        for f in dataclasses.fields(MatchPolicy):
            key = f"FPTRACK_POLICY_{f.name.upper()}"
            if key in environ:
                policy[f.name] = _parse(f.name, environ[key], f.type)
        values["policy"] = MatchPolicy(**policy)
        values["explicit"] = frozenset(values) - {"policy"}
        values.update(overrides)
        return cls(**values)


def _parse(name: str, raw: str, kind: Any) -> Any:
    kind = kind if isinstance(kind, str) else kind.__name__
    try:
        if kind == "bool":
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no"):
                raise ValueError(raw)
            return raw.lower() in ("1", "true", "yes")
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError as exc:
        raise SettingsError(f"{name}: {raw!r} is not a valid {kind}") from exc
    return raw

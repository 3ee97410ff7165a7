"""The seams hold: MongoDB is reached only through the store modules, and the admin's web
only through the admin's services; the ``FPTRACK_*`` settings are read only at entry
points, and Redis key names are built only in :mod:`matcher.keys`. Read from the source
(its syntax tree), so that a new raw use anywhere fails here."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("admin", "crawler", "fingerprint", "matcher")

STORE_PACKAGE = "matcher/store/"
"""The store: the only package whose modules hold a pymongo database or collection."""

ENTRY_POINTS = {"admin/context.py", "crawler/run.py", "matcher/worker/celery.py"}
"""Where :meth:`Settings.from_env` may run: the command line's context, the crawl
subprocess, and the app of ``celery -A matcher.worker.celery``."""

ENVIRON_READERS = {"matcher/settings.py", "matcher/worker/jobs.py"}
"""``os.environ`` is read by the settings, and handed on whole to the crawl subprocess."""


def allowed_in(name: str, allowed: set[str]) -> bool:
    """Whether module ``name`` is one of ``allowed`` or in one of its packages (``.../``)."""
    return any(name == a or (a.endswith("/") and name.startswith(a)) for a in allowed)


def modules(packages: tuple[str, ...] = PACKAGES) -> Iterator[tuple[str, ast.Module]]:
    for package in packages:
        yield from _parsed(package)


@cache
def _parsed(package: str) -> tuple[tuple[str, ast.Module], ...]:
    """Each module of ``package`` and its syntax tree, parsed once for every test here (the
    tests only read the trees)."""
    parsed = []
    for path in sorted((ROOT / package).rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        parsed.append((name, ast.parse(path.read_text(encoding="utf-8"), filename=name)))
    return tuple(parsed)


def uses(tree: ast.Module, test) -> list[int]:
    return sorted(node.lineno for node in ast.walk(tree) if test(node))


def is_db_attribute(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "db"


def is_from_env(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "from_env"
    )


def is_environ(node: ast.AST) -> bool:
    """``os.environ`` (or any ``X.environ`` but a WSGI request's, ``request.environ``)."""
    if not (isinstance(node, ast.Attribute) and node.attr == "environ"):
        return False
    return not (isinstance(node.value, ast.Name) and node.value.id == "request")


def is_prefixed_key(node: ast.AST) -> bool:
    """An f-string ``f"{...prefix}:..."``: a Redis key name under the configured prefix."""
    if not isinstance(node, ast.JoinedStr):
        return False
    named = [
        getattr(part.value, "id", "") or getattr(part.value, "attr", "")
        for part in node.values
        if isinstance(part, ast.FormattedValue)
    ]
    colon = any(isinstance(p, ast.Constant) and str(p.value).startswith(":") for p in node.values)
    return colon and any(name.endswith("prefix") for name in named)


@pytest.mark.parametrize(
    ("what", "test", "allowed"),
    [
        ("a raw MongoDB database (.db)", is_db_attribute, {STORE_PACKAGE}),
        ("Settings.from_env()", is_from_env, ENTRY_POINTS),
        ("os.environ", is_environ, ENVIRON_READERS),
    ],
)
def test_only_the_home_of_a_concern_touches_it(what: str, test, allowed: set[str]) -> None:
    found = {
        name: lines
        for name, tree in modules()
        if not allowed_in(name, allowed) and (lines := uses(tree, test))
    }
    assert found == {}, f"{what} outside {sorted(allowed)}: {found}"


def test_the_rules_see_what_they_forbid() -> None:
    source = "store.db.pages.find({})\nSettings.from_env()\nos.environ['X']\nf'{s.prefix}:win'\n"
    tree = ast.parse(source)
    assert uses(tree, is_db_attribute) == [1]
    assert uses(tree, is_from_env) == [2]
    assert uses(tree, is_environ) == [3]
    assert uses(tree, is_prefixed_key) == [4]


def test_redis_key_names_are_built_in_keys_only() -> None:
    """No module but :mod:`matcher.keys` formats a name under the key prefix
    (``f"{prefix}:..."``)."""
    found = {
        name: lines
        for name, tree in modules()
        if name != "matcher/keys.py" and (lines := uses(tree, is_prefixed_key))
    }
    assert found == {}, f"Redis key names built outside matcher/keys.py: {found}"


REDIS_CLIENTS = {"Redis", "StrictRedis", "RedisCluster", "Sentinel"}
SERVER_HARNESSES = {
    "matcher/index/redis_clients.py",
    "tests/servers/local_cluster.py",
    "tests/servers/local_sentinel.py",
}
"""The client factory, and the benchmarks' harnesses of throwaway servers, which talk to each
node or sentinel process alone (``CLUSTER``, ``SENTINEL``, ``SHUTDOWN``)."""


def is_redis_client_built(node: ast.AST) -> bool:
    """``Redis(...)``, ``redis.Redis.from_url(...)``, ``RedisCluster(...)``, ``Sentinel(...)``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "from_url":
        func = func.value
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name in REDIS_CLIENTS


def test_redis_clients_are_built_in_redis_clients_only() -> None:
    """Every Redis client of the product and the benchmarks comes from
    :mod:`matcher.index.redis_clients` (one option set: timeouts, health checks, retries; servers,
    clusters and Sentinel alike)."""
    sample = "redis.Redis.from_url(u)\nRedisCluster(startup_nodes=n)\nredis.sentinel.Sentinel(s)\n"
    assert uses(ast.parse(sample), is_redis_client_built) == [1, 2, 3]
    found = {
        name: lines
        for name, tree in modules((*PACKAGES, "bench"))
        if name not in SERVER_HARNESSES and (lines := uses(tree, is_redis_client_built))
    }
    assert found == {}, f"Redis clients built outside matcher/index/redis_clients.py: {found}"


MONGO_CLIENT_BUILDERS = {"matcher/store/client.py", "matcher/store/memory.py"}
"""Where a MongoDB client is built: the one factory of the product's options, and the
embedded scan's in-memory client."""


def is_mongo_client_built(node: ast.AST) -> bool:
    """``MongoClient(...)``, ``pymongo.MongoClient(...)``, ``mongomock.MongoClient(...)``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name.endswith("MongoClient") or name == "MemoryClient"


def test_mongo_clients_are_built_by_the_store_factory_only() -> None:
    """Every MongoDB client comes from :mod:`matcher.store.client` (aware times, journaled
    writes, short timeouts), but the scan's in-memory one (:mod:`matcher.store.memory`)."""
    sample = "pymongo.MongoClient(u)\nMongoClient(u, tz_aware=True)\nmongomock.MongoClient()\n"
    assert uses(ast.parse(sample), is_mongo_client_built) == [1, 2, 3]
    found = {
        name: lines
        for name, tree in modules()
        if name not in MONGO_CLIENT_BUILDERS and (lines := uses(tree, is_mongo_client_built))
    }
    assert found == {}, f"MongoDB clients built outside {sorted(MONGO_CLIENT_BUILDERS)}: {found}"


INDEX_LOGIC_MODULES = {
    "matcher/index/simhash_index.py",
    "matcher/index/simhash_layout.py",
    "matcher/index/simhash_routing.py",
    "matcher/index/simhash_splits.py",
    "matcher/index/simhash_directory.py",
    "matcher/index/window_index.py",
    "matcher/index/indexes.py",
    "matcher/index/segment_refs.py",
}
"""The index logic: simhash (its tables, routes, splits and cached directories), windows,
their layout, ``Side`` and segment references. The rest of ``matcher/index/`` is the
storage under it (the protocol, its Redis backend and Lua scripts, the in-memory twin), the
Redis clients, and the upkeep built on them."""


def test_the_indexes_reach_redis_through_their_storage() -> None:
    """The index logic imports neither redis-py nor the Redis IO: it talks to a
    :class:`matcher.index.storage.Storage`, so that it runs on the in-memory twin too."""
    present = {name for name, _ in modules()}
    assert present >= INDEX_LOGIC_MODULES
    found = {
        name: sorted(
            m for m in imported(tree)
            if m.split(".")[0] == "redis" or m.startswith("matcher.index.redis_io")
        )
        for name, tree in modules()
        if name in INDEX_LOGIC_MODULES
    }  # fmt: skip
    assert {name: found for name, found in found.items() if found} == {}


APP_IMPORTERS = {"admin/web/app.py", "admin/web/serve.py"}
"""The web modules that may import :mod:`admin.web.app`: the app itself and the server
that builds it. Views get their services from :mod:`admin.web.deps`."""

SERVICE_MODULES = tuple(
    sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "admin/services").rglob("*.py"))
)
"""The admin's services (:mod:`admin.services`): what the views do with the store."""

DOMAIN_MODULES = (
    "admin/filters.py",
    "admin/registration.py",
    "admin/fetch.py",
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "admin/report").rglob("*.py")),
    *SERVICE_MODULES,
)
"""Domain logic used by the admin's pages, its API and the command line: no web framework."""


def imported(tree: ast.Module) -> set[str]:
    """Every module name an ``import`` or ``from ... import`` of ``tree`` names, at any depth."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_view_imports_the_app() -> None:
    sample = "from admin.web.app import services\ndef f():\n    from admin.web import app\n"
    assert imported(ast.parse(sample)) >= {"admin.web.app", "admin.web.app.services"}
    found = sorted(
        name
        for name, tree in modules()
        if name.startswith("admin/web/")
        and name not in APP_IMPORTERS
        and "admin.web.app" in imported(tree)
    )
    assert found == [], f"import admin.web.app (use admin.web.deps): {found}"


def test_domain_modules_import_no_web_framework() -> None:
    trees = dict(modules())
    assert "admin/services/matches.py" in SERVICE_MODULES
    assert set(DOMAIN_MODULES) <= set(trees)
    web = ("flask", "werkzeug", "admin.web")
    found = {
        name: sorted(m for m in imported(trees[name]) if m.split(".")[0] in web[:2]
                     or m.startswith(web[2]))
        for name in DOMAIN_MODULES
    }  # fmt: skip
    assert {k: v for k, v in found.items() if v} == {}, "domain modules import the web"


def is_store_attribute(node: ast.AST) -> bool:
    """``x.store``: ``deps.store()``, ``ctx.store``, ``engine.store``, ``self.store``..."""
    return isinstance(node, ast.Attribute) and node.attr == "store"


def store_imports(tree: ast.Module) -> list[str]:
    """The store's modules ``tree`` imports (``matcher.store``, ``matcher.store.*``), and
    any name ``store`` it imports (``from admin.web.deps import store``)."""
    return sorted(
        m
        for m in imported(tree)
        if m == "matcher.store" or m.startswith("matcher.store.") or m.rsplit(".", 1)[-1] == "store"
    )


def test_no_view_reaches_the_store() -> None:
    """The web (``admin/web/``) calls the admin's services (:mod:`admin.services`, handed out
    by :mod:`admin.web.deps`) and never the store: none of its modules imports the store's
    modules or names a ``.store`` attribute. Constants the views show (``STATUSES``) come
    from the services."""
    sample = (
        "from matcher.store import STATUSES\nimport matcher.store.tallies\n"
        "from admin.web.deps import store\nrows = deps.store().matches.find_matches()\n"
        "s.ctx.engine.store.works.get_work(w)\n"
    )
    tree = ast.parse(sample)
    assert store_imports(tree) == [
        "admin.web.deps.store", "matcher.store", "matcher.store.STATUSES", "matcher.store.tallies",
    ]  # fmt: skip
    assert uses(tree, is_store_attribute) == [4, 5]
    web = [(name, tree) for name, tree in modules(("admin",)) if name.startswith("admin/web/")]
    assert "admin/web/matches.py" in dict(web)
    found = {
        name: (store_imports(tree), uses(tree, is_store_attribute))
        for name, tree in web
        if store_imports(tree) or uses(tree, is_store_attribute)
    }
    assert found == {}, f"web modules reaching the store (imports, lines): {found}"


COMMANDS_REACHING_THE_STORE = {
    "admin/commands/common.py": "builds the admin's services over a command's context",
    "admin/commands/admin.py": "init ensures the store's indexes and asks for a first user; "
    "recount rebuilds the dashboard's counters",
    "admin/commands/migrate.py": "migrates the store's documents and sharding",
    "admin/commands/scan.py": "the embedded scan: its own store, admin account and reports",
    "admin/commands/crawl.py": "runs a crawl in this process (its job records and ingest)",
    "admin/commands/evidence.py": "stamps and checks evidence against the stamps kept in the "
    "store; no admin service holds them",
}
"""The command modules that may reach the store themselves: lifecycle and maintenance of the
store and of in-process runs. The others call the admin's services (:mod:`admin.services`)."""

COMMAND_STORE_CONSTANTS = {
    "matcher.store.statuses", "matcher.store.statuses.STATUSES",
    "matcher.store.common", "matcher.store.common.StoreError",
}  # fmt: skip
"""What any command may import of the store's package: the review statuses (the options of
``--help``, a module of constants) and the error a bad id raises."""


def test_no_command_reaches_the_store() -> None:
    """The command line calls the admin's services for the domain's operations (matches,
    reviews, reports, takedowns, works, sites, alerts), as the web does: a command module
    but those of :data:`COMMANDS_REACHING_THE_STORE` imports none of the store's modules and
    names no ``.store`` attribute."""
    sample = (
        "from matcher.store import now\nfrom matcher.store.statuses import STATUSES\n"
        "def run(args, ctx):\n    from matcher.store.alerts import AlertStore\n"
        "    return ctx.store.sites.list_sites(), ctx.engine.store\n"
    )
    tree = ast.parse(sample)
    assert [m for m in store_imports(tree) if m not in COMMAND_STORE_CONSTANTS] == [
        "matcher.store", "matcher.store.alerts", "matcher.store.alerts.AlertStore",
        "matcher.store.now",
    ]  # fmt: skip
    assert uses(tree, is_store_attribute) == [5, 5]
    commands = [(n, t) for n, t in modules(("admin",)) if n.startswith("admin/commands/")]
    assert "admin/commands/matches.py" in dict(commands)
    assert set(COMMANDS_REACHING_THE_STORE) <= dict(commands).keys()
    found = {
        name: (imports, uses(tree, is_store_attribute))
        for name, tree in commands
        if name not in COMMANDS_REACHING_THE_STORE
        for imports in [[m for m in store_imports(tree) if m not in COMMAND_STORE_CONSTANTS]]
        if imports or uses(tree, is_store_attribute)
    }
    assert found == {}, f"command modules reaching the store (imports, lines): {found}"


def test_the_command_line_is_a_leaf() -> None:
    """The commands (:mod:`admin.commands`, one module each) are imported by the command
    line alone: the web, the workers and the crawler never reach into the CLI."""
    found = {
        name: sorted(m for m in imported(tree) if m.startswith("admin.commands"))
        for name, tree in modules()
        if name != "admin/cli.py" and not name.startswith("admin/commands/")
    }
    assert {name: found for name, found in found.items() if found} == {}


def test_every_command_module_is_listed() -> None:
    """Each module of ``admin/commands/`` but the shared ones is a command of the table that
    ``fptrack --help`` lists, and defines its options (``add_arguments``)."""
    from admin.commands import COMMANDS

    shared = {"__init__", "common"}
    folder = ROOT / "admin" / "commands"
    files = {path.stem for path in folder.glob("*.py")} - shared
    assert files == {module for module, _ in COMMANDS.values()}
    for path in folder.glob("*.py"):
        if path.stem not in shared:
            tree = ast.parse(path.read_text(encoding="utf-8"))
            defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
            assert "add_arguments" in defined, path.name


def import_graph(packages: tuple[str, ...] = (*PACKAGES, "bench")) -> dict[str, set[str]]:
    """Module file -> the module files of the house it imports (at any depth, under
    ``TYPE_CHECKING`` too): ``a.b.c`` is ``a/b/c.py`` or, a package, ``a/b/c/__init__.py``;
    ``from a.b import c`` is the submodule ``a.b.c`` if there is one, else module ``a.b``
    (the package's ``__init__`` runs first either way, as Python imports it, but a
    submodule taken from its package is not a need of the package's own code)."""
    files = {name for name, _ in modules(packages)}

    def file_of(module: str) -> str | None:
        path = module.replace(".", "/")
        for candidate in (f"{path}.py", f"{path}/__init__.py"):
            if candidate in files:
                return candidate
        return None

    def targets(tree: ast.Module) -> Iterator[str | None]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                yield from (file_of(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:  # a submodule, else a name of the module
                    yield file_of(f"{node.module}.{alias.name}") or file_of(node.module)

    graph: dict[str, set[str]] = {}
    for name, tree in modules(packages):
        graph[name] = {t for t in targets(tree) if t is not None and t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_in_the_house() -> None:
    """Imports run one way, in the product and the benchmarks alike: no two modules need
    each other, however indirectly (a circle is found as a component of the import graph)."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles(import_graph()) == []


MATCHER_LAYERS = (
    ("matcher/errors.py", "matcher/keys.py", "matcher/settings.py", "matcher/outbound.py"),
    ("matcher/sites/",),
    ("matcher/alerts/",),
    ("matcher/store/", "matcher/pages.py", "matcher/evidence/archive.py"),
    ("matcher/index/",),
    ("matcher/matching/",),
    ("matcher/evidence/",),
    ("matcher/worker/",),
)
"""``matcher/``'s packages from the bottom up (a path ending in ``/`` is a package; the
first that matches counts): a module imports only modules of its own layer or the layers
below. The evidence archive is the store's WARC backend, so it stands with the store."""


def layer_of(name: str) -> int | None:
    """The layer of module file ``name`` (None: outside the layers)."""
    for layer, members in enumerate(MATCHER_LAYERS):
        if any(name == m or (m.endswith("/") and name.startswith(m)) for m in members):
            return layer
    return None


def test_matcher_packages_import_downwards_only() -> None:
    """A package of ``matcher/`` never imports one above it: the leaves (settings, keys,
    errors, outbound) import no package, the store no index or engine, the engine no worker."""
    graph = import_graph(("matcher",))
    assert layer_of("matcher/evidence/archive.py") == 3 and layer_of("matcher/evidence/x.py") == 6
    unplaced = sorted(n for n in graph if n != "matcher/__init__.py" and layer_of(n) is None)
    assert unplaced == []
    upward = sorted(
        (name, target)
        for name, targets in graph.items()
        for target in targets
        if (a := layer_of(name)) is not None and (b := layer_of(target)) is not None and b > a
    )
    assert upward == []


def test_the_backend_imports_neither_the_crawler_nor_the_admin() -> None:
    """``matcher/`` stands below ``crawler/`` and ``admin/``: none of its modules imports
    them, at any depth (the crawler's own tasks live in :mod:`crawler.tasks`, which the
    Celery app names among its task modules)."""
    found = {
        name: sorted(m for m in imported(tree) if m.split(".")[0] in {"crawler", "admin"})
        for name, tree in modules(("matcher",))
    }
    assert {name: found for name, found in found.items() if found} == {}

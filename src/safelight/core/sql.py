"""Loads a ``.sql`` file of named blocks once into a read-only mapping of named queries.

Each package keeps its queries in its own file, loaded by the module that runs them
(``work.store`` loads ``work/queries.sql``). Queries are never assembled from strings
at run time: every value is a parameter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from importlib import resources
from types import MappingProxyType

_HEADER = re.compile(r"^-- ([a-z_]+) --$", re.MULTILINE)


def parse_queries(text: str) -> Mapping[str, str]:
    """Split a file of ``-- name --`` blocks into ``{name: sql}``.

    The line after a header is the query's description (a comment) and is kept, as
    it is harmless to the server and helpful in ``pg_stat_statements``. Further
    whole-line comments are notes for readers of the file and are not sent: a query
    longer than 4,096 characters misses psycopg's cache and is re-parsed on every call.
    """
    parts = _HEADER.split(text)
    queries: dict[str, str] = {}
    # parts = [preamble, name1, body1, name2, body2, ...]: one capturing group
    for n in range(1, len(parts), 2):
        name, body = parts[n], parts[n + 1]
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        sql = _drop_notes(body.strip())
        if not sql:
            raise ValueError(f"query {name!r} is empty")
        queries[name] = sql
    return MappingProxyType(queries)


def _drop_notes(sql: str) -> str:
    lines = sql.splitlines()
    if not lines or not lines[0].startswith("--"):
        return sql
    rest = [line for line in lines[1:] if not line.lstrip().startswith("--")]
    return "\n".join([lines[0], *rest]).strip() if rest else ""


def load_queries(package: str, filename: str) -> Mapping[str, str]:
    return parse_queries((resources.files(package) / filename).read_text("utf-8"))


def text_array(values: Iterable[str]) -> str:
    """A PostgreSQL array literal of ``values`` (``{"a","b"}``), for a ``%(x)s::text[]``
    parameter: still a parameter, never spliced into the query.

    For the engine's hottest statements: psycopg dumps a list element by element in
    Python (a dumper looked up, a regex search and escape for each), several times the
    cost of the statement's other work on the client; this is one string. Every element
    is quoted, and only ``"`` and ``\\`` need a backslash inside quotes, so any text
    reads back as itself (PostgreSQL text holds no NUL, which the server refuses).
    """
    quoted = ('"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"' for v in values)
    return "{" + ",".join(quoted) + "}"

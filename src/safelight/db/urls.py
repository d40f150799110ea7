"""Database URLs, and how to show one without its secret."""

from __future__ import annotations

import hashlib
import re
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

# password=... in a libpq keyword/value string or a URL query.
_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
# The schemes libpq takes for a URL; anything else before "://" is another database's.
POSTGRESQL_SCHEMES = ("postgresql", "postgres")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*$")
# The quoted parts of a libpq parse error, in pairs from the left ("=" or a piece of the
# URL), and a quote left open at the end.
_QUOTED = re.compile(r'"([^"]*)"|"[^"]*$')
_ECHOED_URI = re.compile(r'\s+in URI: "[^"]*"?\s*$')


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a PostgreSQL connection string (a ``postgresql://`` URL or
    libpq's ``key=value`` form), or None if libpq can read it. The reason never quotes
    the URL or any part of it, so it is safe to print whatever the URL holds.

    Only the form is checked: whether the server answers is for the connection to say.
    """
    scheme, sep, _ = url.partition("://")
    if sep and scheme.lower() not in POSTGRESQL_SCHEMES:
        if _SCHEME.match(scheme):
            return f"it is a {scheme.lower()}:// URL, and safelight needs PostgreSQL"
        return "it is neither a postgresql:// URL nor key=value pairs"
    try:
        conninfo_to_dict(url)
    except psycopg.Error as error:
        lines = str(error).strip().splitlines()
        reason = _ECHOED_URI.sub("", lines[0]) if lines else type(error).__name__
        # A one-character quote is libpq's own ("=", "]"); a longer one is the URL's.
        return _QUOTED.sub(lambda m: m[0] if len(m[0]) == 3 else '"…"', reason)
    return None


def mask_url(url: str) -> str:
    """Return ``url`` with any password replaced by ``***``: safe to log or print.

    Handles ``postgresql://user:secret@host/db``, ``?password=secret`` and the
    keyword form ``host=h password=secret``. Never raises: a URL it cannot parse is
    masked as a whole rather than risk printing a secret.
    """
    masked = _KEYWORD_PASSWORD.sub(r"\1***", url)
    if "://" not in masked:
        return masked
    try:
        parts = urlsplit(masked)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hostport = netloc.rpartition("@")
            if ":" in userinfo:
                user = userinfo.split(":", 1)[0]
                netloc = f"{user}:***@{hostport}"
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return "<unparseable database URL>"


def database_key(url: str) -> str:
    """A short name for the database ``url`` reaches, safe as a file name: its host,
    port and database (never the user or a password), and a hash of them so two
    databases never share a name. Never raises: an unparseable URL is hashed whole."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error:
        params = {}
    if params:
        host = str(params.get("host") or "local")
        port = str(params.get("port") or "5432")
        name = str(params.get("dbname") or params.get("user") or "default")
        readable = f"{host}-{port}-{name}"
    else:
        readable = "database"
    digest = hashlib.sha256(readable.encode() if params else url.encode()).hexdigest()[:8]
    slug = _UNSAFE_IN_NAME.sub("_", readable).strip("._-")[:48] or "database"
    return f"{slug}-{digest}"


_UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9.-]+")

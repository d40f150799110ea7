"""Database URLs, and how to show one without its secret."""

from __future__ import annotations

import hashlib
import re
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict

# password=... in a libpq keyword/value string or a URL query.
_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


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

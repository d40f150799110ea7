"""Database URLs, and how to show one without its secret."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

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

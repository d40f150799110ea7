"""How to see a library in the dashboard: the ``safelight serve`` command line that
reaches the same database and home as the command just run, and where its link goes.

``safelight demo`` ends with it. The command repeats the settings this run was *given*
(a flag, or ``SAFELIGHT_HOME`` / ``SAFELIGHT_PROXY_ROOT``), so it finds the same
embedded database and proxies; a database URL from the environment stays there (it is
not printed), one from the flag is printed masked, as every URL safelight prints is.
With ``--day``, the one link that ``serve`` prints (the first-admin link on a new
library, ADR 0045) opens On this day on that day: one click from the photos.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from safelight.db.urls import mask_url
from safelight.settings import ENV_PREFIX, Settings


def program(argv0: str | None = None, cwd: Path | None = None) -> str:
    """How this command was started, to start the next one alike: the repository's
    ``./safelight`` when this is its ``.venv``'s entry point (the wrapper runs that),
    else ``safelight``."""
    entry = Path(argv0 if argv0 is not None else sys.argv[0])
    if (
        entry.name != "safelight"
        or entry.parent.name != "bin"
        or entry.parent.parent.name != ".venv"
    ):
        return "safelight"
    wrapper = entry.parent.parent.parent / "safelight"
    if not wrapper.is_file():
        return "safelight"
    here = (cwd or Path.cwd()).resolve()
    try:
        return "./" + wrapper.resolve().relative_to(here).as_posix()
    except ValueError:
        return str(wrapper.resolve())


def serve_argv(
    settings: Settings,
    overrides: Mapping[str, Any],
    *,
    day: date | None = None,
    env: Mapping[str, str] | None = None,
    argv0: str | None = None,
) -> list[str]:
    """``safelight [--database-url URL] [--home H] [--proxy-root P] [--read-group G] serve
    [--day D]``: the global settings this run was given, and no others; the day its links
    open on."""
    env = os.environ if env is None else env

    def given(name: str) -> bool:
        return overrides.get(name) is not None or bool(env.get(ENV_PREFIX + name.upper()))

    argv = [program(argv0)]
    if overrides.get("database_url") is not None and settings.database_url is not None:
        argv += ["--database-url", mask_url(settings.database_url)]
    if given("home"):
        argv += ["--home", str(settings.home)]
    if given("proxy_root"):
        argv += ["--proxy-root", str(settings.proxies)]
    if given("read_group") and settings.read_group is not None:
        # Else serve would tighten the proxies back to its own user's (ADR 0043).
        argv += ["--read-group", settings.read_group]
    return [*argv, "serve", *(() if day is None else ("--day", day.isoformat()))]


def dashboard_url(settings: Settings, day: date | None = None) -> str | None:
    """The URL ``safelight serve`` prints (``Settings.web_url``), on ``day`` when given;
    None when it listens on any free port (it prints the one it took)."""
    if settings.web_port == 0:
        return None
    query = "" if day is None else f"?date={day.isoformat()}"
    return settings.web_url(settings.web_port) + query


def day_showing(month: int, day: int, year: int) -> date:
    """The day of ``year`` whose page shows (month, day) of earlier years: that day, or
    28 February for the 29th in a common year (whose page holds the leap days)."""
    try:
        return date(year, month, day)
    except ValueError:
        return date(year, 2, 28)


def hint(argv: list[str], url: str | None) -> list[str]:
    """The lines a command prints: what to run, and what its printed link opens."""
    opened = "then open the link it prints, which signs you in" + (f" on {url}" if url else "")
    return [f"See it in a browser (On this day, the queue): {shlex.join(argv)}", f"  {opened}"]

"""A run's summary document built from defaults, and its rendering as one line of words,
for the tests of ``safelight.cli.summary``."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from rich.console import Console

from safelight.cli.summary import build_summary, render_summary

EXIT_CODES = {"succeeded": 0, "failed": 1, "interrupted": 130}

# The library counts of a folder that holds nothing.
EMPTY_LIBRARY: Mapping[str, int] = {
    "images": 0,
    "videos": 0,
    "soft_deleted": 0,
    "bursts": 0,
    "burst_assets": 0,
    "live_photos": 0,
    "stacks": 0,
    "proxy_files": 0,
}


def summary_document(
    *,
    status: str = "succeeded",
    result: Mapping[str, Any] | None = None,
    crawl: Mapping[str, Any] | None = None,
    library: Mapping[str, int] | None = None,
    items: Sequence[Mapping[str, Any]] = (),
    stored_errors: Sequence[Mapping[str, Any]] = (),
    database: str = "embedded",
    proxy_folder: Path = Path("/proxies"),
    seconds: float = 1.0,
) -> dict[str, Any]:
    """The summary of a run of alice's /photos (config 7) whose crawl, item 1, ended
    ``status`` with ``result``; ``crawl`` overrides the crawl's other fields and
    ``library`` the counts of :data:`EMPTY_LIBRARY`."""
    return build_summary(
        status=status,
        exit_code=EXIT_CODES[status],
        database=database,
        config={"id": UUID(int=7), "owner": "alice", "root": Path("/photos"), "created": True},
        crawl={
            "item_id": 1,
            "status": "succeeded",
            "error": None,
            "result": result,
            **(crawl or {}),
        },
        library={**EMPTY_LIBRARY, **(library or {})},
        stored_errors=list(stored_errors),
        proxy_folder=proxy_folder,
        seconds=seconds,
        items=list(items),
    )


def rendered(document: Mapping[str, Any], width: int = 120) -> str:
    """What ``render_summary`` prints, its whitespace folded to single spaces."""
    out = io.StringIO()
    render_summary(Console(file=out, width=width), document)
    return " ".join(out.getvalue().split())

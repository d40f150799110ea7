"""How the CLI shows what the scrub of the originals found (ADR 0062)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.table import Table
from rich.text import Text

from safelight.cli.output import short_id, table


def changed_table(rows: Iterable[Mapping[str, Any]]) -> Table | Text:
    """``assets --changed``: each original whose bytes are not the recorded ones under the
    recorded size and time, when that was found, and both hashes. Its asset, proxies
    and recorded hash are as they were: nothing was "fixed"."""
    return table(
        "originals changed without their time changing (bit rot or tampering)",
        ["id", "config", "path", "found", "recorded hash", "hash now", "last checked"],
        (
            (
                r["id"],
                short_id(r["storage_config_id"]),
                r["file_path"],
                r["content_mismatch_at"],
                r["content_hash"],
                r["content_found_hash"],
                r["content_checked_at"],
            )
            for r in rows
        ),
        empty="none found",
    )

"""The library: ``assets`` lists what crawls found, ``purge`` removes what went."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import click
from rich.console import Group

from safelight.app import app_store
from safelight.cli.admin import json_option
from safelight.cli.output import console, print_json, safe_text, short_id, table
from safelight.cli.queue import config_option, resolve_config
from safelight.cli.scrub import changed_table
from safelight.cli.state import CliState, pass_state
from safelight.db.database import Database
from safelight.handlers import PURGE
from safelight.library.catalogue.configs import StorageConfigs
from safelight.settings import Settings
from safelight.views.capturetimes import capture_time_text
from safelight.views.datenotes import date_note
from safelight.views.failedfiles import failed_by_reason, next_try
from safelight.views.places import place_text
from safelight.views.queries import list_assets, list_duplicates, list_similar_groups
from safelight.views.scrub import changed_list


def _size(value: int | None) -> str:
    if value is None:
        return ""
    size = float(value)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"  # pragma: no cover - the loop always returns


def local_time(
    captured_local: datetime | None,
    captured_at: datetime,
    source: str | None = None,
    zone_source: str | None = None,
) -> str:
    """The capture time as the camera's clock showed it, as the dashboard shows it, with
    its offset from UTC where one is known: ``2019-06-01 14:03:22 +02:00``
    (``views.capturetimes``, one rule for both: a zero difference is an offset only from
    a source that is always an instant, or when the zone was known, ADR 0065)."""
    if captured_local is None:
        return f"{captured_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    return capture_time_text(captured_at, captured_local, source, zone_source)


def _captured(row: dict[str, Any]) -> str:
    """The local capture time, with what qualifies it when it is not a capture date
    (the file's last edit, its time on disk: ``views.datenotes``)."""
    shown = local_time(
        row.get("captured_local"),
        row["captured_at"],
        row.get("captured_at_source"),
        row.get("zone_source"),
    )
    note = date_note(row.get("captured_at_source"))
    return shown if note is None else f"{shown} ({note})"


def _place(row: dict[str, Any]) -> str:
    """Where it was taken: its place, ``Lisbon, Portugal`` (``views.places``; ADR 0065),
    else its position, ``39.11500, -108.40097 (1484 m)`` (not looked up yet, or far
    from any place: five decimals are about a metre); nothing without a position."""
    named = place_text(
        row.get("place_city"), row.get("place_country"), row.get("place_country_code")
    )
    if named is not None:
        return named
    if row.get("latitude") is None or row.get("longitude") is None:
        return ""
    text = f"{row['latitude']:.5f}, {row['longitude']:.5f}"
    return text if row.get("altitude_m") is None else f"{text} ({row['altitude_m']:.0f} m)"


@click.command("assets")
@config_option("Only assets of this storage config.")
@click.option(
    "--deleted", is_flag=True, help="The soft-deleted assets (files that went), with when."
)
@click.option(
    "--duplicates",
    is_flag=True,
    help="The files with the same bytes as an asset, each with the asset's path.",
)
@click.option(
    "--failed",
    is_flag=True,
    help="The files crawls could not ingest, grouped by reason, newest first "
    "('safelight config retry-failed' tries them again).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="At most this many (with --failed: of each reason).",
)
@click.option(
    "--changed",
    is_flag=True,
    help="The originals whose content changed while their size and time did not, as the "
    "scrub found them (bit rot or tampering), the last found first.",
)
@click.option(
    "--similar",
    is_flag=True,
    help="The groups of near-identical shots of one scene and time, each with its members, "
    "the one shown first (with --limit: at most this many groups).",
)
@json_option()
@pass_state
def assets(
    state: CliState,
    config_ref: str | None,
    deleted: bool,
    duplicates: bool,
    failed: bool,
    limit: int | None,
    changed: bool,
    similar: bool,
    as_json: bool,
) -> None:
    """List the live assets crawls found, with --deleted those whose file went, with
    --duplicates the files folded into an asset because they hold the same bytes, with
    --failed the files crawls could not ingest, by reason, or with --changed the
    originals the scrub found changed under the same size and time. With --similar, the
    groups of similar shots (ADR 0066), each shown as one tile."""
    if sum((deleted, duplicates, failed, changed, similar)) > 1:
        raise click.UsageError(
            "--deleted, --duplicates, --failed, --changed and --similar do not go together"
        )
    if failed:
        _failed(state, config_ref, limit, as_json)
        return
    if similar:
        _similar(state, config_ref, limit, as_json)
        return

    async def body(database: Database, settings: Settings) -> list[dict[str, Any]]:
        config_id = await resolve_config(database, state, config_ref)
        if changed:
            return await changed_list(database.pool, config_id=config_id, limit=limit, owner=None)
        if duplicates:
            return await list_duplicates(database.pool, config_id=config_id, limit=limit)
        return await list_assets(database.pool, config_id=config_id, deleted=deleted, limit=limit)

    rows = state.with_database(body)
    if as_json:
        print_json(rows)
        return
    if changed:
        console().print(changed_table(rows))
        return
    if duplicates:
        console().print(
            table(
                "duplicates",
                ["config", "path", "same as", "asset", "last seen"],
                (
                    (
                        short_id(r["storage_config_id"]),
                        r["file_path"],
                        r["same_as"],
                        r["asset_id"],
                        r["last_seen_at"],
                    )
                    for r in rows
                ),
                empty="none",
            )
        )
        return
    columns = [
        "id",
        "config",
        "path",
        "type",
        "size",
        "captured (local)",
        "camera",
        "place",
        "proxies",
        "stack",
        "note",
    ]
    if deleted:
        columns.append("deleted")
    console().print(
        table(
            "soft-deleted assets" if deleted else "assets",
            columns,
            (
                (
                    r["id"],
                    short_id(r["storage_config_id"]),
                    r["file_path"],
                    "motion photo" if r.get("motion_photo") else r["media_type"],
                    _size(r["size_bytes"]),
                    _captured(r),
                    " ".join(p for p in (r["camera_make"], r["camera_model"]) if p),
                    _place(r),
                    r["proxies"],
                    _stack(r),
                    # What the crawl noticed reading it: a name that lies, a cut (ADR 0052).
                    r.get("read_note") or "",
                    *((r["deleted_at"],) if deleted else ()),
                )
                for r in rows
            ),
            empty="none",
        )
    )


def _similar(state: CliState, config_ref: str | None, limit: int | None, as_json: bool) -> None:
    """``assets --similar``: each group's members, the one shown first (``*``)."""

    async def body(database: Database, settings: Settings) -> list[dict[str, Any]]:
        config_id = await resolve_config(database, state, config_ref)
        return await list_similar_groups(database.pool, config_id=config_id, limit=limit)

    groups = state.with_database(body)
    if as_json:
        print_json(groups)
        return
    rows = [
        (
            g["id"] if n == 0 else "",
            short_id(g["storage_config_id"]) if n == 0 else "",
            g["count"] if n == 0 else "",
            "*" if m["id"] == g["primary_asset_id"] else "",
            m["id"],
            m["file_path"],
            _captured(m),
        )
        for g in groups
        for n, m in enumerate(g["members"])
    ]
    console().print(
        table(
            "similar shots",
            ["group", "config", "shots", "shown", "id", "path", "captured (local)"],
            rows,
            empty="none",
        )
    )


def _local(moment: datetime) -> str:
    """A time as the tables show it (``output.cell``): local, to the second."""
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _failed(state: CliState, config_ref: str | None, limit: int | None, as_json: bool) -> None:
    """``assets --failed``: one table a config and reason (``views.failedfiles``)."""

    async def body(database: Database, settings: Settings) -> list[dict[str, Any]]:
        config_id = await resolve_config(database, state, config_ref)
        return await failed_by_reason(
            database.pool, state.clock.now(), owner=None, config_id=config_id, per_reason=limit
        )

    groups = state.with_database(body)
    if as_json:
        print_json(groups)
        return
    if not groups:
        console().print("no failed files")
        return
    parts: list[Any] = []
    for g in groups:
        files = f"{g['files']} file" if g["files"] == 1 else f"{g['files']} files"
        # The root and the reason are the library's text: never read as markup.
        parts.append(safe_text(f"{short_id(g['config_id'])} {g['root']}: {g['reason']} ({files})"))
        parts.append(
            table(
                None,
                ["path", "first failed", "last failed", "failures", "next try"],
                (
                    (
                        f["path"],
                        f["first_seen_at"],
                        f["last_seen_at"],
                        f["failures"],
                        next_try(f, _local),
                    )
                    for f in g["rows"]
                ),
            )
        )
        parts.append("")
    parts.append("try again: safelight config retry-failed ID [--reason REASON | --path PATH]")
    console().print(Group(*parts))


_STACK_LABELS = {"raw": "RAW", "format": "format", "copy": "copy"}
"""What a stacked asset is to its primary (``assets.stack_kind``): a RAW of the same
capture (ADR 0027), another format of it or a near-copy (ADR 0056)."""


def _stack(row: Mapping[str, Any]) -> str:
    primary = row["stack_primary_id"]
    if not primary:
        return ""
    return f"{_STACK_LABELS.get(row.get('stack_kind') or 'raw', 'RAW')} of {primary}"


@click.command("purge")
@click.argument("config_ref", metavar="CONFIG")
@pass_state
def purge(state: CliState, config_ref: str) -> None:
    """Queue a purge of CONFIG: delete its soft-deleted assets' proxies and rows.

    Prints the item's id (the queued purge's, if one is already waiting).
    """

    async def body(database: Database, settings: Settings) -> int:
        config = await StorageConfigs(database.pool, state.clock).resolve_id(config_ref)
        store = app_store(database, settings, state.clock)
        return await PURGE.enqueue_for(store, config.id)

    click.echo(str(state.with_database(body)))

"""The summary ``safelight run`` prints at the end, as a document and as text.

The document is the ``--json`` output, a contract for scripts: its keys only ever get
added to. Numbers of "this run" come from the crawl's result, or, when the crawl did
not finish here (Ctrl-C), from the counts its attempt saved as it went (the item's
``progress``); what the library holds now (assets by type, bursts, Live Photos, motion
photos, RAW stacks, groups of similar shots, people, proxy files) from the database, so a
second run that found nothing new still says what is there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from safelight.cli.output import print_trimmed, safe_text, short_id
from safelight.handlers.crawl.result import CrawlCounts, CrawlResult
from safelight.library.walk.walker import FileError
from safelight.words import plural
from safelight.work.outcome import FAILS_BY_NAME, Released, Retrying, Succeeded

# The statuses of a run, by exit code meaning.
SUCCEEDED = "succeeded"
FAILED = "failed"
INTERRUPTED = "interrupted"
# The items a summary does not list at all: their attempt did its work, or gave the item
# back to the queue for the next run, or for a retry (whose own end is listed too).
_ENDED_WELL = frozenset({Succeeded.name, Released.name, Retrying.name})


def saved_counts(progress: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The counters of an item's saved progress (``{"attempt": n, "counts": {...}}``)."""
    if not progress or not isinstance(progress.get("counts"), Mapping):
        return None
    counts: Mapping[str, Any] = progress["counts"]
    return counts


def _listed(entries: tuple[FileError, ...]) -> list[dict[str, Any]]:
    return [{"path": e.path, "reason": e.reason} for e in entries]


def build_summary(
    *,
    status: str,
    exit_code: int,
    database: str,
    config: Mapping[str, Any],
    crawl: Mapping[str, Any],
    library: Mapping[str, Any],
    stored_errors: Sequence[Mapping[str, Any]],
    proxy_folder: Path,
    seconds: float,
    items: Sequence[Mapping[str, Any]],
    stopped_at_once: bool = False,
    other_work: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """``crawl``: item_id, status, error, result (None when it did not finish), and
    progress: the counts its attempt in this run saved, for when it did not finish.
    ``stopped_at_once``: a second signal stopped the Workers without releasing their items."""
    stored = crawl.get("result")
    result = None if stored is None else CrawlResult.from_json(stored)
    # What this run did: the crawl's result, else what its interrupted attempt saved.
    counts = result.counts if result is not None else CrawlCounts.from_json(crawl.get("progress"))
    files = counts.total
    # Every file that could not be ingested, as the catalogue records it once the crawl
    # ended or stopped: those it read and failed, those it left unread because they have
    # not changed since they failed (ADR 0057), and, when it did not finish, what the
    # last crawls recorded. All of them: the result lists only the first thousand.
    errors = [{"path": e["file_path"], "reason": e["reason"]} for e in stored_errors]
    # None of the lists when the crawl did not finish (their counts still say how many);
    # each file folded into an asset it has the same bytes as is listed with that asset.
    finished = result if result is not None else CrawlResult()
    skipped = _listed(finished.skipped)
    proxy_errors = _listed(finished.proxy_errors)
    duplicate_files = [{"path": d.path, "same_as": d.same_as} for d in finished.duplicates]
    motion_photo_issues = _listed(finished.motion_photo_issues)
    images, videos = int(library["images"]), int(library["videos"])
    return {
        "status": status,
        "exit_code": exit_code,
        "stopped_at_once": stopped_at_once,
        "database": database,
        "config": dict(config),
        "crawl": {
            "item_id": crawl["item_id"],
            "status": crawl["status"],
            "error": crawl.get("error"),
        },
        "files": files,
        "assets": {"image": images, "video": videos, "total": images + videos},
        "new": counts.ingested,
        "unchanged": counts.unchanged,
        "moved": counts.moved,
        # Photos read again in place: their XMP sidecar was added, changed or removed.
        "reread": counts.reread,
        "duplicates": counts.duplicates,
        "duplicate_files": duplicate_files,
        "deleted": counts.deleted,
        "soft_deleted_total": int(library["soft_deleted"]),
        "proxies": {
            "made": counts.proxies,
            "renamed": finished.proxies_renamed,
            "files": int(library["proxy_files"]),
            "folder": proxy_folder,
        },
        "bursts": int(library["bursts"]),
        "burst_assets": int(library["burst_assets"]),
        "live_photos": int(library["live_photos"]),
        # Photos with no date inside (EXIF, XMP, IPTC, maker blocks): dated by the
        # file's time, which "On this day" would show as the day they were copied.
        "photos_dated_by_file": int(library.get("photos_dated_by_file", 0)),
        # Photos whose only date inside is the file's last write (ADR 0053): a guess.
        "photos_dated_by_last_edit": int(library.get("photos_dated_by_last_edit", 0)),
        "motion_photos": int(library.get("motion_photos", 0)),
        "motion_photo_issues": motion_photo_issues,
        "stacks": int(library["stacks"]),
        # Groups of similar shots (ADR 0066), each shown as one tile, and their photos.
        "similar_groups": int(library.get("similar_groups", 0)),
        "similar_assets": int(library.get("similar_assets", 0)),
        # The people the faces kind found in the folder's photos, and those with a name.
        "people": int(library.get("people", 0)),
        "people_named": int(library.get("people_named", 0)),
        "errors": errors,
        "proxy_errors": proxy_errors,
        "skipped": skipped,
        # Failed files unchanged since they failed, not read again (each is in "errors").
        "not_retried": counts.not_retried,
        # Files that are no photo, video or sidecar, left alone.
        "other_files": counts.other_files,
        "seconds": round(seconds, 3),
        "files_per_second": round(files / seconds, 2) if seconds > 0 else None,
        "items": list(items),
        # Other files of a capture stacked on its original: formats, near-copies (ADR 0056).
        "copies": int(library.get("copies", 0)),
        # Ingested as what their content is, another format than their name says, and
        # JPEGs ingested as far as they decode (ADR 0052): counted by the text, listed here.
        "misnamed": _listed(finished.misnamed),
        "cut_short": _listed(finished.cut_short),
        # Items of other folders this run ran too (a crawl an interrupted run of another
        # folder left queued): label, outcome, a crawl's files. The time above includes them.
        "other_work": [dict(w) for w in other_work],
        # Files this run's crawl failed to ingest, counted as it went: an interrupted
        # crawl records (and lists) them only in the run that finishes it.
        "errors_this_run": counts.errors,
    }


def other_line(work: Mapping[str, Any]) -> str:
    """``crawl A: succeeded (112 files)``: an item of another folder this run ran."""
    files = work.get("files")
    return f"{work['label']}: {work['outcome']}" + (
        "" if files is None else f" ({plural(int(files), 'file')})"
    )


def not_ingested(errors: Sequence[Mapping[str, Any]]) -> str:
    """ "2 files could not be ingested", or "1 file and 1 folder could not be read": the
    walk records a folder it could not list by its path and a slash (``walk.walker``)."""
    folders = sum(1 for e in errors if str(e["path"]).endswith("/"))
    files = len(errors) - folders
    if not folders:
        return f"{plural(files, 'file')} could not be ingested"
    if not files:
        return f"{plural(folders, 'folder')} could not be read"
    return f"{plural(files, 'file')} and {plural(folders, 'folder')} could not be read"


def render_summary(console: Console, summary: Mapping[str, Any]) -> None:
    config = summary["config"]
    crawl = summary["crawl"]
    assets = summary["assets"]
    proxies = summary["proxies"]
    seconds = summary["seconds"]
    rate = summary["files_per_second"]

    if summary["status"] == INTERRUPTED and summary.get("stopped_at_once"):
        headline = Text(
            f"Stopped at once after {seconds:.1f} s. Running work goes back to the queue "
            "when its lease expires; run the same command again to continue.",
            style="bold yellow",
        )
    elif summary["status"] == INTERRUPTED:
        headline = Text(
            f"Interrupted after {seconds:.1f} s. Running work was released; run the same "
            "command again to continue where this one stopped.",
            style="bold yellow",
        )
    elif summary["status"] == FAILED:
        reason = crawl["error"] or "an item of this folder failed (see below)"
        headline = safe_text(f"The crawl did not succeed: {reason}", style="bold red")
    else:
        speed = f", {rate:.1f} files/s" if rate else ""
        also = "; and the other work below" if summary.get("other_work") else ""
        headline = Text(
            f"Done in {seconds:.1f} s ({plural(summary['files'], 'file')}{speed}{also}).",
            style="bold green",
        )

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column(overflow="fold")
    grid.add_row(
        "folder",
        safe_text(f"{config['root']} (config {short_id(config['id'])}, owner {config['owner']})"),
    )
    grid.add_row(
        "assets",
        f"{plural(assets['image'], 'photo')}, {plural(assets['video'], 'video')}",
    )
    grid.add_row(
        "this run",
        f"{summary['new']} new, {summary['moved']} moved, "
        + (f"{summary['reread']} read again (sidecar changed), " if summary.get("reread") else "")
        + f"{plural(summary['duplicates'], 'duplicate')}, {summary['unchanged']} unchanged, "
        f"{summary['deleted']} soft-deleted",
    )
    renamed = (
        f"; {proxies['renamed']} renamed from an older version's names"
        if proxies.get("renamed")
        else ""
    )
    grid.add_row(
        "proxies",
        safe_text(
            f"{proxies['made']} made (thumbnails, previews, BlurHashes){renamed}; "
            f"{proxies['files']} files in {proxies['folder']}"
        ),
    )
    grid.add_row(
        "bursts",
        f"{plural(summary['bursts'], 'burst')} ({plural(summary['burst_assets'], 'photo')}); "
        f"{plural(summary['live_photos'], 'Live Photo')}; "
        f"{plural(summary.get('motion_photos', 0), 'motion photo')}; "
        f"{plural(summary['stacks'], 'RAW stacked on its JPEG', 'RAWs stacked on their JPEG')}",
    )
    if summary.get("similar_groups"):
        grid.add_row(
            "similar",
            plural(summary["similar_groups"], "group of similar shots", "groups of similar shots")
            + f" ({plural(summary['similar_assets'], 'photo')}), each shown as one tile",
        )
    if summary.get("people"):
        grid.add_row(
            "people",
            f"{plural(summary['people'], 'person', 'people')} found in the photos "
            f"({summary['people_named']} named)",
        )
    if summary.get("copies"):
        grid.add_row(
            "copies",
            f"{plural(summary['copies'], 'other file')} of a capture (another format, a copy) "
            "stacked on the original",
        )
    dated = (
        [
            plural(
                summary["photos_dated_by_file"],
                "photo dated by its file's time",
                "photos dated by their file's time",
            )
            + " (no date inside the file)"
        ]
        if summary.get("photos_dated_by_file")
        else []
    )
    if summary.get("photos_dated_by_last_edit"):
        dated.append(
            f"{plural(summary['photos_dated_by_last_edit'], 'photo')} dated by the file's "
            "last edit (less certain)"
        )
    if dated:
        grid.add_row("dates", "; ".join(dated))
    misnamed = summary.get("misnamed") or []
    if misnamed:
        grid.add_row(
            "names",
            f"{len(misnamed)} file holds another format than its name says"
            if len(misnamed) == 1
            else f"{len(misnamed)} files hold another format than their name says",
        )
    cut_short = summary.get("cut_short") or []
    if cut_short:
        grid.add_row(
            "cut short",
            f"{plural(len(cut_short), 'photo was', 'photos were')} cut short, decoded "
            "as far as the data goes",
        )
    if summary["soft_deleted_total"]:
        grid.add_row(
            "gone",
            plural(
                summary["soft_deleted_total"],
                "soft-deleted asset waits",
                "soft-deleted assets wait",
            )
            + f" for 'safelight purge {short_id(config['id'])}'",
        )
    for item in summary["items"]:
        if item["outcome"] in _ENDED_WELL:
            continue
        # An attempt that stopped without a verdict on its work (interrupted by the
        # database, lost, self-stopped, cancelled) is listed by what happened to it, not
        # as a failure: its item is back in the queue, or was stopped on purpose.
        failed = FAILS_BY_NAME.get(item["outcome"], True)
        grid.add_row(
            "failed" if failed else "stopped",
            safe_text(
                f"{item['kind']} #{item['id']}: {item['error'] or item['outcome']}"
                if failed
                else f"{item['kind']} #{item['id']} {item['outcome']}"
                + (f": {item['error']}" if item["error"] else "")
            ),
        )

    if summary.get("other_work"):
        grid.add_row("also ran", safe_text("; ".join(other_line(w) for w in summary["other_work"])))
    if summary.get("other_files"):
        grid.add_row(
            "other files",
            f"{plural(summary['other_files'], 'other file')} left alone "
            "(not a photo, video or sidecar)",
        )
    parts: list[Any] = [headline, grid]
    errors = summary["errors"]
    if errors:
        parts += [
            Text(f"{not_ingested(errors)}:", style="bold"),
            _listing(errors),
        ]
    failed_here = int(summary.get("errors_this_run") or 0)
    if summary["status"] == INTERRUPTED and failed_here:
        parts.append(
            Text(
                f"{plural(failed_here, 'file')} could not be ingested in this run before it "
                "stopped; the run that finishes the crawl lists "
                f"{'it' if failed_here == 1 else 'them'} (run the same command again)",
                style="bold",
            )
        )
    if summary.get("not_retried"):
        unread = summary["not_retried"]
        parts.append(
            Text(
                f"{plural(unread, 'failed file')} unchanged since "
                f"{'it' if unread == 1 else 'they'} failed; not read again: run --retry-failed"
            )
        )
    duplicates = summary.get("duplicate_files") or []
    if duplicates:
        parts += [
            Text(
                f"{plural(len(duplicates), 'file')} with the same bytes as an asset "
                "(a duplicate, not a second asset):",
                style="bold",
            ),
            _listing(
                [
                    {
                        "path": d["path"],
                        "reason": d["same_as"] if d["path"] == "..." else f"same as {d['same_as']}",
                    }
                    for d in duplicates
                ]
            ),
        ]
    motion_issues = summary.get("motion_photo_issues") or []
    if motion_issues:
        parts += [
            Text(
                f"{plural(len(motion_issues), 'photo')} shown as a still, its motion "
                "video missing or unplayable:",
                style="bold",
            ),
            _listing(motion_issues),
        ]
    proxy_errors = summary.get("proxy_errors") or []
    if proxy_errors:
        parts += [
            Text(
                f"{plural(len(proxy_errors), 'proxy file')} under the proxy folder "
                "could not be renamed (each still shows as it is):",
                style="bold",
            ),
            _listing(proxy_errors),
        ]
    skipped = summary.get("skipped") or []
    if skipped:
        parts += [
            Text(f"{plural(len(skipped), 'entry', 'entries')} not crawled:"),
            _listing(skipped),
        ]
    parts.append(safe_text(f"database: {summary['database']}", style="dim"))
    print_trimmed(console, Group(*parts))


def _listing(entries: list[Mapping[str, Any]]) -> Table:
    """Two columns, a path and its reason, each folded rather than cut."""
    listing = Table.grid(padding=(0, 2))
    listing.add_column(overflow="fold")
    listing.add_column(overflow="fold")
    for entry in entries:
        listing.add_row(safe_text(str(entry["path"])), safe_text(str(entry["reason"])))
    return listing

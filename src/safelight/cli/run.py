"""``safelight run PATH`` and ``safelight demo``: from a folder of photos to proxies.

``run`` registers the folder (once), queues its crawl (deduplicated, so a crawl a
previous run left queued is the one that runs), runs Workers in this process until the
queue is idle, and prints a summary. Ctrl-C stops claiming and releases the running
items back to the queue, so the next ``run`` continues where this one stopped.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import click

from safelight.app import FinishedItem, WorkerOptions, app_store, run_workers
from safelight.cli.admin import json_option, os_user, user_option
from safelight.cli.dashboard_hint import dashboard_url, day_showing, hint, serve_argv
from safelight.cli.failures import EXIT_INTERRUPTED, EXIT_OK, EXIT_WORK_FAILED
from safelight.cli.output import console, print_json
from safelight.cli.progress import Started, choose_view
from safelight.cli.state import CliState, pass_state
from safelight.cli.summary import (
    FAILED,
    INTERRUPTED,
    SUCCEEDED,
    build_summary,
    render_summary,
    saved_counts,
)
from safelight.db.database import Database
from safelight.handlers import CRAWL
from safelight.handlers.crawl.result import CrawlResult
from safelight.library.catalogue import assets
from safelight.library.catalogue.configs import StorageConfigs, resolve_root
from safelight.library.files.roots import DEMO_FOLDER, check_storage_root, own_folders
from safelight.settings import Settings, make_folder
from safelight.terminal import printable
from safelight.views.queries import asset_errors, busiest_day, library_counts, list_items
from safelight.words import plural
from safelight.work.model import Status

DEFAULT_WORKERS = 2
DEMO_SEED = 2024


Extra = Callable[[Database, Settings, UUID], Awaitable[Mapping[str, Any]]]
"""More of the summary, read on the open database once the crawl ended (the config's id)."""


def item_label(
    kind: str, item_id: int, config_id: UUID | None, folders: Mapping[UUID, Path]
) -> str:
    """How progress and the summary name an item: a crawl by its own config's folder
    (a crawl an earlier, interrupted run of another folder left queued runs too, and is
    that folder's), anything else by its kind and id."""
    folder = folders.get(config_id) if config_id is not None else None
    if kind == CRAWL.name and folder is not None:
        return f"crawl {folder.name or folder}"
    return f"{kind.replace('_', ' ')} #{item_id}"


def waiting_line(label: str, running: Mapping[str, Any]) -> str:
    """What ``run`` says when its folder is being crawled already (by another ``run``
    or a Worker): the wait that follows is for that crawl."""
    return (
        f"{label}: already running (item #{running['id']}, Worker {running['worker_id']}); "
        "waiting for it to end, then this run crawls what is left"
    )


def other_work(
    finished: Sequence[FinishedItem], config_id: UUID, folders: Mapping[UUID, Path]
) -> list[dict[str, Any]]:
    """The items of other folders' configs this run ran too (Workers take what is
    queued), for the summary to say: their label, outcome and, for a crawl, its files."""
    others = []
    for f in finished:
        if f.storage_config_id is None or f.storage_config_id == config_id:
            continue
        files = None
        if f.kind == CRAWL.name and f.result is not None:
            files = CrawlResult.from_json(f.result).counts.total
        others.append(
            {
                "id": f.id,
                "kind": f.kind,
                "label": item_label(f.kind, f.id, f.storage_config_id, folders),
                "outcome": f.outcome,
                "files": files,
            }
        )
    return others


def run_folder(
    state: CliState,
    path: str | Path,
    *,
    owner: str,
    workers: int,
    as_json: bool,
    extra: Extra | None = None,
    retry_failed: bool = False,
) -> dict[str, Any]:
    """Crawl ``path`` to the end (or a Ctrl-C), print the summary and return it (its
    ``exit_code`` is the command's). ``retry_failed``: the crawl reads every file that
    failed before again, changed or not (ADR 0057)."""
    settings = state.settings()  # invalid settings are reported before anything else
    # A bad path, or one that overlaps safelight's own folders, is a usage error before
    # the database opens.
    root = resolve_root(path)
    own = own_folders(settings.home, settings.proxies)
    check_storage_root(root, own)
    clock = state.clock
    folders: dict[UUID, Path] = {}  # every config's folder, read once the database is open

    def label(item: Started) -> str:
        return item_label(item.kind, item.id, item.storage_config_id, folders)

    async def body(database: Database, settings: Settings) -> dict[str, Any]:
        configs = StorageConfigs(database.pool, clock, own_folders=own)
        added = await configs.add(owner, root)
        config = added.config
        folders.update({c.id: c.root_path for c in await configs.list_configs()})
        if retry_failed:
            async with database.pool.connection() as conn:
                await assets.errors_due_now(conn, config.id, clock.now())
        store = app_store(database, settings, clock)
        crawl_id = await CRAWL.enqueue_for(store, config.id)
        for running in await list_items(
            database.pool, status="running", config_id=config.id, kind=CRAWL.name, owner=None
        ):
            # A config runs one item at a time: this run's crawl waits for that one, which
            # would otherwise be a silent minute.
            label_now = item_label(CRAWL.name, running["id"], config.id, folders)
            click.echo(printable(waiting_line(label_now, running)), err=True)
        view = choose_view(
            as_json=as_json, stdout=sys.stdout, stderr=sys.stderr, clock=clock, label=label
        )
        started = clock.monotonic()
        with view:
            report = await run_workers(
                settings,
                WorkerOptions(concurrency=workers, user=owner, until_idle=True),
                database=database,
                on_progress=view.on_progress,
                on_finished=view.on_finished,
            )
        seconds = clock.monotonic() - started

        crawl = await store.get(crawl_id)
        items = [
            {
                "id": f.id,
                "kind": f.kind,
                "storage_config_id": f.storage_config_id,
                "outcome": f.outcome,
                "error": f.error,
            }
            for f in report.finished
        ]
        failed_here = any(
            f.storage_config_id == config.id and f.counts_as_failure for f in report.finished
        )
        crawl_status = crawl.status.value if crawl is not None else "missing"
        # The counts the crawl saved as it went, if one of its attempts ran here: after a
        # Ctrl-C they say what this run did (an earlier run's are not this run's).
        ran_here = any(f.id == crawl_id for f in report.finished)
        progress = crawl.progress if crawl is not None and ran_here else None
        crawl_error = crawl.error if crawl is not None else "the crawl item was deleted"
        if report.interrupted:
            status, code = INTERRUPTED, EXIT_INTERRUPTED
        elif crawl_status == Status.SUCCEEDED.value and not failed_here:
            status, code = SUCCEEDED, EXIT_OK
        else:
            status, code = FAILED, EXIT_WORK_FAILED
            if crawl_status in (Status.QUEUED.value, Status.RUNNING.value):
                crawl_error = f"the crawl is still {crawl_status} (another Worker may have it)"
        summary = build_summary(
            status=status,
            exit_code=code,
            database=settings.database_display,
            config={
                "id": config.id,
                "owner": config.owner,
                "root": config.root_path,
                "created": added.created,
                "reactivated": added.reactivated,
            },
            crawl={
                "item_id": crawl_id,
                "status": crawl_status,
                "error": crawl_error,
                "result": crawl.result if crawl is not None else None,
                "progress": saved_counts(progress),
            },
            library=await library_counts(database.pool, config.id),
            stored_errors=await asset_errors(database.pool, config.id),
            proxy_folder=settings.proxies / str(config.id),
            seconds=seconds,
            items=items,
            # The first signal releases running items; a second stops without waiting.
            stopped_at_once=report.interrupted and report.exit_code == EXIT_INTERRUPTED,
            other_work=other_work(report.finished, config.id, folders),
        )
        if extra is not None and not report.interrupted:
            summary.update(await extra(database, settings, config.id))
        return summary

    summary = state.with_database(body, concurrency=workers, long_running=True)
    if as_json:
        print_json(summary)
    else:
        render_summary(console(), summary)
    return summary


@click.command("run")
@click.argument("path", type=click.Path(path_type=str))
@user_option("Owner of the folder (and the user whose work the Workers run).")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=DEFAULT_WORKERS,
    show_default=True,
    help="Workers to run in this process.",
)
@click.option(
    "--retry-failed",
    is_flag=True,
    help="Read again every file that failed before, changed or not (otherwise one is read "
    "again once it changes, or after a backoff of days).",
)
@json_option("Print the summary as one JSON object on stdout (logs stay on stderr).")
@pass_state
def run(
    state: CliState,
    path: str,
    user: str | None,
    workers: int,
    retry_failed: bool,
    as_json: bool,
) -> None:
    """Crawl the folder PATH: index every photo and video, make proxies, find bursts and
    Live Photos, and print a summary.

    The folder is registered as a storage config once; a second run reuses it and only
    does what changed. A file that failed is read again once it changes, after a backoff
    (a day, doubling up to 30), or with --retry-failed. Ctrl-C stops cleanly, and the
    next run continues from there. Exits 1 if the crawl failed.
    """
    summary = run_folder(
        state,
        path,
        owner=user or os_user(),
        workers=workers,
        as_json=as_json,
        retry_failed=retry_failed,
    )
    raise click.exceptions.Exit(int(summary["exit_code"]))


def ensure_demo_library(home: Path) -> tuple[Path, Any]:
    """``<home>/demo-library``, generated on first use; returns it and the generator's
    manifest (None when an earlier run made it). Generated beside it and renamed into
    place, so an interrupted generation never leaves half a library to reuse."""
    root = home / DEMO_FOLDER
    if root.is_dir() and any(root.iterdir()):
        return root, None
    from safelight.testing.samplegen import generate_library

    home.mkdir(mode=0o700, parents=True, exist_ok=True)  # demo made it private first
    scratch = Path(tempfile.mkdtemp(prefix=f".{DEMO_FOLDER}-", dir=home))
    try:
        manifest = generate_library(scratch, seed=DEMO_SEED)
        try:
            os.rename(scratch, root)
        except OSError:
            if not (root.is_dir() and any(root.iterdir())):
                raise
            # Another demo made it meanwhile: theirs is as good as ours.
            shutil.rmtree(scratch, ignore_errors=True)
            return root, None
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return root, manifest


@click.command("demo")
@json_option("Print the summary as one JSON object on stdout (logs stay on stderr).")
@pass_state
def demo(state: CliState, as_json: bool) -> None:
    """Make a small demo library (once) and run on it: generated photos from several
    cameras, a burst, a Live Photo pair, a video and a broken file, to see the whole
    job, and how failures are reported, before pointing safelight at your own photos.
    Ends with the `safelight serve` command that shows it in a browser: the one link it
    prints signs you in on the demo's busiest day."""
    settings = state.settings()
    make_folder("home", settings.home, settings.file_modes())  # private from the start
    root, manifest = ensure_demo_library(settings.home)
    if not as_json:
        if manifest is None:
            click.echo(printable(f"Using the demo library in {root}"))
        else:
            videos = (
                plural(len(manifest.videos), "video")
                if manifest.video_skipped_reason is None
                else f"no videos ({manifest.video_skipped_reason})"
            )
            click.echo(
                printable(
                    f"Made a demo library in {root}: {plural(len(manifest.photos), 'photo')}, "
                    f"{videos}, {plural(len(manifest.bursts), 'burst')}, "
                    f"{plural(len(manifest.live_pairs), 'Live Photo pair')}, and "
                    f"{plural(len(manifest.errors), 'broken file')} to show how failures "
                    "are reported."
                )
            )

    async def serve_hint(database: Database, settings: Settings, config_id: UUID) -> dict[str, Any]:
        # The dashboard opens on the day most of the demo's photos were taken, of this
        # year: its "On this day" shows them, however many years ago.
        year = state.clock.now().astimezone().year
        busiest = await busiest_day(database.pool, config_id, year)
        day = None if busiest is None else day_showing(*busiest, year)
        return {
            "serve": {
                "command": serve_argv(settings, state.overrides, day=day),
                "url": dashboard_url(settings, day),
            }
        }

    summary = run_folder(
        state, root, owner=os_user(), workers=DEFAULT_WORKERS, as_json=as_json, extra=serve_hint
    )
    if not as_json and "serve" in summary:
        for line in hint(summary["serve"]["command"], summary["serve"]["url"]):
            click.echo(printable(line))
    raise click.exceptions.Exit(int(summary["exit_code"]))

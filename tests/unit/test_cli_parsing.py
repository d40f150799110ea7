"""The CLI without a database: parsing, settings from flags, one-line errors and their
exit codes, JSON output, progress lines and the run summary."""

from __future__ import annotations

import getpass
import io
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import click
import pytest
from click.testing import CliRunner, Result
from rich.console import Console

from safelight.cli import admin, main
from safelight.cli.failures import (
    EXIT_DATABASE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    Failure,
    translate,
)
from safelight.cli.main import cli
from safelight.cli.output import short_id, to_json
from safelight.cli.progress import LiveProgress, NoProgress, PlainProgress, choose_view
from safelight.cli.queue import parse_payload
from safelight.cli.run import ensure_demo_library
from safelight.cli.state import CliState
from safelight.cli.summary import render_summary
from safelight.db.database import DatabaseUnavailable
from safelight.library.catalogue.configs import ConfigError
from safelight.logs import CHATTY_LIBRARIES, masker
from safelight.settings import Settings, SettingsError
from safelight.testing.fakeclock import FakeClock
from safelight.testing.summaries import rendered, summary_document
from safelight.work.errors import InvalidWorkItem

UNREACHABLE = "postgresql://u:pw-unit@127.0.0.1:1/x"


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Commands set up logging on the root logger; leave it as the next test expects."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    chatty = {name: logging.getLogger(name).level for name in CHATTY_LIBRARIES}
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)
    for name, chatty_level in chatty.items():
        logging.getLogger(name).setLevel(chatty_level)


@pytest.fixture
def env() -> dict[str, str | None]:
    """No setting from the developer's shell; a database nothing can reach."""
    cleared: dict[str, str | None] = {k: None for k in os.environ if k.startswith("SAFELIGHT_")}
    return {**cleared, "SAFELIGHT_DATABASE_URL": UNREACHABLE}


def run(args: list[str], env: dict[str, str | None]) -> Result:
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=False)


# --- help and usage errors ----------------------------------------------------------


def all_command_paths() -> Iterator[list[str]]:
    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        yield [name]
        if isinstance(command, click.Group):
            for sub in command.commands:
                yield [name, sub]


@pytest.mark.parametrize("path", list(all_command_paths()), ids=" ".join)
def test_every_command_has_help_even_with_a_broken_setting(
    path: list[str], env: dict[str, str | None]
) -> None:
    result = run([*path, "--help"], {**env, "SAFELIGHT_LEASE_SECONDS": "abc"})
    assert result.exit_code == 0, result.output
    assert f"Usage: safelight {' '.join(path)}" in result.stdout


def test_the_group_help_lists_commands_and_exit_codes(env: dict[str, str | None]) -> None:
    text = " ".join(run(["--help"], env).stdout.split())
    for command in ("run", "demo", "worker", "status", "items", "config", "enqueue", "purge"):
        assert f" {command} " in text
    assert "Exit codes: 0 ok; 1 work failed" in text and "130 interrupted" in text
    # The settings' defaults, as Settings has them.
    assert "without a heartbeat [env SAFELIGHT_LEASE_SECONDS; 60]." in text
    assert "at most a quarter lease [env SAFELIGHT_HEARTBEAT_SECONDS; 10]." in text
    assert "fails as stalled [env SAFELIGHT_MAX_STALLS; 3]." in text


def test_an_options_help_shows_the_settings_variable_and_default() -> None:
    assert main._env_and_default("poll_seconds") == "[env SAFELIGHT_POLL_SECONDS; 5]"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus", "status"], "No such option '--bogus' (see 'safelight --help')"),
        (["--log-format", "xml", "status"], "Invalid value for '--log-format'"),
        (["--lease-seconds", "abc", "status"], "'abc' is not a valid float"),
        (["--max-stalls", "1.5", "status"], "'1.5' is not a valid integer"),
        (["run"], "Missing argument 'PATH' (see 'safelight run --help')"),
        (["run", ".", "--workers", "0"], "Invalid value for '--workers'"),
        (["worker", "--concurrency", "0"], "Invalid value for '--concurrency'"),
        (["config"], None),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    args: list[str], message: str | None, env: dict[str, str | None]
) -> None:
    result = run(args, env)
    if message is None:  # a group without a subcommand shows its help
        assert result.exit_code in (0, 2) and "Usage:" in result.output
        return
    assert result.exit_code == EXIT_USAGE, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("safelight: error: ") and message in line


@pytest.mark.parametrize(
    ("env_name", "value", "named"),
    [
        ("SAFELIGHT_LEASE_SECONDS", "abc", "lease_seconds (SAFELIGHT_LEASE_SECONDS)"),
        ("SAFELIGHT_MAX_CONCURRENT_FILES", "0", "max_concurrent_files"),
        ("SAFELIGHT_LOG_FORMAT", "yaml", "log_format"),
    ],
)
def test_invalid_settings_stop_before_the_database_is_touched(
    env: dict[str, str | None], env_name: str, value: str, named: str
) -> None:
    result = run(["status"], {**env, env_name: value})
    assert result.exit_code == EXIT_USAGE
    (line,) = result.stderr.splitlines()
    assert named in line and "database" not in line


def test_flags_become_the_settings(
    env: dict[str, str | None], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[Settings] = []

    def fake_with_database(self: CliState, body: Any, **_: Any) -> list[Any]:
        seen.append(self.settings())
        return []

    monkeypatch.setattr(CliState, "with_database", fake_with_database)
    result = run(
        [
            "--home",
            str(tmp_path),
            "--proxy-root",
            str(tmp_path / "px"),
            "--lease-seconds",
            "120",
            "--heartbeat-seconds",
            "20",
            "--poll-seconds",
            "1.5",
            "--max-stalls",
            "7",
            "--max-concurrent-files",
            "2",
            "--decode-processes",
            "0",
            "--log-format",
            "json",
            "--database-url",
            "postgresql://flag@h/db",
            "config",
            "list",
            "--json",
        ],
        {**env, "SAFELIGHT_LEASE_SECONDS": "300", "SAFELIGHT_POLL_SECONDS": "9"},
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []
    (settings,) = seen
    assert (settings.lease_seconds, settings.heartbeat_seconds, settings.poll_seconds) == (
        120.0,
        20.0,
        1.5,
    )
    assert (settings.max_stalls, settings.max_concurrent_files) == (7, 2)
    assert settings.decode_processes == 0
    assert settings.home == tmp_path and settings.proxies == (tmp_path / "px").resolve()
    assert settings.log_format == "json"
    assert settings.database_url == "postgresql://flag@h/db"


# --- errors become one line ---------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (SettingsError("lease_seconds must be greater than 0"), EXIT_USAGE),
        (ConfigError("/x does not exist"), EXIT_USAGE),
        (InvalidWorkItem("unknown kind 'x'"), EXIT_USAGE),
        (DatabaseUnavailable("cannot reach the database at postgresql://u:***@h/x"), EXIT_DATABASE),
        (KeyboardInterrupt(), EXIT_INTERRUPTED),
        (click.UsageError("No such option: --x"), EXIT_USAGE),
        (Failure("no such item", 2), EXIT_USAGE),
    ],
)
def test_user_errors_map_to_their_exit_code(error: BaseException, code: int) -> None:
    failure = translate(error)
    assert failure.exit_code == code
    assert "\n" not in failure.format_message()


def test_a_bug_is_exit_70_with_a_hint_and_no_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    failure = translate(ZeroDivisionError("division by zero"))
    assert failure.exit_code == EXIT_INTERNAL
    failure.show()
    err = capsys.readouterr().err
    assert err == (
        "safelight: error: internal error (ZeroDivisionError: division by zero); "
        "run with --log-level debug for the traceback\n"
    )


def test_a_failure_never_prints_a_password(capsys: pytest.CaptureFixture[str]) -> None:
    masker.add("s3cr3t-pw")
    Failure("could not connect to postgresql://u:s3cr3t-pw@h/x (password=s3cr3t-pw)").show()
    err = capsys.readouterr().err
    assert "s3cr3t-pw" not in err and "u:***@h/x" in err


# --- payloads and JSON ----------------------------------------------------------------


def test_parse_payload() -> None:
    assert parse_payload(None) is None
    assert parse_payload('{"seconds": 2}') == {"seconds": 2}
    with pytest.raises(Failure, match="not valid JSON"):
        parse_payload("{seconds: 2}")
    with pytest.raises(Failure, match="must be a JSON object, not list"):
        parse_payload("[1]")


def test_json_output_writes_ids_times_and_paths_as_strings() -> None:
    document = {
        "id": UUID(int=1),
        "at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "path": Path("/photos"),
        "url": "postgresql://u:pw-in-json@h/db",
    }
    assert json.loads(to_json(document)) == {
        "id": "00000000-0000-0000-0000-000000000001",
        "at": "2026-01-02T03:04:05+00:00",
        "path": "/photos",
        "url": "postgresql://u:***@h/db",
    }
    with pytest.raises(TypeError):
        to_json({"x": object()})
    assert short_id(UUID(int=1)) == "00000000" and short_id(None) == ""


# --- progress -------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    id: int
    kind: str
    storage_config_id: UUID | None = None


@dataclass(frozen=True)
class Done:
    id: int
    kind: str
    outcome: str
    error: str | None
    storage_config_id: UUID | None = None


def test_plain_progress_prints_a_line_a_second_with_rate_and_time_left() -> None:
    clock = FakeClock()
    out = io.StringIO()
    view = PlainProgress(out, clock, lambda item: f"{item.kind} photos")
    crawl = Item(1, "crawl")
    with view:
        view.on_progress(crawl, {"total": 0, "found": 0})
        for found in range(1, 11):
            clock.jump(0.25)
            view.on_progress(crawl, {"total": 100, "found": found, "hashed": found, "errors": 1})
        view.on_finished(Done(1, "crawl", "succeeded", None))
        view.on_finished(Done(2, "burst_detection", "failed", "boom\nmore"))
    lines = out.getvalue().splitlines()
    # One at the start, one a second later (4 reports of 0.25 s), one more after two.
    assert len(lines) == 5
    assert (
        lines[0]
        == "crawl photos · looking for files · 0 hashed · 0 new · 0 moved · 0 proxies · 0 errors"
    )
    assert lines[1].startswith("crawl photos · 4/100 files (4%) · 4 hashed")
    # Four files in a second say too little of the rate: no estimate yet (TimeLeft).
    assert "4.0 files/s" in lines[1] and "left" not in lines[1]
    assert lines[3] == "crawl photos: succeeded"
    assert lines[4] == "burst_detection photos: failed (boom)"


def test_work_a_crawl_queues_shows_its_own_counters_not_files() -> None:
    """The faces and the place fill, which a crawl queues, count photos, not files."""
    out = io.StringIO()
    view = PlainProgress(out, FakeClock(), lambda item: f"{item.kind} #{item.id}")
    with view:
        view.on_progress(Item(5, "faces"), {"photos": 20, "faces": 3, "people": 1})
    assert out.getvalue().splitlines() == ["faces #5 · photos 20 · faces 3 · people 1"]

    console = Console(file=io.StringIO(), width=200, force_terminal=True)
    live = LiveProgress(console, FakeClock(), lambda item: f"{item.kind} #{item.id}")
    with live:
        live.on_progress(Item(6, "place_fill"), {"checked": 500, "placed": 12, "retimed": 2})
        (task,) = live._progress.tasks
        assert task.total is None
        assert task.fields["detail"] == "checked 500 · placed 12 · retimed 2"


def test_the_view_depends_on_the_terminal_and_json() -> None:
    clock = FakeClock()
    plain = io.StringIO()
    assert isinstance(
        choose_view(as_json=True, stdout=plain, stderr=plain, clock=clock, label=str), NoProgress
    )
    assert isinstance(
        choose_view(as_json=False, stdout=plain, stderr=plain, clock=clock, label=str),
        PlainProgress,
    )


# --- the run summary ------------------------------------------------------------------


def summary(run_status: str = "succeeded", **crawl: Any) -> dict[str, Any]:
    result = {
        "total": 5,
        "ingested": 3,
        "unchanged": 1,
        "moved": 0,
        "duplicates": [],
        "deleted": 1,
        "proxies": 9,
        "errors": [{"path": "bad.jpg", "reason": "corrupt"}],
    }
    return summary_document(
        status=run_status,
        database="postgresql://u:***@h/db",
        crawl={"result": result, **crawl},
        library={
            "images": 3,
            "videos": 1,
            "soft_deleted": 1,
            "bursts": 1,
            "burst_assets": 3,
            "photos_dated_by_file": 2,
            "stacks": 2,
            "proxy_files": 6,
        },
        stored_errors=[{"file_path": "old.jpg", "reason": "stored"}],
        proxy_folder=Path("/proxies/7"),
        seconds=2.0,
        items=[{"id": 2, "kind": "burst_detection", "outcome": "failed", "error": "no"}],
    )


def test_the_summary_counts_this_run_and_the_library() -> None:
    document = summary()
    assert document["files"] == 5 and document["files_per_second"] == 2.5
    assert document["assets"] == {"image": 3, "video": 1, "total": 4}
    assert (document["new"], document["deleted"], document["soft_deleted_total"]) == (3, 1, 1)
    assert document["proxies"] == {
        "made": 9,
        "renamed": 0,
        "files": 6,
        "folder": Path("/proxies/7"),
    }
    assert document["proxy_errors"] == []
    assert "renamed" not in rendered(document)
    # Every failed file as the catalogue holds it once the crawl ended (ADR 0057).
    assert document["errors"] == [{"path": "old.jpg", "reason": "stored"}]
    text = rendered(document)
    assert "Done in 2.0 s (5 files, 2.5 files/s)" in text
    assert "3 photos, 1 video" in text and "3 new, 0 moved, 0 duplicates" in text
    assert document["reread"] == 0 and "read again" not in text
    assert (
        "1 burst (3 photos); 0 Live Photos; 0 motion photos; 2 RAWs stacked on their JPEG" in text
    )
    assert document["stacks"] == 2
    assert document["photos_dated_by_file"] == 2
    assert "2 photos dated by their file's time" in text
    assert "old.jpg stored" in text and "1 file could not be ingested" in text
    assert "burst_detection #2: no" in text
    assert "safelight purge 00000000" in text


def test_the_summary_names_the_similar_groups_and_the_people_only_when_there_are_some() -> None:
    document = summary_document(
        library={"similar_groups": 2, "similar_assets": 5, "people": 3, "people_named": 1}
    )
    assert (document["similar_groups"], document["similar_assets"]) == (2, 5)
    assert (document["people"], document["people_named"]) == (3, 1)
    text = rendered(document)
    assert "similar 2 groups of similar shots (5 photos), each shown as one tile" in text
    assert "people 3 people found in the photos (1 named)" in text
    one = rendered(
        summary_document(
            library={"similar_groups": 1, "similar_assets": 2, "people": 1, "people_named": 0}
        )
    )
    assert "1 group of similar shots (2 photos)" in one and "1 person found" in one
    # A folder with neither (faces off, no near-identical shots): no line for them,
    # while the document still has the keys, at 0.
    none = summary_document()
    assert (none["similar_groups"], none["similar_assets"]) == (0, 0)
    assert (none["people"], none["people_named"]) == (0, 0)
    assert "similar shots" not in rendered(none) and "found in the photos" not in rendered(none)


def test_the_summary_counts_photos_read_again_for_their_sidecar() -> None:
    document = summary(result={"total": 2, "unchanged": 1, "moved": 0, "reread": 1})
    assert document["reread"] == 1
    assert "0 moved, 1 read again (sidecar changed), 0 duplicates, 1 unchanged" in rendered(
        document
    )


def test_the_summary_names_renamed_proxies_and_those_that_could_not_be() -> None:
    document = summary(
        result={
            "total": 1,
            "proxies_renamed": 3,
            "proxy_errors": [{"path": "c/ab/abcd/thumbnail.jpg", "reason": "not renamed: gone"}],
        }
    )
    assert document["proxies"]["renamed"] == 3
    text = rendered(document)
    assert "3 renamed from an older version's names" in text
    assert "1 proxy file under the proxy folder could not be renamed" in text
    assert "c/ab/abcd/thumbnail.jpg not renamed: gone" in text


def test_the_summary_names_each_duplicate_and_the_file_it_copies() -> None:
    document = summary(
        result={
            "total": 3,
            "duplicates": [
                {"path": "b/copy.jpg", "same_as": "a/photo.jpg"},
                {"path": "...", "same_as": "and 4 more"},
            ],
        }
    )
    assert document["duplicates"] == 2
    assert document["duplicate_files"] == [
        {"path": "b/copy.jpg", "same_as": "a/photo.jpg"},
        {"path": "...", "same_as": "and 4 more"},
    ]
    text = rendered(document)
    assert "2 duplicates" in text
    assert "b/copy.jpg same as a/photo.jpg" in text
    assert "... and 4 more" in text
    # No duplicate, no listing.
    assert summary()["duplicate_files"] == []
    assert "same bytes as an asset" not in rendered(summary())


def test_the_summary_counts_motion_photos_and_lists_the_stills_that_only_claim_one() -> None:
    document = summary(
        result={
            "total": 2,
            "motion_photo_issues": [{"path": "a.jpg", "reason": "no MP4 where the XMP puts it"}],
        }
    )
    document_library = {**document, "motion_photos": 2}
    assert document["motion_photos"] == 0
    assert document["motion_photo_issues"] == [
        {"path": "a.jpg", "reason": "no MP4 where the XMP puts it"}
    ]
    text = rendered(document_library)
    assert "0 Live Photos; 2 motion photos" in text
    assert "1 photo shown as a still, its motion video missing or unplayable" in text
    assert "a.jpg no MP4 where the XMP puts it" in text
    assert "motion video missing" not in rendered(summary())


def test_every_failed_file_is_listed_however_many_and_the_unread_and_other_files_said() -> None:
    stored = [{"file_path": f"bad/{i:05}.jpg", "reason": "corrupt"} for i in range(1500)]
    result = {
        "total": 1500,
        # The result lists the first thousand and an "and N more" entry; the summary
        # lists every one, from the catalogue, and no entry that is not a file.
        "errors": [{"path": f"bad/{i:05}.jpg", "reason": "corrupt"} for i in range(1000)]
        + [{"path": "...", "reason": "and 300 more"}],
        "not_retried": [
            {"path": f"bad/{i:05}.jpg", "reason": "corrupt"} for i in range(1000, 1200)
        ],
        "other_files": 13,
    }
    document = summary_document(result=result, stored_errors=stored)
    assert [e["path"] for e in document["errors"]] == [e["file_path"] for e in stored]
    assert (document["not_retried"], document["other_files"]) == (200, 13)
    text = rendered(document)
    assert "1500 files could not be ingested:" in text and "bad/01499.jpg" in text
    assert "and 300 more" not in text
    assert "200 failed files unchanged since they failed; not read again: run --retry-failed" in (
        text
    )
    assert "13 other files left alone" in text
    quiet = rendered(summary())
    assert "not read again" not in quiet and "other files" not in quiet


def test_a_crawl_that_did_not_finish_lists_the_stored_errors() -> None:
    document = summary("failed", status="failed", error="root missing", result=None)
    assert document["errors"] == [{"path": "old.jpg", "reason": "stored"}]
    assert document["files"] == 0 and document["new"] == 0
    assert "The crawl did not succeed: root missing" in rendered(document)
    assert "Interrupted after 2.0 s" in rendered(summary("interrupted"))


# --- odds and ends ------------------------------------------------------------------


def test_the_owner_falls_back_when_the_os_has_no_user_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_user() -> str:
        raise KeyError("uid not found")

    monkeypatch.setattr(getpass, "getuser", no_user)
    assert admin.os_user() == "owner"


def test_an_existing_demo_library_is_reused_untouched(tmp_path: Path) -> None:
    library = tmp_path / "demo-library"
    library.mkdir()
    (library / "mine.jpg").write_bytes(b"x")
    assert ensure_demo_library(tmp_path) == (library, None)
    assert [p.name for p in library.iterdir()] == ["mine.jpg"]


def test_a_second_signal_is_told_apart_from_a_clean_interruption() -> None:
    document = summary("interrupted")
    assert document["stopped_at_once"] is False
    document["stopped_at_once"] = True
    assert "Stopped at once" in rendered(document)


def test_a_multi_line_error_is_cut_to_its_first_line(capsys: pytest.CaptureFixture[str]) -> None:
    translate(DatabaseUnavailable("could not start (initdb failed:\nstdout:\n...)")).show()
    assert capsys.readouterr().err == "safelight: error: could not start (initdb failed: …\n"


def test_the_live_display_drops_a_finished_item_before_printing_its_outcome() -> None:
    out = io.StringIO()
    view = LiveProgress(
        Console(file=out, force_terminal=True, width=100), FakeClock(), lambda i: f"{i.kind} x"
    )
    with view:
        view.on_progress(Item(1, "crawl"), {"total": 10, "found": 5, "hashed": 5, "errors": 1})
        view.on_finished(Done(1, "crawl", "succeeded", None))
    after = out.getvalue().split("crawl x: succeeded", 1)[1]
    assert "crawl x" not in after  # no stale frame of the finished crawl under its line


# --- text from files, libraries and the database is safe for a terminal ---------------

# Clears the screen, returns over the line, an 8-bit CSI, a right-to-left override, a
# forged line, rich markup with an unbalanced tag, and letters that must stay letters.
HOSTILE = "é日本\x1b[2J\rX\x9b31m\u202egpj.exe\nFORGED [bold]x[/] [/]"
HOSTILE_SHOWN = "é日本\\x1b[2J\\rX\\x9b31m\\u202egpj.exe\\nFORGED [bold]x[/] [/]"
RAW = ("\x1b", "\r", "\x9b", "\u202e")


def test_the_summary_escapes_names_errors_and_paths_and_reads_no_markup() -> None:
    document = summary("failed", status="failed", error=f"cannot read {HOSTILE}")
    document["config"]["root"] = Path(f"/photos/{HOSTILE}")
    document["errors"] = [{"path": HOSTILE, "reason": f"corrupt: {HOSTILE}"}]
    document["items"] = [{"id": 2, "kind": "crawl", "outcome": "failed", "error": HOSTILE}]
    document["proxies"]["folder"] = Path(f"/proxies/{HOSTILE}")
    out = io.StringIO()
    render_summary(Console(file=out, width=400), document)
    text = out.getvalue()
    assert not any(c in text for c in RAW)
    assert f"The crawl did not succeed: cannot read {HOSTILE_SHOWN}" in text
    assert f"/photos/{HOSTILE_SHOWN} (config" in text
    assert f"{HOSTILE_SHOWN}  corrupt: {HOSTILE_SHOWN}" in text
    assert f"crawl #2: {HOSTILE_SHOWN}" in text
    assert f"files in /proxies/{HOSTILE_SHOWN}" in text
    assert not any(line.startswith("FORGED") for line in text.splitlines())


def test_progress_lines_escape_labels_and_errors() -> None:
    out = io.StringIO()
    view = PlainProgress(out, FakeClock(), lambda item: f"crawl {HOSTILE}")
    view.on_progress(Item(1, "crawl"), {"total": 2, "found": 1})
    first, rest = HOSTILE.split("\n")
    view.on_finished(Done(1, "crawl", "failed", f"{first}\r\x85{rest}\nsecond line"))
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and not any(c in out.getvalue() for c in RAW)
    assert lines[0].startswith(f"crawl {HOSTILE_SHOWN} · 1/2 files")
    # The error's first line, cut at its line feed only: \r and NEL are shown.
    shown_first, shown_rest = HOSTILE_SHOWN.split("\\n")
    assert lines[1] == f"crawl {HOSTILE_SHOWN}: failed ({shown_first}\\r\\x85{shown_rest})"


def test_the_live_display_shows_a_folder_name_with_brackets_literally() -> None:
    out = io.StringIO()
    view = LiveProgress(
        Console(file=out, force_terminal=True, width=200), FakeClock(), lambda i: "crawl [/] [red]x"
    )
    with view:  # an unbalanced [/] read as markup would raise here
        view.on_progress(Item(1, "crawl"), {"total": 10, "found": 5})
        view.on_finished(Done(1, "crawl", "failed", "\x1b]0;title\x07 [/]"))
    text = out.getvalue()
    assert "crawl [/] [red]x: failed (\\x1b]0;title\\x07 [/])" in text
    assert "\x1b]0;" not in text  # no OSC sequence (a window title) reached the terminal


def test_an_error_line_escapes_what_it_quotes(capsys: pytest.CaptureFixture[str]) -> None:
    translate(ConfigError(f"/photos/{HOSTILE} does not exist")).show()
    # One line: the name's line feed ends it (marked), every other control is shown.
    shown_first = HOSTILE_SHOWN.split("\\n")[0]
    assert capsys.readouterr().err == f"safelight: error: /photos/{shown_first} …\n"


def test_a_ctrl_c_says_interrupted_not_error(capsys: pytest.CaptureFixture[str]) -> None:
    """The user asked for it: ``safelight: interrupted``, exit 130, not an error line."""
    failure = translate(KeyboardInterrupt())
    failure.show()
    assert capsys.readouterr().err == "safelight: interrupted\n"
    assert failure.exit_code == EXIT_INTERRUPTED

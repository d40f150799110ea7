"""Failed files from the CLI (#31 item 1, ADR 0058): ``assets --failed`` lists a broken
file under its reason, ``config retry-failed --path`` asks for it again, and once the
file is replaced by a good one and crawled the list is empty; ``status`` says when items
wait with no Worker to run them."""

from __future__ import annotations

from pathlib import Path

import pytest

from safelight.testing.handlers import jpeg, write
from safelight.testing.invoking import Invoke
from tests.acceptance.harness import json_of

pytestmark = pytest.mark.acceptance

BROKEN = b"\xff\xd8\xff this is no JPEG at all, only its first three bytes"


def test_a_failed_file_is_listed_retried_and_gone_once_fixed(
    invoke: Invoke, tmp_path: Path
) -> None:
    root = tmp_path / "photos"
    write(root, "good.jpg", jpeg(1))
    write(root, "trip/broken.jpg", BROKEN)
    write(root, "trip/broken-too.jpg", BROKEN + b" and more")
    config = json_of(invoke("run", str(root), "--json"))["config"]["id"]

    groups = json_of(invoke("assets", "--failed", "--config", config[:8], "--json"))
    assert len(groups) == 1, groups
    [group] = groups
    assert (group["config_id"], group["files"]) == (config, 2)
    assert sorted(f["path"] for f in group["rows"]) == ["trip/broken-too.jpg", "trip/broken.jpg"]
    assert all(f["failures"] == 1 for f in group["rows"])
    assert not any(f["due"] for f in group["rows"])
    text = " ".join(invoke("assets", "--failed").output.split())
    assert f"{config[:8]} {root}: {group['reason']} (2 files)" in text
    assert "trip/broken.jpg" in text and "config retry-failed ID" in text
    assert "when it changes, or after " in text

    # The good file replaces the broken one; asked for by its path, it alone is due.
    write(root, "trip/broken.jpg", jpeg(2))
    asked = invoke("config", "retry-failed", config[:8], "--path", "trip/broken.jpg")
    assert asked.exit_code == 0, asked.output
    assert f"1 failed file of {config}" in asked.output
    after = json_of(invoke("assets", "--failed", "--json"))
    due = {f["path"]: f["due"] for g in after for f in g["rows"]}
    assert due == {"trip/broken.jpg": True, "trip/broken-too.jpg": False}
    assert "at the next crawl" in invoke("assets", "--failed").output

    # The crawl (the one queued, run by this command's Workers) ingests it.
    crawled = json_of(invoke("run", str(root), "--json"))
    assert [e["path"] for e in crawled["errors"]] == ["trip/broken-too.jpg"]
    left = json_of(invoke("assets", "--failed", "--json"))
    assert [f["path"] for g in left for f in g["rows"]] == ["trip/broken-too.jpg"]

    # The other one, fixed too and asked for by its reason: the list is empty.
    write(root, "trip/broken-too.jpg", jpeg(3))
    by_reason = invoke("config", "retry-failed", config, "--reason", group["reason"])
    assert by_reason.exit_code == 0, by_reason.output
    json_of(invoke("run", str(root), "--json"))
    assert json_of(invoke("assets", "--failed", "--json")) == []
    assert invoke("assets", "--failed").output.strip() == "no failed files"
    listed = json_of(invoke("assets", "--json"))
    assert sorted(a["file_path"] for a in listed) == [
        "good.jpg",
        "trip/broken-too.jpg",
        "trip/broken.jpg",
    ]


def test_retry_failed_refuses_what_matches_no_failed_file(invoke: Invoke, tmp_path: Path) -> None:
    root = tmp_path / "photos"
    write(root, "broken.jpg", BROKEN)
    config = json_of(invoke("run", str(root), "--json"))["config"]["id"]

    missing = invoke("config", "retry-failed", config, "--path", "nowhere.jpg")
    assert missing.exit_code == 2 and "has no failed file of path 'nowhere.jpg'" in missing.output
    both = invoke("config", "retry-failed", config, "--path", "broken.jpg", "--reason", "x")
    assert both.exit_code == 2 and "do not go together" in both.output
    flags = invoke("assets", "--failed", "--deleted")
    assert flags.exit_code == 2


def test_status_says_items_wait_with_no_worker(invoke: Invoke, tmp_path: Path) -> None:
    root = tmp_path / "photos"
    write(root, "good.jpg", jpeg(1))
    config = json_of(invoke("run", str(root), "--json"))["config"]["id"]
    assert json_of(invoke("status", "--json"))["no_worker"] is None

    assert invoke("config", "retry-failed", config).exit_code == 0

    document = json_of(invoke("status", "--json"))
    expected = "1 item waits: no Worker is running. Start one with 'safelight worker'."
    assert document["no_worker"] == expected
    assert expected in " ".join(invoke("status").output.split())

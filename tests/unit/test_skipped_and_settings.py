"""What a crawl did not crawl, in the run summary; the setting that lets links in."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from rich.console import Console

from safelight.cli.summary import build_summary, render_summary
from safelight.settings import Settings, SettingsError


def summary_of(result: dict[str, Any] | None) -> dict[str, Any]:
    return build_summary(
        status="succeeded",
        exit_code=0,
        database="embedded",
        config={"id": UUID(int=7), "owner": "alice", "root": Path("/photos"), "created": True},
        crawl={"item_id": 1, "status": "succeeded", "error": None, "result": result},
        library={
            "images": 1,
            "videos": 0,
            "soft_deleted": 0,
            "bursts": 0,
            "burst_assets": 0,
            "live_photos": 0,
            "stacks": 0,
            "proxy_files": 2,
        },
        stored_errors=[],
        proxy_folder=Path("/proxies"),
        seconds=1.0,
        items=[],
    )


def test_the_summary_lists_what_was_not_crawled_and_why() -> None:
    skipped = [
        {"path": "link.jpg", "reason": "symbolic link: not followed"},
        {"path": "cache/proxies/", "reason": "safelight's own folder (proxy root): not crawled"},
    ]
    document = summary_of({"total": 1, "ingested": 1, "errors": [], "skipped": skipped})
    assert document["skipped"] == skipped
    out = io.StringIO()
    render_summary(Console(file=out, width=120), document)
    text = " ".join(out.getvalue().split())
    assert "2 entries not crawled:" in text
    assert "link.jpg symbolic link: not followed" in text
    assert "cache/proxies/ safelight's own folder (proxy root): not crawled" in text


def test_a_summary_without_skipped_entries_says_nothing_of_them() -> None:
    document = summary_of({"total": 1, "ingested": 1, "errors": []})  # an older result
    assert document["skipped"] == []
    out = io.StringIO()
    render_summary(Console(file=out, width=120), document)
    assert "not crawled" not in out.getvalue()
    assert summary_of(None)["skipped"] == []


@pytest.mark.parametrize(
    ("raw", "expected"), [("1", True), ("true", True), ("Yes", True), ("0", False), ("off", False)]
)
def test_follow_links_inside_root_from_the_environment(raw: str, expected: bool) -> None:
    assert Settings().follow_links_inside_root is False
    env = {"SAFELIGHT_FOLLOW_LINKS_INSIDE_ROOT": raw}
    assert Settings.load(env=env).follow_links_inside_root is expected
    assert Settings.load({"follow_links_inside_root": True}, env={}).follow_links_inside_root


def test_a_boolean_setting_that_is_neither_is_an_error() -> None:
    with pytest.raises(
        SettingsError,
        match=r"follow_links_inside_root \(SAFELIGHT_FOLLOW_LINKS_INSIDE_ROOT\) must be "
        "true or false",
    ):
        Settings.load(env={"SAFELIGHT_FOLLOW_LINKS_INSIDE_ROOT": "maybe"})

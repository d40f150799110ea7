"""What a crawl did not crawl, in the run summary; the setting that lets links in."""

from __future__ import annotations

from typing import Any

import pytest

from safelight.settings import Settings, SettingsError
from safelight.testing.summaries import rendered, summary_document


def summary_of(result: dict[str, Any] | None) -> dict[str, Any]:
    return summary_document(result=result, library={"images": 1, "proxy_files": 2})


def test_the_summary_lists_what_was_not_crawled_and_why() -> None:
    skipped = [
        {"path": "link.jpg", "reason": "symbolic link: not followed"},
        {"path": "cache/proxies/", "reason": "safelight's own folder (proxy root): not crawled"},
    ]
    document = summary_of({"total": 1, "ingested": 1, "errors": [], "skipped": skipped})
    assert document["skipped"] == skipped
    text = rendered(document)
    assert "2 entries not crawled:" in text
    assert "link.jpg symbolic link: not followed" in text
    assert "cache/proxies/ safelight's own folder (proxy root): not crawled" in text


def test_a_summary_without_skipped_entries_says_nothing_of_them() -> None:
    document = summary_of({"total": 1, "ingested": 1, "errors": []})  # an older result
    assert document["skipped"] == []
    assert "not crawled" not in rendered(document)
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

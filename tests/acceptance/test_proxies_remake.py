"""``safelight proxies remake`` (ADR 0059): a lost proxy made again, the remake queued
for a Worker or run here, every proxy remade at a new size, bad input refused."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from safelight.testing.invoking import Invoke
from tests.acceptance.harness import json_of


def previews(home: Path) -> list[Path]:
    return sorted(home.rglob("full_preview.*.jpg"))


def test_proxies_remake_restores_a_lost_proxy_and_remakes_all_at_a_new_size(
    invoke: Invoke, small_library: Path, home: Path
) -> None:
    crawled = invoke("run", str(small_library), "--user", "alice", "--json")
    assert crawled.exit_code == 0, crawled.output
    config_id = json_of(crawled)["config"]["id"]
    lost = previews(home)[0]
    kept = set(previews(home)) - {lost}
    lost.unlink()

    remade = invoke("proxies", "remake", config_id[:8], "--wait")

    assert remade.exit_code == 0, remade.output
    assert "(missing): assets checked 3 of 3, remade 1 (proxies made: 3)" in remade.stdout
    assert "proxies found missing: 1; failed: 0." in remade.stdout
    now = set(previews(home))
    assert len(now) == 3 and kept < now and lost not in now

    queued = json_of(invoke("proxies", "remake", "--all", config_id, "--json"))
    assert queued["mode"] == "all" and "status" not in queued
    again = json_of(invoke("proxies", "remake", "--all", config_id, "--json"))
    assert again["item_id"] == queued["item_id"]  # one remake of a mode waits at a time
    told = invoke("proxies", "remake", config_id)
    assert told.exit_code == 0 and "a Worker runs it ('safelight worker')" in told.stdout

    resized = invoke(
        "proxies", "remake", "--all", config_id, "--wait", "--json",
        env={"SAFELIGHT_THUMBNAIL_WIDTH": "50", "SAFELIGHT_PREVIEW_WIDTH": "100"},
    )  # fmt: skip

    assert resized.exit_code == 0, resized.output
    document = json_of(resized)
    assert document["status"] == "succeeded"
    assert (document["result"]["remade"], document["result"]["failed"]) == (3, 0)
    assert len(previews(home)) == 3 and not set(previews(home)) & now
    for preview in previews(home):
        with Image.open(preview) as image:
            assert image.width == 100


def test_proxies_remake_of_an_unknown_config_is_one_line_and_exit_2(invoke: Invoke) -> None:
    refused = invoke("proxies", "remake", "12345678")
    assert refused.exit_code == 2
    assert "no storage config whose id starts" in refused.stderr
    both = invoke("proxies", "remake", "--all", "--missing")
    assert both.exit_code == 2

"""``safelight pause`` and ``resume`` (ADR 0060): a paused kind is shown as such by
``items`` and ``status`` and no Worker runs it; a resume lets it run."""

from __future__ import annotations

import pytest

from safelight.testing.invoking import Invoke
from tests.acceptance.harness import json_of

pytestmark = pytest.mark.acceptance


def test_a_paused_kind_waits_shown_as_paused_until_resumed(invoke: Invoke) -> None:
    item_id = int(invoke("enqueue", "noop").stdout.strip().splitlines()[-1])
    paused = invoke("pause", "noop")
    assert paused.exit_code == 0, paused.output
    assert "paused noop: no Worker starts it until `safelight resume noop`" in paused.stdout
    assert "noop was paused already" in invoke("pause", "noop").stdout

    # A run until idle does not wait for paused work, and does not run it.
    worked = invoke("worker", "--until-idle")
    assert worked.exit_code == 0, worked.output
    assert json_of(invoke("items", "show", str(item_id), "--json"))["status"] == "queued"
    listed = invoke("items")
    assert "queued (paused by " in listed.stdout
    status = invoke("status")
    assert "paused (by " in status.stdout
    assert "heavy hours: always" in status.stdout
    document = json_of(invoke("status", "--json"))
    assert [(p["kind"], p["queued"]) for p in document["paused"]] == [("noop", 1)]

    resumed = invoke("resume", "noop")
    assert (resumed.exit_code, resumed.stdout.strip()) == (0, "resumed noop")
    assert invoke("worker", "--until-idle").exit_code == 0
    assert json_of(invoke("items", "show", str(item_id), "--json"))["status"] == "succeeded"


def test_pause_and_resume_say_what_is_wrong(invoke: Invoke) -> None:
    unknown = invoke("pause", "nothing")
    assert unknown.exit_code != 0
    assert "no kind named 'nothing'; the kinds are crawl" in unknown.output
    both = invoke("pause", "noop", "--config", "abc")
    assert both.exit_code != 0 and "name a KIND or --config ID: exactly one" in both.output
    none = invoke("resume")
    assert none.exit_code != 0 and "name a KIND, --config ID or --all: exactly one" in none.output
    assert invoke("resume", "--all").stdout.strip() == "resumed 0 kind(s) and 0 config(s)"

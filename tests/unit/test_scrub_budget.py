"""The scrub's budget (ADR 0062): its settings from the environment, a budget of nothing
refused, and what one item may read."""

from __future__ import annotations

from pathlib import Path

import pytest

from safelight.handlers.scrub import Tally, bytes_per_run
from safelight.settings import Settings, SettingsError


def test_the_budget_is_the_hourly_one_times_the_interval(tmp_path: Path) -> None:
    loaded = Settings.load(
        env={
            "SAFELIGHT_HOME": str(tmp_path),
            "SAFELIGHT_SCRUB_BYTES_PER_HOUR": "1000",
            "SAFELIGHT_SCRUB_INTERVAL_SECONDS": "1800",
        }
    )
    assert (loaded.scrub_bytes_per_hour, loaded.scrub_interval_seconds) == (1000, 1800.0)
    assert bytes_per_run(loaded) == 500
    assert bytes_per_run(Settings(home=tmp_path)) == 2 << 30


@pytest.mark.parametrize("name", ["SCRUB_BYTES_PER_HOUR", "SCRUB_INTERVAL_SECONDS"])
def test_a_budget_or_interval_of_nothing_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(SettingsError, match=name.lower()):
        Settings.load(env={"SAFELIGHT_HOME": str(tmp_path), f"SAFELIGHT_{name}": "0"})


def test_a_run_takes_files_while_they_fit_and_always_its_first() -> None:
    tally = Tally(budget=100)
    assert tally.allows(1000)  # the first, however large
    tally.bytes_read = 60
    assert tally.allows(40) and not tally.allows(41)

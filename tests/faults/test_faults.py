"""The fault-injection suite, short (issue #7): about two minutes of real Workers, real
work and a nemesis, with a fixed seed, then every check of ``tests/faults/checker.py``.

``bench/faults.py`` runs the same scenario for as long as you like, with any seed.
The suite starts its own PostgreSQL cluster, so it needs no database URL.
"""

from __future__ import annotations

import pytest

from tests.faults.scenario import Settings, run_scenario

pytestmark = pytest.mark.faults

SHORT = Settings(duration_seconds=90.0, seed=20261130)


async def test_no_fault_lets_two_attempts_of_one_config_touch_its_files_at_once() -> None:
    report = await run_scenario(SHORT)
    summary = report.summary()
    print(summary)  # shown with -s, and in the failure report
    assert report.drained, summary
    for fault in ("kill", "freeze", "cut"):
        assert report.faults[fault] >= 1, summary
    assert report.faults["pg_restart_fast"] + report.faults["pg_restart_immediate"] >= 1, summary
    assert report.effects > 100, summary
    found = [str(v) for v in report.violations]
    assert found == [], summary

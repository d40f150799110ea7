"""The fault run fails when the guarantee is broken (issue #13, item 4): the short
scenario, shortened, against three broken builds, must report violations, each of the
checks that the broken part is meant to keep true.

The Workers' build is broken from outside: a ``sitecustomize`` of
``tests/faults/builds`` first on their PYTHONPATH (the scenario's
``Settings.worker_pythonpath``), or SQL run in the suite's database before they start
(``Settings.database_sabotage``). Nothing under src/ knows of either.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from safelight.work.store import RUNNING_CONFIG_INDEX
from tests.faults.scenario import Settings, run_scenario
from tests.faults.test_faults import SHORT

pytestmark = pytest.mark.faults

BUILDS = Path(__file__).resolve().parent / "builds"

# Long enough for a few freezes and cuts of a busy Worker (the nemesis draws each kind
# about twice in every seven faults, a fault every 1-4 s plus its length).
BROKEN = replace(SHORT, duration_seconds=40.0)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        pytest.param(
            replace(BROKEN, worker_pythonpath=str(BUILDS / "no_self_stop")),
            {"stale_effects"},
            id="self-stop disabled",
        ),
        pytest.param(
            replace(BROKEN, worker_pythonpath=str(BUILDS / "no_fence")),
            {"stale_writes", "proxy_rows"},
            id="fence removed",
        ),
        pytest.param(
            replace(BROKEN, database_sabotage=f"DROP INDEX {RUNNING_CONFIG_INDEX}"),
            {"attempts", "side_effects", "stale_writes"},
            id="no unique index",
        ),
    ],
)
async def test_the_run_fails_against_a_broken_build(
    settings: Settings, expected: set[str], tmp_path: Path
) -> None:
    # In pytest's temporary folder: a run with violations keeps its own for a post-mortem.
    report = await run_scenario(settings, tmp_path)
    summary = report.summary()
    print(summary)
    checks = {v.check for v in report.violations}
    assert checks & expected, summary

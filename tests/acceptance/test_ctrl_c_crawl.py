"""Ctrl-C at any moment of a crawl's first 5 s ends ``safelight run`` with one line on
stderr and exit 130: never a traceback of a decode process started meanwhile (issue
#31, item 6; ADR 0063).

The signal goes to the whole process group, as a terminal's Ctrl-C does, so it reaches
the decode processes too, some of them still importing NumPy and Pillow. Each step
counts from the crawl's first progress line (the marker on stdout), not from the
process's start, so that the steps cover the crawl whatever the start-up took.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from safelight.cli.exits import INTERRUPTED_LINE
from safelight.testing.samplegen import generate_jpegs
from tests.acceptance.harness import start_safelight

pytestmark = pytest.mark.acceptance

PHOTOS = 150  # 2 MP each: a crawl of 20 s or more on two cores, well past the last step
STEPS = [round(0.5 * step, 1) for step in range(10)]  # 0, 0.5, ..., 4.5 s into the crawl
RELEASING = "SIGINT: finishing up"  # the Workers' one line (safelight.app)


@pytest.fixture(scope="module")
def big_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("big-library")
    generate_jpegs(root, PHOTOS, 2.0, seed=31)
    return root


@pytest.mark.parametrize("seconds", STEPS, ids=lambda s: f"{s}s")
def test_ctrl_c_in_the_first_seconds_of_a_crawl_is_one_line_and_exit_130(
    seconds: float, big_library: Path, database_url: str, tmp_path: Path
) -> None:
    env = {"SAFELIGHT_DATABASE_URL": database_url, "SAFELIGHT_HOME": str(tmp_path / "home")}
    process = start_safelight("run", str(big_library), env=env)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # the crawl's first progress line
        assert first.startswith(f"crawl {big_library.name}"), first
        time.sleep(seconds)  # pragma: no mutate (how far into the crawl, not a deadline)
        os.killpg(process.pid, signal.SIGINT)  # as a terminal: the whole group
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0] == INTERRUPTED_LINE or RELEASING in lines[0], stderr
    assert process.returncode == 130
    # The crawl was still going: this step interrupted it, not its end.
    assert "Done in" not in stdout
    if RELEASING in lines[0]:
        assert "Interrupted after" in stdout, stdout

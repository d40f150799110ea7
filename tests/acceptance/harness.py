"""Helpers of the acceptance tests: reading a command's JSON, running real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import Result

from safelight.testing.samplegen import Manifest

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Sample:
    root: Path
    manifest: Manifest


def json_of(result: Result) -> Any:
    """The one JSON document a ``--json`` command printed on stdout."""
    assert result.exit_code in (0, 1, 130), result.output
    return json.loads(result.stdout)


def process_env(extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAFELIGHT_")}
    env.update(extra)
    return env


def safelight_process(
    *args: str, env: Mapping[str, str], timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m safelight`` to the end, as a user would, and capture both streams."""
    return subprocess.run(
        [sys.executable, "-m", "safelight", *args],
        env=process_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        check=False,
    )


def start_safelight(*args: str, env: Mapping[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "safelight", *args],
        env=process_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )

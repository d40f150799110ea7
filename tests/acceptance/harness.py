"""Helpers of the acceptance tests: reading a command's JSON, running real processes."""

from __future__ import annotations

import http.cookiejar
import json
import os
import select
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import Result

from safelight.testing.samplegen import Manifest
from tests.reaper import reaper

REPO = Path(__file__).resolve().parents[2]
PAUSE_POINTS = Path(__file__).with_name("pausepoints")
"""On ``PYTHONPATH``, with ``PAUSE_AT`` and ``PAUSE_FIFO``: a process that stops at a
point and says so (``pausepoints/sitecustomize.py``)."""


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
    *args: str, env: Mapping[str, str], timeout: float = 90, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m safelight`` to the end, as a user would, and capture both streams
    (``input``: what it reads on stdin)."""
    stdin = None if input is None else subprocess.PIPE
    process = start_safelight(*args, env=env, stdin=stdin)
    try:
        stdout, stderr = process.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def start_safelight(
    *args: str, env: Mapping[str, str], stdin: int | None = None
) -> subprocess.Popen[str]:
    """Start ``python -m safelight`` in a process group of its own, which the session's
    reaper kills if the tests die before it ends (tests/reaper.py, ADR 0049)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "safelight", *args],
        env=process_env(env),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    reaper().group(process.pid)
    return process


def paused_at(fd: int, process: subprocess.Popen[str], seconds: float) -> str:
    """The line a process wrote to the pause FIFO (open on ``fd``, the ``fifo`` fixture)
    as it reached its pause point; fails if it ended first, or within ``seconds`` (a
    guard against a hang, not a timing)."""
    data = b""
    deadline = time.monotonic() + seconds
    while not data.endswith(b"\n"):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the process never reached its pause point"
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            data += os.read(fd, 4096)
    return data.decode().strip()


@dataclass
class Browsing:
    """A client signed in by serve's printed link, as the welcome page's script signs in:
    the token from the link's fragment POSTed to /welcome as JSON; the session cookie kept
    by its jar, the CSRF token from the answer."""

    opener: urllib.request.OpenerDirector
    base: str
    next_path: str
    csrf: str

    def get_json(self, path: str) -> Any:
        with self.opener.open(self.base + path.lstrip("/"), timeout=30) as response:
            return json.loads(response.read())


def link_in(line: str) -> str:
    """The ``.../welcome#token=...`` link in a line serve printed."""
    [link] = [word for word in line.split() if "/welcome#token=" in word]
    return link


def follow_welcome_link(link: str) -> Browsing:
    base, _, token = link.partition("welcome#token=")
    opener = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    request = urllib.request.Request(
        base + "welcome",
        data=json.dumps({"token": token}).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    with opener.open(request, timeout=30) as response:
        answer = json.loads(response.read())
    return Browsing(opener, base, answer["next"], answer["csrf"])

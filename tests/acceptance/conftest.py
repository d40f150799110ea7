"""Running the real ``safelight`` command: in-process with click's CliRunner (fast), or as
a real process (exit codes, signals, "no traceback") through ``python -m safelight``.

Every command runs against the test's own migrated database (``database_url``) and its
own ``SAFELIGHT_HOME``, so proxies and demo libraries never leak between tests.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from safelight.cli.main import cli
from safelight.logs import CHATTY_LIBRARIES
from safelight.testing.invoking import Invoke
from safelight.testing.samplegen import generate_library
from tests.acceptance.harness import Sample

SAMPLE_SEED = 7
# Settings a developer's shell might export, which must not leak into a test's commands.
_FOREIGN = [name for name in os.environ if name.startswith("SAFELIGHT_")]


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Commands set up logging on the root logger; leave it as the next test expects."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    chatty = {name: logging.getLogger(name).level for name in CHATTY_LIBRARIES}
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)
    for name, chatty_level in chatty.items():
        logging.getLogger(name).setLevel(chatty_level)


@pytest.fixture(scope="session")
def sample_library(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    """A generated library (photos with EXIF, bursts, a Live Photo, videos, broken files),
    made once: crawls only read it."""
    root = tmp_path_factory.mktemp("library")
    return Sample(root, generate_library(root, seed=SAMPLE_SEED))


@pytest.fixture
def small_library(sample_library: Sample, tmp_path: Path) -> Path:
    """Three photos of the sample library in a folder of this test's own, to change."""
    root = tmp_path / "small"
    photos = [p.path for p in sample_library.manifest.photos if p.path.lower().endswith(".jpg")]
    for relative in photos[:3]:
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(sample_library.root / relative, target)
    return root


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A FIFO a paused process writes to (``harness.paused_at``), open for reading (and
    writing, so that it never reads as closed between writers)."""
    path = tmp_path / "paused"
    os.mkfifo(path)
    fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    try:
        yield path, fd
    finally:
        os.close(fd)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def cli_env(database_url: str, home: Path) -> dict[str, str | None]:
    env: dict[str, str | None] = dict.fromkeys(_FOREIGN)
    env.update({"SAFELIGHT_DATABASE_URL": database_url, "SAFELIGHT_HOME": str(home)})
    return env


@pytest.fixture
def invoke(cli_env: dict[str, str | None]) -> Invoke:
    """``invoke("items", "--json", env={...}, input="...")``: run a command in this
    process (``input``: what it reads on stdin)."""

    def run(
        *args: str, env: Mapping[str, str | None] | None = None, input: str | None = None
    ) -> Result:
        merged = {**cli_env, **(env or {})}
        return CliRunner().invoke(cli, list(args), env=merged, input=input, catch_exceptions=False)

    return run

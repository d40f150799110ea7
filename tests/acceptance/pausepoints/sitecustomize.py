"""Pause points for the Ctrl-C tests (``tests/acceptance/test_interrupts.py``), from
outside src/: on ``PYTHONPATH``, with ``PAUSE_AT=<point>`` and ``PAUSE_FIFO=<path>``
in its environment, a ``safelight`` process stops at that point of its start, writes
``<point>`` and a line feed to the FIFO, and waits there for the test's SIGINT:

- ``import``: while ``safelight.app`` is being imported (the imports take half a second);
- ``parse``: while click parses the command line;
- ``settings``: while the settings are read (before the event loop);
- ``initdb``: during the embedded server's first ``initdb``, which a fake that has
  written half a data folder stands in for (it writes ``initdb <its pid>``);
- ``connect``, ``migrate``, ``pool``: in the event loop, while the database is
  connected to, migrated, and its pool opened;
- ``roots``: while the Workers check their storage roots, before they claim anything;
- ``ingest``: in the middle of a crawl, as it inserts its second asset (the first is in
  the database), where it stays for good (``tests/acceptance/test_database_away.py``
  kills the database there).

Without ``PAUSE_AT`` it does nothing. A module is patched right after it has run, before
any other imports a name from it, so the process imports what it would have anyway, in
the same order.
"""

from __future__ import annotations

import asyncio
import importlib.abc
import importlib.machinery
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

POINT = os.environ.get("PAUSE_AT", "")
FIFO = os.environ.get("PAUSE_FIFO", "")
FAKE_INITDB = Path(__file__).with_name("fake_initdb.py")


def _tell(point: str) -> None:
    fd = os.open(FIFO, os.O_WRONLY)
    try:
        os.write(fd, f"{point}\n".encode())
    finally:
        os.close(fd)


def _wait_here() -> None:
    """Until the SIGINT: Python's own handler raises KeyboardInterrupt in the sleep."""
    _tell(POINT)
    while True:
        time.sleep(3600)


async def _wait_here_async() -> None:
    """Until the SIGINT: asyncio.run's handler cancels the main task, and so this."""
    _tell(POINT)
    await asyncio.Event().wait()


def _pause_async(module: ModuleType, name: str) -> None:
    async def paused(*args: Any, **kwargs: Any) -> Any:
        await _wait_here_async()
        raise AssertionError("not reached")

    setattr(module, name, paused)


def _pause_second_call(module: ModuleType, name: str) -> None:
    original = getattr(module, name)
    calls = 0

    async def paused(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            await _wait_here_async()
        return await original(*args, **kwargs)

    setattr(module, name, paused)


def _pause_settings(module: ModuleType) -> None:
    settings = module.Settings
    load = settings.load.__func__

    def paused(cls: Any, *args: Any, **kwargs: Any) -> Any:
        _wait_here()
        return load(cls, *args, **kwargs)

    settings.load = classmethod(paused)


def _pause_parse(module: ModuleType) -> None:
    group = module.Group
    parse_args = group.parse_args

    def paused(self: Any, ctx: Any, args: list[str]) -> list[str]:
        _wait_here()
        result: list[str] = parse_args(self, ctx, args)
        return result

    group.parse_args = paused


def _fake_initdb(module: ModuleType) -> None:
    """The real ``_run_as``, with a fake initdb (run as this process's own user: the
    server's user may not reach this checkout) that writes half a data folder, tells
    the test, and waits to be killed."""
    run_as = module._run_as
    account_type = module.Account

    def fake(account: Any, command: list[str], *, timeout: float) -> None:
        if Path(command[0]).name != "initdb":
            run_as(account, command, timeout=timeout)
            return
        data = command[command.index("-D") + 1]
        me = account_type(account.name, os.getuid(), os.getgid(), switch=False)
        run_as(me, [sys.executable, str(FAKE_INITDB), data, FIFO], timeout=timeout)

    setattr(module, "_run_as", fake)  # noqa: B010  # the module's own name for it


# The module each point waits in, and what to do once it is imported.
PATCHES: dict[str, tuple[str, Callable[[ModuleType], None]]] = {
    "parse": ("click.core", _pause_parse),
    "settings": ("safelight.settings", _pause_settings),
    "initdb": ("safelight.db.embedded", _fake_initdb),
    # Patched where they are defined, before any module imports them by name.
    "connect": ("safelight.db.pool", lambda m: _pause_async(m, "connect")),
    "migrate": ("safelight.db.migrate", lambda m: _pause_async(m, "migrate")),
    "pool": ("safelight.db.pool", lambda m: _pause_async(m, "open_pool")),
    "roots": ("safelight.handlers.guards", lambda m: _pause_async(m, "check_every_root")),
    # The crawl calls it through its module (assets.insert_asset): patched in place.
    "ingest": (
        "safelight.library.catalogue.assets",
        lambda m: _pause_second_call(m, "insert_asset"),
    ),
}


class _Patcher(importlib.abc.MetaPathFinder):
    """Patches one module right after it has run (``import``: pauses before it runs)."""

    def __init__(self, target: str, patch: Callable[[ModuleType], None] | None) -> None:
        self.target = target
        self.patch = patch

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.target:
            return None
        sys.meta_path.remove(self)
        if self.patch is None:
            _wait_here()
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module
        patch = self.patch
        assert patch is not None

        def exec_then_patch(module: ModuleType) -> None:
            exec_module(module)
            patch(module)

        loader.exec_module = exec_then_patch  # type: ignore[method-assign]
        return spec


def install() -> None:
    if not POINT:
        return
    if POINT == "import":
        sys.meta_path.insert(0, _Patcher("safelight.app", None))
        return
    target, patch = PATCHES[POINT]
    sys.meta_path.insert(0, _Patcher(target, patch))


install()

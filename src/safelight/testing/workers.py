"""Workers built on the fakes, for the supervisor's tests."""

from __future__ import annotations

from safelight.settings import Settings
from safelight.testing.executor import FakeExecutor, as_executor
from safelight.testing.fakeclock import FakeClock
from safelight.testing.workstore import ScriptedStore, as_work_store
from safelight.work.worker import Worker


def noop_worker(
    clock: FakeClock,
    store: ScriptedStore,
    executor: FakeExecutor,
    name: str,
    *,
    until_idle: bool = False,
) -> Worker:
    """A Worker named ``name`` of the ``noop`` kind, with the default settings."""
    settings = Settings().worker(name, frozenset({"noop"}), until_idle=until_idle)
    return Worker(as_work_store(store), as_executor(executor), clock, settings)

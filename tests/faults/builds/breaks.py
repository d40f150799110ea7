"""The patches the broken builds apply (each build's ``sitecustomize`` picks its own),
defined once: importing this module changes nothing."""

from __future__ import annotations

from types import MappingProxyType


def _never_overdue(self: object) -> bool:
    return False


def _no_self_stop(self: object) -> None:
    return None


def disable_self_stop() -> None:
    """An attempt never finds itself overdue: neither its timer, nor ``ensure_alive()``,
    nor its heartbeat stops it when it runs past half a lease without one."""
    from safelight.work import executor

    executor._Attempt._overdue = _never_overdue  # type: ignore[method-assign]
    executor._Attempt._self_stop_due = _no_self_stop  # type: ignore[method-assign]


def remove_fence() -> None:
    """``WorkStore.fenced`` locks the item row by its id alone, so a transaction of an
    attempt that lost its item commits all the same. The store's module-level mapping,
    which its lookups read, gets the stand-in."""
    from safelight.work import store

    store.QUERIES = MappingProxyType(
        {
            **store.QUERIES,
            "attempt_lock": "SELECT 1 FROM work_items WHERE id = %(id)s FOR SHARE",
        }
    )


async def _recover_nothing(self: object) -> object:
    from safelight.work.model import RecoveryReport

    return RecoveryReport()


def disable_lease_recovery() -> None:
    """Lease recovery runs on time and takes nothing back."""
    from safelight.work import maintenance

    maintenance.LeaseRecovery.run_once = _recover_nothing  # type: ignore[method-assign,assignment]

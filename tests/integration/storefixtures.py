"""Forwards to :mod:`safelight.testing.stores` for the fault rig (``tests/faults``), whose
imports its owner switches; nothing else imports this (ADR 0051). Delete it then."""

from safelight.testing.stores import (
    OVERLAPPING_ATTEMPTS,
    RUNNING_ITEM_MISMATCHES,
    TEST_KINDS,
    DatabaseTimeClock,
    wait_until_blocked_on_a_lock,
)

__all__ = [
    "OVERLAPPING_ATTEMPTS",
    "RUNNING_ITEM_MISMATCHES",
    "TEST_KINDS",
    "DatabaseTimeClock",
    "wait_until_blocked_on_a_lock",
]

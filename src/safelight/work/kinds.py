"""What the engine knows of a kind: its name, whether it must, may or must not be scoped,
how its items are retried, and how to check its payload.

The kinds themselves are the domain's (``safelight.handlers.KINDS``), which hands the
store their specs and the scheduler their schedules; the engine names none of them.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from safelight.work.retry import RetryPolicy

PayloadCheck = Callable[[Mapping[str, Any]], object]
"""Checks a payload (a JSON object) for its kind: raises ``ValueError`` with one line
naming the field for one the kind does not take; what it returns is not used."""


class Scope(enum.StrEnum):
    REQUIRED = "required"  # every item names a storage config
    OPTIONAL = "optional"  # scoped when the item names a config
    FORBIDDEN = "forbidden"  # never scoped


@dataclass(frozen=True, slots=True)
class KindSpec:
    name: str
    scope: Scope
    # How its items are tried again after a failure that may pass; None: the settings'
    # policy (Settings.retry_policy, safelight.work.retry.Retries.of).
    retry: RetryPolicy | None = None
    check_payload: PayloadCheck | None = None
    """None: any JSON object (the store still refuses anything else)."""

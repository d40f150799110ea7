"""What the engine knows of a kind: its name, whether it must, may or must not be scoped,
and how its items are retried.

The kinds themselves are the domain's (``safelight.handlers.KINDS``), which hands the
store their specs and the scheduler their schedules; the engine names none of them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from safelight.work.retry import RetryPolicy


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

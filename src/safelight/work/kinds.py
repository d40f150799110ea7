"""What the engine knows of a kind: its name and whether it must, may or must not be scoped."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Scope(enum.StrEnum):
    REQUIRED = "required"  # always names a storage config (Crawl, BurstDetection, Purge)
    OPTIONAL = "optional"  # scoped when it names a config (ProxyDeletion, noop)
    FORBIDDEN = "forbidden"  # never scoped (TokenCleanup, ProxySweep, WorkItemRetention)


@dataclass(frozen=True, slots=True)
class KindSpec:
    name: str
    scope: Scope

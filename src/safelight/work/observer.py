"""What the engine tells whoever watches it: the hooks behind a Worker process's metrics.

The engine imports no metrics library: it calls an :class:`EngineObserver`, and the
composition root (``safelight.app``) hands it the one that counts (the Prometheus
metrics of ``safelight.observe``), or :data:`NO_OBSERVER`. Each hook is a counter's
increment, called on the event loop's thread at the moment the thing happens; none may
block or raise.
"""

from __future__ import annotations

from typing import Protocol

from safelight.work.model import RecoveryReport

__all__ = ["NO_OBSERVER", "EngineObserver", "NoObserver"]


class EngineObserver(Protocol):
    def item_ended(self, kind: str, outcome: str, seconds: float) -> None:
        """An attempt ended: its kind, its outcome's name (``safelight.work.outcome``) and
        the seconds from its claim to the end of its store call."""
        ...

    def heartbeat_failed(self) -> None:
        """A heartbeat call failed or timed out (the attempt goes on)."""
        ...

    def self_stopped(self) -> None:
        """An attempt stopped itself: no heartbeat succeeded for half a lease."""
        ...

    def leases_recovered(self, report: RecoveryReport) -> None:
        """A round of lease recovery in this process ended (``report`` may be all zero)."""
        ...

    def claim_lost(self) -> None:
        """A claim statement lost the race for a storage config to another claim (the
        unique index of running items, or a deadlock between two claims)."""
        ...


class NoObserver:
    """Watches nothing: the default wherever no observer is handed in."""

    def item_ended(self, kind: str, outcome: str, seconds: float) -> None:
        pass

    def heartbeat_failed(self) -> None:
        pass

    def self_stopped(self) -> None:
        pass

    def leases_recovered(self, report: RecoveryReport) -> None:
        pass

    def claim_lost(self) -> None:
        pass


NO_OBSERVER: EngineObserver = NoObserver()

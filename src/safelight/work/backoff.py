"""How long a Worker process's task waits before it tries again while the database is away.

The Worker loops, the wake-up listener, lease recovery, the scheduler and the presence
all survive an outage by waiting and trying again (docs/operations.md has the table).
Each waits its own period after the first failure in a row, twice that after the second,
and so on up to a ceiling, then its period again after a success: a database away for an
hour costs each task about sixty log lines and sixty tries, not one every few seconds,
and a short blip is retried as soon as before. No jitter: a home server's few Worker
processes do not make a herd, and the listener wakes every Worker the moment it is back.
"""

from __future__ import annotations

__all__ = ["Backoff"]


class Backoff:
    """The waits of one task between failed tries: ``first_seconds``, doubling after each
    failure in a row, at most ``most_seconds`` (never less than ``first_seconds``)."""

    def __init__(self, first_seconds: float, most_seconds: float) -> None:
        if first_seconds <= 0:
            raise ValueError(f"first_seconds must be > 0, got {first_seconds!r}")
        self.first_seconds = first_seconds
        self.most_seconds = max(first_seconds, most_seconds)
        self.failures = 0
        """Failures in a row so far."""

    def failed(self) -> float:
        """Count one more failure in a row; return how long to wait before the next try."""
        self.failures += 1
        # min() first on the exponent: 2.0 ** 2000 would overflow after months of outage.
        doublings = min(self.failures - 1, 64)
        return min(self.first_seconds * 2.0**doublings, self.most_seconds)

    def succeeded(self) -> None:
        """A try succeeded: the next failure waits ``first_seconds`` again."""
        self.failures = 0

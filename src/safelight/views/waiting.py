"""What ``safelight status`` and the queue page say when work waits for a Worker that is
not there (ADR 0058): queued items are run only by a Worker (``safelight worker``, or
the Workers of a ``safelight run`` while it runs), and a Worker is "running" when it
wrote its presence recently (the ``workers`` table, as ``safelight health`` judges)."""

from __future__ import annotations

WORKER_COMMAND = "safelight worker"


def no_worker_note(queued: int, workers_seen: int) -> str | None:
    """The sentence to show when ``queued`` items wait and no Worker was seen; None when
    nothing waits, or a Worker is there to run it."""
    if queued <= 0 or workers_seen > 0:
        return None
    items = "1 item waits" if queued == 1 else f"{queued} items wait"
    return f"{items}: no Worker is running. Start one with '{WORKER_COMMAND}'."

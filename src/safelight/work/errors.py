"""Errors of the engine, each with a message a user can act on."""

from __future__ import annotations


class WorkError(Exception):
    """Base of every error the engine raises on purpose."""


class InvalidWorkItem(WorkError, ValueError):
    """Enqueue refused an item: unknown kind, bad payload, bad or inactive config."""


class AttemptStopped(WorkError):
    """The attempt must stop now and write nothing more (lost, cancelled, self-stopped,
    shutting down). Raised by ``ensure_alive()`` and the fenced transaction."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class AttemptLost(AttemptStopped):
    """The database says this attempt no longer owns its item."""

    def __init__(self, reason: str = "lost: the item is no longer this attempt's") -> None:
        super().__init__(reason)

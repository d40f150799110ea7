"""Wake-ups: one LISTEN connection per process, shared by every Worker in it.

A trigger sends ``NOTIFY safelight_work`` when an item becomes queued and when a
config's running item ends (migration 0001). The listener turns each notification into
a set :class:`asyncio.Event` for every subscribed Worker, so the next item of a busy
config starts within milliseconds instead of at the next poll. Polling stays as the
safety net: a notification lost while the connection was down costs at most one poll,
and the listener wakes everyone after it reconnects.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import psycopg

from safelight.core.clock import Clock
from safelight.db.pool import connect
from safelight.work import cancels
from safelight.work.backoff import Backoff
from safelight.work.cancels import CancelRequests
from safelight.work.errors import OUTAGE_ERRORS

CHANNEL = "safelight_work"
_log = logging.getLogger(__name__)


class WakeupHub:
    """Fans wake-ups out to the Worker slots of one process."""

    def __init__(self) -> None:
        self._events: list[asyncio.Event] = []

    def subscribe(self) -> asyncio.Event:
        event = asyncio.Event()
        self._events.append(event)
        return event

    def wake_all(self) -> None:
        for event in self._events:
            event.set()


class Listener:
    """Keeps a LISTEN connection open: wakes the hub on every notification of work, and
    hands cancel requests to ``cancels`` (:mod:`safelight.work.cancels`), if given.

    ``connected`` is set while the connection listens (``/healthz`` reads it). A lost
    connection is retried after ``retry_seconds``, doubling after each failure in a row
    up to ``retry_max_seconds`` (:class:`~safelight.work.backoff.Backoff`); any other
    exception is a bug and ends :meth:`run`, for the supervisor to end the process.
    """

    def __init__(
        self,
        url: str,
        hub: WakeupHub,
        clock: Clock,
        *,
        retry_seconds: float,
        retry_max_seconds: float,
        cancels: CancelRequests | None = None,
    ) -> None:
        self._url = url
        self._hub = hub
        self._cancels = cancels
        self._clock = clock
        self._backoff = Backoff(retry_seconds, retry_max_seconds)
        self.connected = asyncio.Event()

    async def run(self) -> None:  # pragma: no mutate block
        """Listen until cancelled, reconnecting after a lost connection."""
        while True:
            conn: psycopg.AsyncConnection[Any] | None = None
            try:
                conn = await connect(self._url, "safelight-listener")
                await conn.execute(f"LISTEN {CHANNEL}")
                if self._cancels is not None:
                    await conn.execute(f"LISTEN {cancels.CHANNEL}")
                self.connected.set()
                self._backoff.succeeded()
                # Anything queued while we were not listening is found by this wake-up.
                self._hub.wake_all()
                async for note in conn.notifies():
                    self.heard(note.channel, note.payload)
            except OUTAGE_ERRORS as exc:
                wait = self._backoff.failed()
                _log.warning(
                    "wake-up listener lost its connection (%s); retrying in %g s",
                    type(exc).__name__,
                    wait,
                )
                await self._clock.sleep(wait)
            finally:
                self.connected.clear()
                if conn is not None:
                    await conn.close()

    def heard(self, channel: str, payload: str) -> None:
        """One notification: a cancel request goes to ``cancels``; anything else wakes
        the hub (work was queued, or a config's running item ended)."""
        if channel == cancels.CHANNEL and self._cancels is not None:
            self._cancels.heard(payload)
        else:
            self._hub.wake_all()

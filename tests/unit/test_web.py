"""The web dashboard's pure parts: the day a date shows, byte ranges, Host names, the
proxy URL's version, On this day's page cursor and size, and its settings."""

from __future__ import annotations

import base64
from datetime import date, datetime

import pytest
from starlette.exceptions import HTTPException

from safelight.settings import Settings, SettingsError
from safelight.web.api import parse_cursor, parse_day, parse_limit
from safelight.web.onthisday import MAX_PAGE_TILES, PAGE_TILES, Cursor, DaySpan, span_of
from safelight.web.proxies import byte_range, proxy_url, proxy_version

TODAY = date(2026, 6, 15)


@pytest.mark.parametrize(
    ("day", "span"),
    [
        (date(2026, 6, 15), DaySpan(6, 15, 15, 2026)),
        (date(2027, 2, 28), DaySpan(2, 28, 29, 2027)),  # a common year: the leap day too
        (date(2028, 2, 28), DaySpan(2, 28, 28, 2028)),  # a leap year has its own 29th
        (date(2028, 2, 29), DaySpan(2, 29, 29, 2028)),
        (date(2100, 2, 28), DaySpan(2, 28, 29, 2100)),  # 2100 is not a leap year
        (date(2026, 3, 1), DaySpan(3, 1, 1, 2026)),
    ],
)
def test_the_span_of_a_day(day: date, span: DaySpan) -> None:
    assert span_of(day) == span


def test_a_day_is_parsed_in_its_one_form_or_refused_with_the_form() -> None:
    assert parse_day(None, TODAY) == TODAY
    assert parse_day("", TODAY) == TODAY
    assert parse_day("2024-02-29", TODAY) == date(2024, 2, 29)
    for text in ("2023-02-29", "2026-13-01", "20260615", "2026-W25-1", " 2026-06-15", "today"):
        with pytest.raises(HTTPException) as raised:
            parse_day(text, TODAY)
        assert raised.value.status_code == 400
        # What is expected, nothing of what was sent (issue #28).
        assert raised.value.detail == "date must be a day as YYYY-MM-DD, such as 2026-06-15"


def test_a_cursor_comes_back_as_it_was_given_and_the_first_one_is_before_every_tile() -> None:
    cursor = Cursor(2023, datetime(2023, 6, 15, 10, 0, 0, 250000), 12345)
    token = cursor.encode()
    assert "=" not in token and token.isascii()
    assert Cursor.decode(token) == cursor
    assert parse_cursor(token) == cursor
    assert parse_cursor(None) is None and parse_cursor("") is None
    start = Cursor.start(span_of(TODAY))
    assert (start.year, start.local, start.id) == (2026, datetime.min, 0)


@pytest.mark.parametrize(
    "text",
    [
        "not-a-cursor",
        "%%%",
        base64.urlsafe_b64encode(b"2023|2023-06-15T10:00:00").decode(),  # no id
        base64.urlsafe_b64encode(b"2023|yesterday|1").decode(),
        base64.urlsafe_b64encode(b"\xff\xfe|x|1").decode(),
    ],
)
def test_a_malformed_cursor_is_a_400_that_says_what_is_expected(text: str) -> None:
    with pytest.raises(HTTPException) as raised:
        parse_cursor(text)
    assert raised.value.status_code == 400
    assert raised.value.detail == "after must be the next cursor of a page of this API, as given"


def test_a_page_size_is_a_bounded_whole_number() -> None:
    assert parse_limit(None) == parse_limit("") == PAGE_TILES
    assert parse_limit("1") == 1 and parse_limit(str(MAX_PAGE_TILES)) == MAX_PAGE_TILES
    for text in ("0", str(MAX_PAGE_TILES + 1), "-5", "ten", "1.5", " 7", "\u0663"):
        with pytest.raises(HTTPException) as raised:
            parse_limit(text)
        assert raised.value.status_code == 400
        assert raised.value.detail == f"limit must be a whole number from 1 to {MAX_PAGE_TILES}"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("bytes=0-9", (0, 9)),
        ("bytes=10-", (10, 99)),
        ("bytes=-10", (90, 99)),
        ("bytes=-500", (0, 99)),
        ("bytes=90-1000", (90, 99)),
        ("bytes=0-1,4-5", None),  # several ranges: the whole file
        ("items=0-9", None),
        ("bytes=-", None),
    ],
)
def test_byte_ranges(header: str | None, expected: tuple[int, int] | None) -> None:
    assert byte_range(header, 100) == expected


@pytest.mark.parametrize("header", ["bytes=100-", "bytes=5-4", "bytes=-0"])
def test_a_range_outside_the_file_is_a_416(header: str) -> None:
    with pytest.raises(HTTPException) as raised:
        byte_range(header, 100)
    assert raised.value.status_code == 416
    assert raised.value.headers == {"Content-Range": "bytes */100"}


def test_a_proxy_url_changes_with_the_file_its_row_names() -> None:
    one = "c/ab/abcdef0123456789/thumbnail.1-1.jpg"
    two = "c/ab/abcdef0123456789/thumbnail.7-2.jpg"
    assert proxy_url(5, "thumbnail", one) == f"/proxies/5/thumbnail/{proxy_version(one)}"
    assert len(proxy_version(one)) == 16 and proxy_version(one) != proxy_version(two)
    assert proxy_url(5, "thumbnail", None) is None


def test_the_web_settings_and_the_token_kept_out_of_the_repr() -> None:
    defaults = Settings.load({}, {})
    assert (defaults.web_host, defaults.web_port, defaults.web_token) == ("127.0.0.1", 8470, None)
    given = "7f3c9a1e5b2d8f4a6c0e9b3d7a1f5c2e"  # `openssl rand -hex 16`
    loaded = Settings.load(
        {},
        {"SAFELIGHT_WEB_HOST": "::1", "SAFELIGHT_WEB_PORT": "0", "SAFELIGHT_WEB_TOKEN": given},
    )
    assert (loaded.web_host, loaded.web_port, loaded.web_token) == ("::1", 0, given)
    assert given not in repr(loaded) and "web_token='***'" in repr(loaded)
    with pytest.raises(
        SettingsError, match=r"^web_port must be a TCP port, 0 to 65535, not 70000$"
    ):
        Settings.load({"web_port": 70000}, {})
    with pytest.raises(SettingsError) as short:
        Settings.load({}, {"SAFELIGHT_WEB_TOKEN": "hunter2"})
    assert str(short.value) == (
        "web_token (SAFELIGHT_WEB_TOKEN) must be a random secret of at least 32 characters, "
        "at least 8 of them different (`openssl rand -hex 32` makes one); "
        "or leave it unset for one made at start"
    )
    assert "hunter2" not in str(short.value)
    with pytest.raises(SettingsError, match="web_host must name an address"):
        Settings.load({"web_host": " "}, {})

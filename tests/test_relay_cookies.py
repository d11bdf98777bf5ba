"""The relay's cookie jar (``relay.cookies``): RFC 6265's ``Expires`` and ``Max-Age``, bounds, and no cookie a
server sets ends the relay. In-process, no socket: a fake clock."""

from __future__ import annotations

import calendar

import pytest

from diverge_codec.relay.cookies import MAX_COOKIES, CookieJar, cookie_date

NOW = float(calendar.timegm((2026, 12, 6, 12, 0, 0, 0, 0, 0)))


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


def _jar(*lines: str, clock: Clock | None = None) -> CookieJar:
    jar = CookieJar(clock or Clock())
    jar.keep("h", [(b"set-cookie", line.encode("utf-8")) for line in lines])
    return jar


def _sent(jar: CookieJar, scheme: str = "https") -> str | None:
    header = jar.header("h", scheme)
    return header[0][1] if header else None


@pytest.mark.parametrize(("text", "expected"), [
    ("Wed, 09 Jun 2021 10:18:14 GMT", (2021, 6, 9, 10, 18, 14)),   # RFC 1123
    ("Wednesday, 09-Jun-21 10:18:14 GMT", (2021, 6, 9, 10, 18, 14)),  # RFC 850, two-digit year
    ("Wed Jun  9 10:18:14 2021", (2021, 6, 9, 10, 18, 14)),          # asctime
    ("09 jun 1999 1:2:3", (1999, 6, 9, 1, 2, 3)),
    ("Thu, 01 Jan 70 00:00:00 GMT", (1970, 1, 1, 0, 0, 0)),
    ("1 Jan 69 00:00:00", (2069, 1, 1, 0, 0, 0)),
])
def test_a_cookie_date_is_read_with_the_rfc_s_algorithm(text, expected):
    assert cookie_date(text) == calendar.timegm((*expected, 0, 0, 0))


@pytest.mark.parametrize("text", [
    "", "tomorrow", "Wed, 30 Feb 2021 10:18:14 GMT", "Wed, 09 Jun 2021 24:00:00 GMT", "Wed, 32 Jun 2021 10:00:00",
    "Wed, 09 Jun 1600 10:18:14 GMT", "Wed, 09 Xyz 2021 10:18:14 GMT", "09 Jun 2021", "Wed, ²9 Jun 2021 10:18:14",
])
def test_what_is_no_date_is_none(text):
    assert cookie_date(text) is None


def test_a_max_age_that_is_not_ascii_digits_is_ignored_never_fatal():
    jar = _jar("a=1; Max-Age=\u00b2", "b=2; Max-Age=\u0661", "c=3; Max-Age=+5", "d=4; Max-Age=5s")
    assert _sent(jar) == "a=1; b=2; c=3; d=4"  # each attribute ignored: the cookies last the session


def test_a_latin_1_superscript_two_as_max_age_ends_nothing():
    jar = CookieJar(Clock())
    jar.keep("h", [(b"set-cookie", b"a=1; Max-Age=\xb2")])  # what ended the relay with "internal: ValueError"
    assert _sent(jar) == "a=1"


def test_an_expires_in_the_past_deletes_the_cookie():
    clock = Clock()
    jar = _jar("AWSALB=old; Path=/", clock=clock)
    assert _sent(jar) == "AWSALB=old"
    jar.keep("h", [(b"set-cookie", b"AWSALB=; Expires=Thu, 01 Jan 1970 00:00:00 GMT")])
    assert _sent(jar) is None


def test_a_cookie_ends_at_its_expires_or_max_age_and_max_age_wins():
    clock = Clock()
    jar = _jar("e=1; Expires=Sun, 06 Dec 2026 12:00:30 GMT", "m=2; Max-Age=10; Expires=Sun, 06 Dec 2030 12:00:30 GMT",
               "x=3; Expires=Sun, 06 Dec 2030 12:00:30 GMT; Max-Age=-1", "s=4", clock=clock)
    assert _sent(jar) == "e=1; m=2; s=4"
    clock.now += 11
    assert _sent(jar) == "e=1; s=4"
    clock.now += 20
    assert _sent(jar) == "s=4"


def test_the_last_readable_attribute_wins():
    jar = _jar("a=1; Max-Age=0; Max-Age=60", "b=2; Max-Age=60; Max-Age=0", "c=3; Expires=Thu, 01 Jan 1970 00:00:00 GMT; "
               "Expires=never")
    assert _sent(jar) == "a=1"


def test_a_malformed_cookie_is_dropped_and_the_rest_kept():
    jar = _jar("junk", "=v", "caf\u00e9=1", "a=b\u00e9", "a2=\x7f", "ok = fine ;", "sp=a b")
    assert _sent(jar) == "ok=fine; sp=a b"


def test_cookies_are_bounded_and_secure_ones_go_over_https_only():
    jar = _jar(*(f"c{index}=v" for index in range(60)))
    jar.keep("h", [(b"set-cookie", b"c0=new; Secure; Max-Age=soon"), (b"set-cookie", b"late=v"),
                   (b"set-cookie", b"big=" + b"x" * 5000)])
    sent = _sent(jar)
    assert sent is not None and sent.count("=") == MAX_COOKIES and sent.startswith("c0=new; c1=v") and "late" not in sent
    assert _sent(jar, "http").startswith("c1=v") and jar.header("other", "https") == []


def test_a_long_hostile_attribute_list_is_read_in_one_pass():
    line = "a=1" + "; Expires=" + "1" * 4000
    assert _sent(_jar(line)) == "a=1"
    assert cookie_date("9" * 100_000 + ":1:1 1 jan 2000") is None  # a long token: cut, never scanned twice

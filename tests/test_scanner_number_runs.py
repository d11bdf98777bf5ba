"""The compiled scan's runs of numbers in a long array (after a comma, digits eight a step, out of
line) held to orjson and to the pure core: every valid and refused number after runs of every
length, at every offset against the eight-byte reads and the document's end."""
from __future__ import annotations

import pytest

from test_decode_lazy import check_one
from test_scanner import scanner_check  # fuzz/scanner_check.py, on the path test_scanner sets
from test_scanner_escape_runs import agrees  # the compiled scan's verdict is orjson's (skips without the compiled core)

NUMBERS = [
    b"0", b"-0", b"7", b"-12", b"1767225600", b"45.1234", b"0.5", b"-0.0001", b"12345678901234567890123",
    b"1e5", b"1E+5", b"-2.5e-3", b"0e0", b"1e309", b"1e308", b"-1e400", b"1.7976931348623157e308",
    b"9" * 308, b"9" * 309, b"1" + b"0" * 308, b"1" + b"0" * 307 + b".5", b"0." + b"0" * 400 + b"1e400",
    b"01", b"00", b"-", b"-a", b"1.", b"1.e5", b".5", b"1e", b"1e+", b"+1", b"1.2.3", b"1_0", b"0x10",
    b"--1", b"1\xff", b"1\xfa2", b"12345678\xfa", b"1\x00", b"1-", b"1,", b"1,,2", b"1 ,2", b"1, 2", b"1,\n2",
    b"1]", b"1,]", b"1,-",
]


def body(items: bytes) -> bytes:
    return b'{"method":"notifications/metrics","params":{"v":[' + items + b'],"n":1}}'


@pytest.mark.parametrize("number", NUMBERS, ids=lambda n: repr(n[:24]))
def test_a_number_after_runs_of_every_length_and_alignment(number):
    for width in range(1, 18):  # the run before it: numbers of width digits, so it starts at every offset
        for count in (1, 2, 5):
            data = body(b",".join([b"1" * width] * count + [number]))
            scanner_check.check(data)  # as it is, and spaced out: the document first, and last
            check_one(b"\x00" + data)


@pytest.mark.parametrize("number", NUMBERS, ids=lambda n: repr(n[:24]))
def test_a_number_in_a_run_near_the_documents_end(number):
    for tail in range(12):  # the array closes within the last eight bytes and beyond
        data = body(b"3.25," * 120 + number + b",4" * tail).replace(b',"n":1', b"")
        scanner_check._check(data)
        check_one(b"\x00" + data)


@pytest.mark.parametrize("sign", [b"", b"-"])
def test_integers_of_every_width_with_and_without_fractions_across_the_sixteen_bytes(sign):
    # A fraction whose point falls at the 16-byte read's last byte, or past it, is read by dc_number.
    for width in range(1, 21):
        for fraction in (b"", b".", b".5", b".25", b".0625", b".e1", b"e5", b".5e-2"):
            number = sign + b"1234567890123456789012"[:width] + fraction
            data = body(b"7," + number + b",8")
            scanner_check.check(data)
            check_one(b"\x00" + data)


def test_a_long_series_is_read_as_orjson_reads_it():
    series = b",".join(b"%d.%04d" % (i * 7919 % 100, i * 104729 % 10000) for i in range(3000))
    data = body(b"1767225600," + series)
    assert len(data) > scanner_check.WINDOW_FROM  # the run is read in the windowed scan
    scanner_check._check(data)
    check_one(b"\x00" + data)


# Issue 35: a run's numbers read from 64-byte windows of bits. Every width of integer and fraction, with
# and without an exponent and a sign, at every offset of a window; and every refused number at every
# place of a long series.
@pytest.mark.parametrize("sign", [b"", b"-"])
@pytest.mark.parametrize("exponent", [b"", b"e5", b"E-2", b"e", b"e+"])
def test_numbers_of_every_width_at_every_offset_of_the_windows(sign, exponent):
    for whole in range(0, 26):
        for fraction in (None, 0, 1, 2, 5, 17, 40):
            number = sign + b"9876543210987654321098765"[:whole] + (b"" if fraction is None else b"." + b"5" * fraction) + exponent
            for offset in (0, *range(2, 72)):  # the run's window starts after "1,": the number at every place of it
                fill = b"2," * (offset // 2) if offset % 2 == 0 else b"22," + b"2," * ((offset - 3) // 2)
                agrees(body(b"1," + fill + number + b"," + b"3," * 260 + b"4"))  # past WINDOW_FROM: the run is read


@pytest.mark.parametrize("number", NUMBERS, ids=lambda n: repr(n[:24]))
def test_a_number_at_every_place_of_a_long_series(number):
    series = [b"%d.%d" % (i % 97, i % 13) if i % 3 else b"%d" % (i * 7919) for i in range(120)]  # > WINDOW_FROM
    assert len(body(b",".join(series))) > scanner_check.WINDOW_FROM
    for at in range(0, 120):
        agrees(body(b",".join(series[:at] + [number] + series[at:])))
    check_one(b"\x00" + body(b",".join(series[:30] + [number] + series[30:])))


@pytest.mark.parametrize("sign", [b"", b"-"])
def test_a_members_number_of_every_width_with_fractions_and_exponents(sign):
    # A number that is a member's value (dc_number_quick), not in a run: the integer's width against the
    # exponent's, around where the value reaches 10**308 and past four exponent digits.
    for whole in (b"0", b"1", b"9", b"12", b"99", b"1" * 17, b"9" * 20, b"9" * 299, b"1" * 300, b"9" * 301, b"01"):
        for fraction in (b"", b".", b".0", b".5", b".25", b".000001", b".9" + b"9" * 30):
            for exponent in (b"", b"e", b"e+", b"E-", b"e0", b"e1", b"e-1", b"e+9", b"e10", b"E307", b"e308", b"e309",
                             b"e-308", b"e-400", b"e0307", b"e00308", b"e0309", b"e+0300", b"e9999", b"e10000", b"e-99999",
                             b"e" + str(308 - len(whole)).encode(), b"e" + str(309 - len(whole)).encode()):
                number = sign + whole + fraction + exponent
                agrees(b'{"method":"m","params":{"n":' + number + b',"m":[' + number + b"]}}")

"""Structured random lines for the relay scanner, held to orjson by ``scanner_check.check``.

atheris steers by the coverage of Python code, and the scanner is C: this generator
writes what the scanner must get right on purpose (SDK-shaped objects with the
envelope anywhere, escaped and duplicated names, numbers at the double's edge, lone
surrogates, odd whitespace, depth around 1024) and mutates a byte or two of half of
them. Run from the repository root::

    python fuzz/scanner_random.py SEED SECONDS

It prints how many lines it checked and exits non-zero on the first disagreement.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import scanner_check  # noqa: E402

ATOMS = [
    b"0", b"-0", b"1", b"-1.5e-3", b"1E+2", b"18446744073709551616", b"-9223372036854775809", b"1e308",
    b"1.7976931348623157e308", b"1.7976931348623159e308", b"1e309", b"0.0e999", b"1e-999", b"true", b"false",
    b"null", b'""', b'"a"', b'"\\ud83d\\ude00"', b'"\\ud83d"', b'"\\udc00"', b'"\\u0000"', b'"\\n\\t\\"\\\\\\/"',
    b'"\xf0\x9f\x98\x80"', b'"\xe2\x82\xac"', b'"\xc3\xa9"', b"01", b"1.", b".5", b"-", b"NaN", b'"\x01"', b'"\x7f"',
    b"17976931348623158079e289", str(2**1024 - 2**970).encode(), str(2**1024 - 2**970 - 1).encode(),
]
KEYS = [
    b'"jsonrpc"', b'"method"', b'"params"', b'"_meta"', b'"id"', b'"\\u0069d"', b'"\\u006asonrpc"', b'"me\\u0074hod"',
    b'"\\u005fmeta"', b'"x"', b'"p\\u0061rams"', b'"i\\ud83d\\ude00"',
]
SPACES = [b"", b"", b"", b" ", b"\n", b"\t", b"\r\n", b"\x0c"]
LOOKS = [b'\\"', b"\\\\", b"\\u00e9", b"\\ud83d\\ude00", b"\\ud83d", b"\xc3\xa9", b"\xf0\x9f\x98\x80", b"\xed\xa0\x80", b"\x01", b"\xff",
         b"\x7f", b"\\x"]


class Lines:
    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)

    def space(self) -> bytes:
        return self.rnd.choice(SPACES) if self.rnd.random() < 0.3 else b""

    def value(self, depth: int) -> bytes:
        rnd, space = self.rnd, self.space
        roll = rnd.random()
        if depth > 4 or roll < 0.5:
            return rnd.choice(ATOMS)
        if roll < 0.75:
            return b"[" + space() + b",".join(space() + self.value(depth + 1) + space() for _ in range(rnd.randint(0, 3))) + b"]"
        return b"{" + space() + b",".join(self.member(depth + 1) for _ in range(rnd.randint(0, 4))) + b"}"

    def strings(self) -> bytes:
        """An array of strings of 0 to 300 bytes, a few holding an atom's string or bytes that need a look."""
        rnd, items = self.rnd, []
        for _ in range(rnd.randint(2, 40)):
            text = b"w" * rnd.randint(0, 300)
            if rnd.random() < 0.2:
                at = rnd.randint(0, len(text))
                text = text[:at] + rnd.choice(LOOKS) + text[at:]
            items.append(b'"' + text + b'"')
        return b"[" + b",".join(items) + b"]"

    def member(self, depth: int, key: bytes | None = None, value: bytes | None = None) -> bytes:
        space = self.space
        key = self.rnd.choice(KEYS) if key is None else key
        value = self.value(depth) if value is None else value
        return space() + key + space() + b":" + space() + value + space()

    def line(self) -> bytes:
        rnd = self.rnd
        members = [self.member(1) for _ in range(rnd.randint(0, 5))]
        if rnd.random() < 0.7:
            members.insert(rnd.randint(0, len(members)), self.member(1, b'"method"', b'"n/x"'))
        line = self.space() + b"{" + b",".join(members) + b"}" + self.space()
        if rnd.random() < 0.05:
            line = b'{"method":"x","params":{"d":' + b"[" * rnd.randint(1020, 1026) + b"]" * rnd.randint(1020, 1026) + b"}}"
        elif rnd.random() < 0.1:  # a long array of strings: the scan reads it through its window
            members.append(self.member(1, b'"lines"', self.strings()))
            line = self.space() + b"{" + b",".join(members) + b"}" + self.space()
        return self.mutate(line) if rnd.random() < 0.5 else line

    def mutate(self, line: bytes) -> bytes:
        data = bytearray(line)
        for _ in range(self.rnd.randint(0, 2)):
            if not data:
                break
            roll, at = self.rnd.random(), self.rnd.randrange(len(data))
            if roll < 0.3:
                del data[at]
            elif roll < 0.6:
                data.insert(at, self.rnd.choice(b'{}[],:"\\ u0e-+.1\x00\xff'))
            else:
                data[at] = self.rnd.randrange(256)
        return bytes(data)


def main() -> int:
    seed, seconds = int(sys.argv[1]), float(sys.argv[2])
    lines, checked, until = Lines(seed), 0, time.monotonic() + seconds
    while time.monotonic() < until:
        line = lines.line()
        try:
            scanner_check.check(line)
        except AssertionError as error:
            print(f"disagreement on {line!r}: {error}")
            return 1
        checked += 1
    print(f"scanner_random: seed {seed}, {checked} lines checked against orjson")
    return 0


if __name__ == "__main__":
    sys.exit(main())

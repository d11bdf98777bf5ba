"""Bodies the tools-begin readers must get right, and structured random ones, for ``tools_begin_check.check``.

``SEEDS`` is the fixed set (the tests run each, and atheris starts from them):
``python fuzz/tools_begin_seeds.py DIR`` writes them into DIR. ``random_bodies`` writes
what the Begun reader decides on purpose (the common form, escaped and duplicated names,
non-ASCII and broken UTF-8, odd whitespace, other members and modes), ``random_values``
what the Inactive reader decides (nested objects and arrays, integers at the edges of
what it reads itself, fractions, exponents, escapes, literals, duplicates, deep nesting);
a byte or two of half of each is mutated. ``python fuzz/tools_begin_seeds.py --random SEED
SECONDS`` checks both, by turns, for that long and exits non-zero on the first disagreement.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path

SEEDS = [
    b"{}", b" {} ", b"{ }", b'{"secrets":{}}', b'{"secrets":{"A":"fixed"}}', b'{"secrets":{"A":"fixed","B":"rotating"}}',
    b'{ "secrets" : { "A" : "fixed" , "B" : "rotating" } }\n', b'\t{"secrets":\r\n{"A":"fixed"}}\t',
    b'{"secrets":{"":"fixed"}}', b'{"secrets":{"\xc3\xa9t\xc3\xa9":"fixed","\xf0\x9f\x98\x80":"rotating"}}',
    b'{"secrets":{"A":"fixed","A":"rotating"}}', b'{"secrets":{"A":"fixed","B":"fixed","A":"rotating"}}',
    b'{"secrets":{"\\u0041":"fixed","A":"rotating"}}', b'{"secrets":{"a\\"b":"fixed"}}', b'{"secrets":{"a\\\\b":"fixed"}}',
    b'{"\\u0073ecrets":{"A":"fixed"}}', b'{"secrets":{"A":"\\u0066ixed"}}', b'{"secrets":{"A":"Fixed"}}',
    b'{"secrets":{"A":"fixed "}}', b'{"secrets":{"A":1}}', b'{"secrets":{"A":null}}', b'{"secrets":null}',
    b'{"secrets":[]}', b'{"secrets":"fixed"}', b'{"secrets":{"A":"fixed"},"secrets":{"B":"rotating"}}',
    b'{"secrets":{"A":"fixed"},"other":1}', b'{"other":1,"secrets":{"A":"fixed"}}', b'{"other":1}',
    b'{"secrets":{"A":"fixed"}} x', b'{"secrets":{"A":"fixed"}}}', b'{"secrets":{"A":"fixed"}', b'{"secrets":{"A":"fixed",}}',
    b'{"secrets":{"A":"fixed"},}', b'{"secrets":{"A" "fixed"}}', b'{"secrets":{"A":"fixed""B":"fixed"}}',
    b'{"secrets":{"\x01":"fixed"}}', b'{"secrets":{"\x7f":"fixed"}}', b'{"secrets":{"\xff":"fixed"}}',
    b'{"secrets":{"\xed\xa0\x80":"fixed"}}', b'{"secrets":{"\xc0\xaf":"fixed"}}', b'{"secrets":{"\xf4\x90\x80\x80":"fixed"}}',
    b'{"secrets":{"\xe2\x82":"fixed"}}', b'{"secrets":{"\\ud83d":"fixed"}}', b'{"secrets":{"\\ud83d\\ude00":"fixed"}}',
    b'{"secrets":{"A":"fixed"}}\x00', b'\x00{"secrets":{}}', b'\xef\xbb\xbf{}', b'{"secrets":{"A":"fixed"}}\x0c',
    b"", b" ", b"[]", b"null", b'"secrets"', b"1", b'{"secrets":{"A":"fixed"', b'{"secrets"', b'{"secrets":',
    b'{"secrets":{"' + b"N" * 100 + b'":"rotating"}}',
    b'{"secrets":{' + b",".join(b'"S%d":"%s"' % (i, (b"fixed", b"rotating")[i % 2]) for i in range(64)) + b"}}",
    # Inactive values: what the values reader reads itself, and what it hands on
    b'{"session":{"token":"tttt","refresh":"rrrr","expires":1767225600},"cursor":42}',
    b'{"a":[1,-1,0,-0,true,false,null,"",[],{},[[]],{"b":{}}]}', b' { "a" : [ 1 , 2 ] , "b" : { } } ',
    b'{"a":123456789012345678,"b":-123456789012345678}', b'{"a":1234567890123456789}', b'{"a":-9223372036854775809}',
    b'{"a":18446744073709551616}', b'{"a":1.5}', b'{"a":1e3}', b'{"a":1E-3}', b'{"a":-0.0}', b'{"a":01}', b'{"a":-01}',
    b'{"a":-}', b'{"a":+1}', b'{"a":.5}', b'{"a":1.}', b'{"a":tru}', b'{"a":truex}', b'{"a":nul}', b'{"a":[1,]}',
    b'{"a":[,1]}', b'{"a":[1 2]}', b'{"a":"\\n"}', b'{"a":"\xc3\xa9\xf0\x9f\x98\x80"}', b'{"a":"\xed\xa0\x80"}',
    b'{"a":"\x7f\x01"}', b'{"a":1,"a":2}', b'{"a":1,"b":2,"a":3}', b'{"\\u0061":1}', b'{"a":NaN}', b'{"a":Infinity}',
    b'{"a":' + b"[" * 40 + b"]" * 40 + b"}", b'{"a":' + b'{"b":' * 40 + b"1" + b"}" * 40 + b"}",
    b'{"a":"' + b"v" * 300 + b'"}', b"[1]", b'"a"', b'{"a":1}[', b'{"a":1}\x00', b'{"a":1} ',
]

NAMES = [b'"A"', b'"SECRET_1"', b'""', b'"\xc3\xa9"', b'"\xf0\x9f\x98\x80"', b'"\\u0041"', b'"a\\nb"', b'"\\ud83d\\ude00"',
         b'"\\ud83d"', b'"\xed\xa0\x80"', b'"\xff"', b'"\x01"', b'"a b"', b'"/"', b'"\\/"']
MODES = [b'"fixed"', b'"rotating"', b'"fixed"', b'"rotating"', b'"Fixed"', b'"\\u0066ixed"', b"null", b"1", b"{}", b'"other"']
SPACES = [b"", b"", b"", b" ", b"\n", b"\t", b"\r\n", b"\x0c", b"\x00"]


def random_bodies(rnd: random.Random) -> Iterator[bytes]:
    while True:
        space = lambda: rnd.choice(SPACES) if rnd.random() < 0.3 else b""  # noqa: E731
        members = []
        for _ in range(rnd.randrange(0, 6)):
            members.append(space() + rnd.choice(NAMES) + space() + b":" + space() + rnd.choice(MODES) + space())
        declaration = b"{" + space() + b",".join(members) + b"}"
        outer = [space() + b'"secrets"' + space() + b":" + space() + declaration + space()]
        if rnd.random() < 0.1:
            outer.append(b'"other":1')
        if rnd.random() < 0.1:
            outer.append(b'"secrets":{}')
        rnd.shuffle(outer)
        yield _mutated(rnd, space() + b"{" + b",".join(outer if rnd.random() < 0.95 else []) + b"}" + space())


SCALARS = [b"0", b"-0", b"7", b"-42", b"1767225600", b"123456789012345678", b"-999999999999999999", b"true", b'"token"',
           b"1234567890123456789", b"18446744073709551615", b"01", b"1.5", b"-0.0", b"1e3", b"2E-5", b"false", b"null", b'""',
           b'"\xc3\xa9"', b'"\xf0\x9f\x98\x80"', b'"\\n"', b'"\\u00e9"', b'"\xff"', b'"' + b"x" * 70 + b'"']


def random_values(rnd: random.Random) -> Iterator[bytes]:
    def space() -> bytes:
        return rnd.choice(SPACES) if rnd.random() < 0.2 else b""

    def value(depth: int) -> bytes:
        kind = rnd.random()
        if depth < 6 and kind < 0.2:
            return b"[" + space() + b",".join(value(depth + 1) + space() for _ in range(rnd.randrange(0, 4))) + b"]"
        if depth < 6 and kind < 0.4:
            return members(depth + 1)
        return rnd.choice(SCALARS[:9] if rnd.random() < 0.6 else SCALARS)  # mostly what the reader reads itself

    def members(depth: int) -> bytes:
        names = [rnd.choice(NAMES[:5] if rnd.random() < 0.8 else NAMES) for _ in range(rnd.randrange(0, 5))]
        return b"{" + space() + b",".join(space() + name + space() + b":" + space() + value(depth) + space() for name in names) + b"}"

    while True:
        yield _mutated(rnd, space() + members(0) + space())


def _mutated(rnd: random.Random, body: bytes) -> bytes:
    if rnd.random() >= 0.5:
        return body
    edited = bytearray(body)
    for _ in range(rnd.randrange(1, 3)):
        at = rnd.randrange(len(edited) + 1)
        choice = rnd.random()
        if choice < 0.4 and at < len(edited):
            edited[at] = rnd.randrange(256)
        elif choice < 0.7 and at < len(edited):
            del edited[at]
        else:
            edited.insert(at, rnd.choice(b'{}[]":, \\ufa-.e0'))
    return bytes(edited)


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    if argv[:1] == ["--random"]:
        import tools_begin_check

        seed, seconds = int(argv[1]), float(argv[2])
        end, count = time.monotonic() + seconds, 0
        rnd = random.Random(seed)
        for body in (body for pair in zip(random_bodies(rnd), random_values(rnd)) for body in pair):
            try:
                tools_begin_check.check(body)
            except AssertionError as error:
                sys.exit(f"seed {seed}: {error} on {body!r}")
            count += 1
            if count % 256 == 0 and time.monotonic() > end:
                break
        print(f"tools-begin readers: {count} random bodies agree with orjson (seed {seed})")
        return
    target = Path(argv[0])
    target.mkdir(parents=True, exist_ok=True)
    for index, seed in enumerate(SEEDS):
        (target / f"seed-{index:03d}").write_bytes(seed)


if __name__ == "__main__":
    main(sys.argv[1:])

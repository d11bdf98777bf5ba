"""A compressed body's refusals in their exact words (issue #45: a mutant that dropped the refusal of bytes after
the last gzip member, or began a second deflate stream, passed the tests that asked for a ``BodyError`` alone:
the generic "does not inflate" came instead, or the second stream was read)."""

from __future__ import annotations

import gzip
import zlib

import pytest

from diverge_codec.relay.http_body import BodyError, Inflater


@pytest.mark.parametrize(("coding", "body", "words"), [
    ("gzip", gzip.compress(b"one") + b"trailing junk", "(bytes after its gzip data)"),
    ("gzip", gzip.compress(b"one") + zlib.compress(b"two"), "(bytes after its gzip data)"),
    ("deflate", zlib.compress(b"one") + zlib.compress(b"two"), "(bytes after its deflate data)"),
    ("deflate", zlib.compress(b"one") + b"trailing junk", "(bytes after its deflate data)"),
])
def test_bytes_after_the_compressed_data_are_refused_saying_so_and_nothing_after_them_comes_out(coding, body, words):
    inflater, out = Inflater(coding), []
    with pytest.raises(BodyError) as refused:
        out.extend(inflater.feed(body))
    assert str(refused.value) == f"a compressed body that does not inflate {words}"
    assert b"".join(out) == b"one"


def test_a_second_gzip_member_is_read_and_counted():
    inflater = Inflater("gzip")
    assert b"".join(inflater.feed(gzip.compress(b"one") + gzip.compress(b"two"))) == b"onetwo" and inflater.members == 2

"""Channel payloads over a byte stream: records of a 4-byte big-endian length, then the payload.

This envelope is this library's, for capture files, pipes and sockets; it is not part
of the diverge specification. The end of the stream is the channel's finish. A length
over ``max_record`` (16 MiB by default) is refused before anything is allocated for it,
and a stream that ends inside a record says how many bytes were missing.

A record shorter than 2 KiB is handed out as ``bytes``: a copy costs less than a view
and does not keep the whole stream alive. One of 2 KiB or more is a read-only memoryview
into the stream (``split_records``; into its copy unless it is ``bytes``) or into the fed
``bytes`` chunk it lies whole inside (``RecordReader.feed``; one that spans chunks, or
comes from a bytearray or memoryview chunk, is ``bytes``). A reader reads one stream; a
feed or close from inside another feed or close of the same reader (a callback, a hook,
another thread) raises RuntimeError, and ``__init__`` runs once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._implementation import IMPLEMENTATION
from .errors import RecordTooLargeError, StreamError, TruncatedStreamError

if TYPE_CHECKING or IMPLEMENTATION == "python":
    from ._stream_py import DEFAULT_MAX_RECORD, RecordReader, record, split_records, write_record, write_records
else:
    from ._stream_c import DEFAULT_MAX_RECORD, RecordReader, record, split_records, write_record, write_records

__all__ = [
    "DEFAULT_MAX_RECORD", "RecordReader", "RecordTooLargeError", "StreamError", "TruncatedStreamError",
    "record", "split_records", "write_record", "write_records",
]

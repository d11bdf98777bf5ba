"""Writes ``corpus_eventstream/``: seeds for the event-stream fuzzer (``fuzz_eventstream.py``).

Each seed is three setting bytes (max_data, the RecentIds capacity, the chunking seed; see
``eventstream_check.py``), then a stream. Run from the repository root:
``python fuzz/make_eventstream_corpus.py``. The files are committed; rerun it when the cases change.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

CORPUS = Path(__file__).with_name("corpus_eventstream")

STREAMS = [
    # As MCP servers send them: the TypeScript SDK (LF), sse-starlette (CRLF), a priming event.
    b'event: message\nid: 1\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n',
    b'event: message\r\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\r\n\r\n',
    b"id: prime-0\ndata:\n\n", b"id: p\nretry: 3000\n\n", b": ping\n\n",
    b"event: endpoint\ndata: /messages?session_id=abc\n\n",
    # The standard's rules and their edges.
    b"\xef\xbb\xbfdata: x\n\n", b"\xef\xbbdata: x\n\n", b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n",
    b"data: a\rdata: b\r\r", b"data: a\r\ndata: b\r\n\r\n", b"data: x\r\r", b"data\n\ndata:\n\ndata:  y\n\n",
    b"id: 1\n\nid: a\x00b\ndata: x\n\n", b"id\ndata: a\n\n",
    b"retry: " + b"9" * 5000 + b"\n", b"retry: " + b"0" * 4400 + b"5\n", b"retry: 12a\nretry: -1\nretry:\n",
    b"event: x\n\ndata: after\n\n", b"event:\ndata: a\n\nevent: message\ndata: b\n\n",
    b"".join(b"event: e\ndata: %d\n\n" % n for n in range(20)),
    # Replays and long lines.
    b"id: 1\ndata: a\n\nid: 1\ndata: a\n\nid: 2\ndata: b\n\nid: 3\ndata: c\n\nid: 1\ndata: a\n\n",
    b"data: " + b"x" * 300 + b"\n\ndata: ok\n\n", b"id: " + b"i" * 300 + b"\ndata: y\n\n",
    b"event: " + b"e" * 300 + b"\ndata: z\n\n", b": " + b"c" * 300 + b"\n" + b"w" * 300 + b"\ndata: ok\n\n",
    b"retry: " + b"1" * 300 + b"\nretry: " + b"0" * 300 + b"7\n",
    b"data: 0123456789\ndata: 0123456789\n\n", b"data: never dispatched",
]
SETTINGS = [(7, 0, 0), (3, 5, 1), (4, 2, 2), (5, 3, 3), (0, 4, 4), (6, 1, 5)]


def main() -> None:
    CORPUS.mkdir(exist_ok=True)
    for index, stream in enumerate(STREAMS):
        seed = bytes(SETTINGS[index % len(SETTINGS)]) + stream
        (CORPUS / hashlib.sha256(seed).hexdigest()[:16]).write_bytes(seed)


if __name__ == "__main__":
    main()

"""Realistic mixed bodies (issue 44), beside peer_cases' single-shape ones: what servers send, not one token kind.

Each body is a notification as an SDK writes it (the envelope kept), built from a seeded
random source so that every run and every revision reads the very same bytes:

- ``SMALL_TURNS``: ~180 B notifications by turns, progress with a message and a logging line
  (what a consumer sees most), and ``PROGRESS_100`` beside them in peer_cases;
- ``RECORDS_64K``, ``METRICS_64K``, ``TRACEBACKS_64K``: issue 44's three ~64 KB logging
  notifications (records with names, e-mail addresses, ISO dates, tags, floats, booleans,
  nulls and nested objects; a metric series of timestamps and 4-decimal floats; tracebacks
  with escapes and non-ASCII text);
- ``TOOL_RESULT_64K``: a tool's result whose text content is JSON text (escaped quotes throughout);
- ``BLOBS_64K``: resource contents, base64 blobs with their URIs and MIME types;
- ``TREE_MIXED_64K``: a deep tree whose nodes carry strings, numbers and literals.
"""

import base64
import random
from typing import Any

import orjson

_RANDOM = random.Random(44)
_NAMES = ["Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret", "Dennis", "Frances", "Edsger", "Søren", "Zoë", "José"]
_WORDS = ["alpha", "beta", "gamma", "delta", "request", "cache", "miss", "retry", "timeout", "queue", "shard", "lease"]


def _logging(data: Any, logger: str = "app") -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                         "params": {"level": "info", "logger": logger, "data": data}})


def _record(index: int) -> dict[str, Any]:
    name = _RANDOM.choice(_NAMES)
    return {
        "id": index, "user": f"{name} {_RANDOM.choice(_NAMES)}", "email": f"{name.lower()}.{index}@example.org",
        "at": f"2026-12-{1 + index % 28:02d}T{index % 24:02d}:{index % 60:02d}:{(index * 7) % 60:02d}.{index % 1000:03d}Z",
        "tags": _RANDOM.sample(_WORDS, 3), "score": round(_RANDOM.uniform(0, 1000), 3), "active": index % 3 != 0,
        "manager": None if index % 4 else index - 1,
        "address": {"city": _RANDOM.choice(["Oslo", "Zürich", "Lyon", "Kyoto"]), "zip": f"{_RANDOM.randrange(10**5):05d}"},
    }


def _records(size: int) -> bytes:
    records: list[dict[str, Any]] = []
    while len(_logging({"records": records})) < size:
        records.append(_record(len(records)))
    return _logging({"records": records[:-1]}, "db")


def _metrics(size: int) -> bytes:
    points: list[list[Any]] = []
    while len(_logging({"series": "latency_ms", "points": points})) < size:
        points.extend([1767225600 + 15 * len(points) + k, round(_RANDOM.uniform(0, 250), 4)] for k in range(64))
    return _logging({"series": "latency_ms", "points": points[:-64]}, "metrics")


def _tracebacks(size: int) -> bytes:
    frames: list[str] = []
    while True:
        i = len(frames)
        frames.append(
            f'Traceback (most recent call last):\n  File "/srv/app/handlers/{_RANDOM.choice(_WORDS)}.py", line {100 + i}, in handle\n'
            f'    raise ValueError(f"bad \\"{_RANDOM.choice(_NAMES)}\\"\\t→ {i}")\nValueError: bad "{_RANDOM.choice(_NAMES)}"\t→ {i} – état {i % 7}\n')
        body = _logging({"error": "".join(frames), "count": i}, "worker")
        if len(body) >= size:
            return _logging({"error": "".join(frames[:-1]), "count": i - 1}, "worker")


def _tool_result(size: int) -> bytes:
    rows: list[dict[str, Any]] = []
    while True:
        rows.append(_record(len(rows)))
        text = orjson.dumps({"rows": rows}).decode()
        body = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/tools/result", "params": {
            "content": [{"type": "text", "text": text}], "structuredContent": {"rows": len(rows)}, "isError": False}})
        if len(body) >= size:
            return body


def _blobs(size: int) -> bytes:
    contents: list[dict[str, Any]] = []
    while len(orjson.dumps(contents)) < size - 200:
        contents.append({"uri": f"file:///srv/assets/{len(contents)}.png", "mimeType": "image/png",
                         "blob": base64.b64encode(_RANDOM.randbytes(_RANDOM.randrange(600, 4000))).decode()})
    return orjson.dumps({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"contents": contents}})


def _tree(nodes: int) -> bytes:
    count = [0]

    def node(depth: int) -> dict[str, Any]:
        count[0] += 1
        made: dict[str, Any] = {"name": f"{_RANDOM.choice(_WORDS)}-{count[0]}", "size": _RANDOM.randrange(10**6),
                                "ratio": round(_RANDOM.random(), 4), "leaf": depth == 0, "owner": None}
        if depth and count[0] < nodes:
            made["children"] = [node(depth - 1) for _ in range(3)]
        return made
    return orjson.dumps({"jsonrpc": "2.0", "method": "notifications/tree", "params": {"root": node(7)}})


SMALL_TURNS = [
    orjson.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
        "progressToken": "tok-1234567890", "progress": 512, "total": 1024, "message": "Downloading layer sha256:abcdef0123456789"}}),
    orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {
        "level": "info", "logger": "build", "data": "step 7/12: compiled 48 modules in 3.2 s (cache hit 91%)"}}),
]
RECORDS_64K = _records(65536)
METRICS_64K = _metrics(65536)
TRACEBACKS_64K = _tracebacks(65536)
TOOL_RESULT_64K = _tool_result(65536)
BLOBS_64K = _blobs(65536)
TREE_MIXED_64K = _tree(700)

MIXED_64K = [("records 64 KB", RECORDS_64K), ("metric series 64 KB", METRICS_64K), ("tracebacks 64 KB", TRACEBACKS_64K),
             ("tool result with JSON text 64 KB", TOOL_RESULT_64K), ("base64 blobs 64 KB", BLOBS_64K),
             ("mixed deep tree 64 KB", TREE_MIXED_64K)]
"""(label, body) of each mixed 64 KB shape; the first three are issue 44's logging notifications."""

"""The cases measured against the peers: this project's call, bare orjson and msgspec, on the same payloads.

Shared by ``test_peers.py``/``test_decode_lazy.py`` (pytest-benchmark) and ``instructions.py``
(callgrind instruction counts). msgspec is optional: without it its side is None, and
the benchmarks skip it rather than fake it.
"""

# No "from __future__ import annotations": msgspec reads the local Structs' annotations as objects.

import base64
import importlib
import json
import random
from collections.abc import Callable
from itertools import cycle
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

import orjson

from diverge_codec import _bench
from mixed_cases import MIXED_64K, SMALL_TURNS

try:
    import msgspec
except ImportError:  # the peer is optional
    msgspec = None


def _notification_of(size: int, token: Any = "tok-1234567890", total: bool = True) -> dict[str, Any]:
    """A progress notification whose JSON is exactly size bytes (the message padded)."""
    notification = {"method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 512, **({"total": 1024} if total else {}), "message": ""}}
    notification["params"]["message"] = "m" * (size - len(orjson.dumps(notification)))
    assert len(orjson.dumps(notification)) == size
    return notification


PROGRESS = orjson.dumps(_bench.PROGRESS)  # ~180 B, the envelope kept, as the SDKs send it
LINES_64K = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {
    "level": "info", "logger": "app", "data": {"lines": [f"line {i} of the log, with some words in it" for i in range(1449)]}}})
ITEMS_64K = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/resources/list", "params": {
    "items": [{"id": i, "name": f"item-{i}", "size": i * 37, "ok": i % 2 == 0, "tags": ["a", "bb"]} for i in range(905)]}})
BLOB_64K = _bench.RAW_64K  # one 64 KB string: the least a parser has to build
ENCODE_142 = _notification_of(142)


def _tree(spine: int) -> dict[str, Any]:
    """A spine of nodes, each with a 15-node subtree beside the next: nesting twice the spine deep."""
    count = [0]

    def node(depth: int, spine: int) -> dict[str, Any]:
        count[0] += 1
        made: dict[str, Any] = {"id": count[0]}
        if spine:
            made["name"] = f"n{count[0]}"
            made["kids"] = [node(3, 0)] + ([node(0, spine - 1)] if spine > 1 else [])
        elif depth:
            made["kids"] = [node(depth - 1, 0), node(depth - 1, 0)]
        return made
    return node(0, spine)


# Issue 25's shapes, each ~64 KB: numbers, strings dense with escapes, one base64 string, a deep tree.
_RANDOM = random.Random(25)
NUMBERS_64K = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/metrics", "params": {
    "name": "cpu", "t": [1767225600 + i * 15 for i in range(3400)], "v": [round(_RANDOM.uniform(0, 100), 4) for i in range(3400)]}})
ESCAPED_64K = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {
    "level": "error", "logger": "worker", "data": "".join(
        f'Traceback (most recent call last):\n  File "/srv/app/handlers/{i % 7}.py", line {100 + i}, in handle\n'
        f'    raise ValueError("bad \\"value\\"\\t{i}")\nValueError: bad "value"\t{i}\n' for i in range(372))}})
BASE64_64K = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {
    "uri": "file:///srv/data.bin", "mimeType": "application/octet-stream", "blob": base64.b64encode(_RANDOM.randbytes(48000)).decode()}})
TREE_64K = json.dumps({"jsonrpc": "2.0", "method": "notifications/tree", "params": {"root": _tree(238)}},
                      separators=(",", ":")).encode()  # orjson writes 254 levels at most; this is ~480
# Issue 35's shape: text with an escape every ~8 bytes (tabs, Windows paths, quoted words), which
# never runs 32 bytes without a special byte.
DENSE_64K = orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {
    "level": "warning", "logger": "build", "data": "".join(
        f'C:\\Users\\builder\\work{i % 13}\\source\\module{i % 9}.py\tline {i}\t"done"\tcolumn {i % 80}\n'
        for i in range(880))}})
PROGRESS_100 = orjson.dumps(_notification_of(100, 7, total=False))
BEGUN_4 = orjson.dumps({"secrets": {f"SECRET_{i}": ("fixed", "rotating")[i % 2] for i in range(4)}})
BEGUN_64 = orjson.dumps({"secrets": {f"SECRET_NUMBER_{i}": ("fixed", "rotating")[i % 2] for i in range(64)}})
INACTIVE = orjson.dumps(_bench.VALUES)


def _msgspec_decoders() -> dict[str, Any]:
    """msgspec's typed decoders: a Struct union tagged by method; method with raw params; typed and Any dicts."""
    Struct, Raw = msgspec.Struct, msgspec.Raw

    class ProgressParams(Struct, omit_defaults=True):
        progressToken: Union[str, int]
        progress: float
        total: Optional[float] = None
        message: Optional[str] = None

    class LoggingParams(Struct, omit_defaults=True):
        level: str
        data: Any
        logger: Optional[str] = None

    class ItemsParams(Struct):
        items: list[dict[str, Any]]

    class Progress(Struct, tag_field="method", tag="notifications/progress"):
        params: ProgressParams
        jsonrpc: Optional[str] = None

    class Logging(Struct, tag_field="method", tag="notifications/message"):
        params: LoggingParams
        jsonrpc: Optional[str] = None

    class Items(Struct, tag_field="method", tag="notifications/resources/list"):
        params: ItemsParams
        jsonrpc: Optional[str] = None

    class Other(Struct, tag_field="method", tag="x"):
        params: dict[str, Any]
        jsonrpc: Optional[str] = None

    class Routed(Struct):
        method: str
        params: Raw = Raw(b"null")

    class Registration(Struct):
        secrets: dict[str, Literal["fixed", "rotating"]] = {}

    return {
        "typed": msgspec.json.Decoder(Union[Progress, Logging, Items, Other]),
        "routed": msgspec.json.Decoder(Routed),
        "begun": msgspec.json.Decoder(Registration),
        "values": msgspec.json.Decoder(dict[str, Any]),
        "encoder": msgspec.json.Encoder(),
    }


def msgspec_encode_peer() -> tuple[Any, Any]:
    """What a msgspec user encodes ENCODE_142 from: an Encoder and a Struct typed after the notification.

    The Struct instance is decoded from the same JSON, as our frame is. omit_defaults and
    numbers typed int or float, so that it writes the very bytes ours writes after the tag.
    """
    Struct = msgspec.Struct

    class ProgressParams(Struct, omit_defaults=True):
        progressToken: Union[str, int]
        progress: Union[int, float]
        total: Optional[Union[int, float]] = None
        message: Optional[str] = None

    class Progress(Struct, omit_defaults=True, tag_field="method", tag="notifications/progress"):
        params: ProgressParams
        jsonrpc: Optional[str] = None

    body = orjson.dumps(ENCODE_142)
    encoder, struct = msgspec.json.Encoder(), msgspec.json.decode(body, type=Progress)
    assert encoder.encode(struct) == body
    return encoder, struct


APPENDED = bytearray()


def appending(write: Callable[[], Any]) -> Callable[[], None]:
    """write() appending to APPENDED, emptied past 64 KB as a sender clears its buffer: each side pays the same check."""
    def step() -> None:
        write()
        if len(APPENDED) > 65536:
            del APPENDED[:]
    return step


def _dict_read(notification: dict[str, Any]) -> tuple[Any, Any]:
    return notification["method"], notification["params"]


def _struct_read(notification: Any) -> tuple[Any, Any]:
    return type(notification), notification.params


def _by_turns(function: Callable[[bytes], Any], bodies: list[bytes]) -> Callable[[], Any]:
    """function of each body by turns, a call each: every side pays the same turn."""
    turn = cycle(bodies).__next__
    return lambda: function(turn())


@dataclass(frozen=True)
class PeerCase:
    """One measurement: ours against bare orjson, and msgspec where it is installed."""

    name: str
    orjson: Callable[[], Any]
    ours: Callable[[], Any]
    msgspec: Optional[Callable[[], Any]]
    target: Optional[float] = None
    """The ratio to orjson in instructions that issue 15 or 25 asks for, where it sets one."""
    time_target: Optional[float] = None
    """The ratio to orjson in CPU time that issue 35 asks for, where it sets one (benchmarks/cpu_time.py)."""


def peer_cases(implementation: str = "cython") -> list[PeerCase]:
    suffix = "c" if implementation == "cython" else "py"
    mn = importlib.import_module(f"diverge_codec._mcp_notifications_{suffix}")
    tb = importlib.import_module(f"diverge_codec._tools_begin_{suffix}")
    peer = _msgspec_decoders() if msgspec is not None else None

    def of(key: str, body: bytes) -> Optional[Callable[[], Any]]:
        return None if peer is None else (lambda: peer[key].decode(body))

    frame_142 = mn.decode(b"\x00" + orjson.dumps(ENCODE_142))
    cases = []
    for label, body in (("progress 100 B", PROGRESS_100), ("progress ~180 B", PROGRESS), ("log lines 64 KB", LINES_64K),
                        ("items 64 KB", ITEMS_64K)):
        cases.append(PeerCase(f"notification decode, {label}", lambda body=body: orjson.loads(body),
                              lambda payload=b"\x00" + body: mn.decode(payload), of("typed", body),
                              time_target=0.85 if implementation == "cython" and "B" in label and "KB" not in label else None))
    turns = [b"\x00" + body for body in SMALL_TURNS]
    cases.append(PeerCase("notification decode, ~180 B by turns (progress, log line)", _by_turns(orjson.loads, SMALL_TURNS),
                          _by_turns(mn.decode, turns), None if peer is None else _by_turns(peer["typed"].decode, SMALL_TURNS),
                          time_target=0.85 if implementation == "cython" else None))
    # What a consumer does next: route by method and read the params (decode leaves the members' dict
    # unbuilt; .params reads past it, .notification makes it). msgspec's method is its Struct's class.
    read = [("method and .params", lambda frame: (frame.method, frame.params)),
            (".notification's params", lambda frame: (frame.method, frame.notification["params"]))]
    for label, read_frame in read:
        cases.append(PeerCase(f"notification decode, then {label}, ~180 B by turns",
                              _by_turns(lambda body: _dict_read(orjson.loads(body)), SMALL_TURNS),
                              _by_turns(lambda payload, read_frame=read_frame: read_frame(mn.decode(payload)), turns),
                              None if peer is None else _by_turns(lambda body: _struct_read(peer["typed"].decode(body)), SMALL_TURNS)))
    for label, body in MIXED_64K:
        cases.append(PeerCase(f"notification decode, {label}", lambda body=body: orjson.loads(body),
                              lambda payload=b"\x00" + body: mn.decode(payload), of("typed", body)))
    for label, body in (("progress 100 B", PROGRESS_100), ("progress ~180 B", PROGRESS)):
        cases.append(PeerCase(f"LazyNotification.materialize, {label}", lambda body=body: orjson.loads(body),
                              mn.decode_lazy(b"\x00" + body).materialize, of("typed", body),
                              time_target=1.0 if implementation == "cython" else None))
    for label, body, target in (("progress ~180 B", PROGRESS, 0.35), ("log lines 64 KB", LINES_64K, 0.2),
                                ("items 64 KB", ITEMS_64K, 0.2), ("one 64 KB string", BLOB_64K, 0.2),
                                ("numbers 64 KB", NUMBERS_64K, 0.2), ("escaped text 64 KB", ESCAPED_64K, 0.2),
                                ("base64 64 KB", BASE64_64K, 0.2), ("deep tree 64 KB", TREE_64K, 0.2),
                                ("escape-dense text 64 KB", DENSE_64K, None)):
        # issue 35, in CPU time: 0.5x on escape-dense text, 0.35x on every other 64 KB shape
        time_target = (0.5 if "dense" in label else 0.35) if "64 KB" in label else None
        if implementation != "cython":  # issue 25: the pure core at most 1.2x at 64 KB (it parses with orjson)
            target = time_target = 1.2 if "64 KB" in label else None
        cases.append(PeerCase(f"route by method (decode_lazy), {label}", lambda body=body: orjson.loads(body),
                              lambda payload=b"\x00" + body: mn.decode_lazy(payload), of("routed", body), target,
                              time_target))
    for index, (label, body) in enumerate(MIXED_64K):  # issue 44: the three logging bodies at most 0.20x
        cases.append(PeerCase(f"route by method (decode_lazy), {label}", lambda body=body: orjson.loads(body),
                              lambda payload=b"\x00" + body: mn.decode_lazy(payload), of("routed", body),
                              time_target=(0.2 if index < 3 else 0.35) if implementation == "cython" else 1.2))
    for label, tag, body, key in (("Begun decode, 4 secrets", 0, BEGUN_4, "begun"), ("Begun decode, 64 secrets", 0, BEGUN_64, "begun"),
                                  ("Inactive decode", 3, INACTIVE, "values")):
        cases.append(PeerCase(f"tools-begin {label}", lambda body=body: orjson.loads(body),
                              lambda payload=bytes([tag]) + body: tb.decode(payload), of(key, body)))
    encoder, struct = msgspec_encode_peer() if msgspec is not None else (None, None)
    cases.append(PeerCase("notification encode, 142 B", lambda: orjson.dumps(ENCODE_142), lambda: mn.encode(frame_142),
                          None if peer is None else (lambda: encoder.encode(struct))))
    cases.append(PeerCase("notification encode_into (appends), 142 B",
                          appending(lambda: APPENDED.extend(orjson.dumps(ENCODE_142))),
                          appending(lambda: mn.encode_into(frame_142, APPENDED)),
                          None if peer is None else appending(lambda: encoder.encode_into(struct, APPENDED, -1))))
    return cases

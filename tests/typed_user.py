"""A typed user of the public API, checked by mypy --strict and pyright strict (tests/test_typing.py).

Never imported by the tests: only type-checked. Each ``reveal``-free line states a type the
user relies on; a checker that infers something else, or ``Any``, fails the test.
"""

from __future__ import annotations

from typing import Literal, assert_type

import diverge_codec
from diverge_codec import ErrorData, Mode, ProviderError, mcp_notifications, stream, tools_begin
from diverge_codec.errors import DecodeError, RemoteProtocolError
from diverge_codec.cli.doctor import report


def implementation() -> tuple[Literal["cython", "python"], str, str]:
    return diverge_codec.IMPLEMENTATION, diverge_codec.IMPLEMENTATION_REASON, diverge_codec.JSON_BACKEND


def secrets_of(payload: bytes) -> dict[str, Mode]:
    frame = tools_begin.decode(payload)
    match frame:
        case tools_begin.Begun(secrets=secrets):
            return dict(secrets)
        case tools_begin.Inactive(values=values):
            return {name: Mode.ROTATING for name in values}
        case tools_begin.Active():
            return {}
        case tools_begin.Error(error=error):
            assert_type(error, ProviderError)
            return {}


def encoded() -> list[bytes]:
    return [
        tools_begin.encode(tools_begin.Begun({"api_key": "fixed", "session": Mode.ROTATING})),
        tools_begin.encode(tools_begin.ACTIVE),
        tools_begin.encode(tools_begin.Error(ProviderError("refused", argument="region"))),
        mcp_notifications.encode(mcp_notifications.Error(ErrorData(-32000, "unreachable"))),
        mcp_notifications.frame_notification(b'{"method":"notifications/progress"}'),
    ]


def method_of(payload: bytes) -> str | None:
    frame = mcp_notifications.decode(payload)
    if isinstance(frame, mcp_notifications.Notification):
        return frame.method
    assert_type(frame.error, ErrorData)
    return None


def doctor_lines() -> list[tuple[str, str]]:
    return report()


def checked_frames(payloads: list[bytes]) -> list[tools_begin.Frame]:
    from diverge_codec.sequence import McpNotificationsChecker, State, ToolsBeginChecker

    checker = ToolsBeginChecker()
    frames = [checker.payload(payload) for payload in payloads]
    assert_type(checker.finish(), State)
    assert_type(checker.declaration, "dict[str, Mode] | None")
    notes = McpNotificationsChecker()
    assert_type(notes.payload(b"\x00{}"), mcp_notifications.Frame)
    return frames


def violation(error: RemoteProtocolError) -> tuple[str, int | None, str]:
    from diverge_codec.sequence import Rule

    assert_type(error.rule, Rule)
    return error.rule.value, error.index, error.variant


def decode_failure(error: DecodeError) -> tuple[int | None, str | None, int | None]:
    return error.tag, error.reason, error.index


def stream_failure(error: stream.RecordTooLargeError | stream.TruncatedStreamError) -> int:
    if isinstance(error, stream.RecordTooLargeError):
        return error.length - error.limit
    assert_type(error.inside, str)
    return error.missing


def records(chunks: list[bytes]) -> list[bytes | memoryview]:
    reader = stream.RecordReader()
    found: list[bytes | memoryview] = []
    for chunk in chunks:
        found += reader.feed(chunk)
    reader.close()
    assert_type(reader.records, int)
    return found + stream.split_records(b"")


def proxy_frames() -> list[bytes]:
    from diverge_codec.proxy import Phase, ToolContainerProxy

    proxy = ToolContainerProxy()
    step = proxy.begun({"api_key": "fixed"})
    assert_type(step.send, list[tools_begin.Frame])
    assert_type(proxy.phase, Phase)
    assert_type(proxy.periods, int)
    return [tools_begin.encode(frame) for frame in step.send]


def outbox_counts() -> dict[str, int]:
    from diverge_codec.relay import Outbox, relay_frame

    outbox = Outbox(1024)
    outbox.offer(relay_frame(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') or b"")
    assert_type(outbox.dropped + outbox.accepted + outbox.high_water, int)
    return outbox.stats()


async def embedded_frames(argv: list[str]) -> tuple[list[mcp_notifications.Frame], list[bytes]]:
    """``async for`` over a ``Relay`` gives the codec's frames, or payload bytes with ``payloads=True``."""
    from diverge_codec.relay import Answer, Command, Relay, RelayOptions

    frames: list[mcp_notifications.Frame] = []
    async with Relay(Command(argv)) as relay:
        assert_type(relay, Relay[mcp_notifications.Frame])
        async for frame in relay:
            assert_type(frame, mcp_notifications.Frame)
            frames.append(frame)
    async with Relay(Command(argv), RelayOptions(calls=[("go", {})]), payloads=True) as raw:
        payloads = [payload async for payload in raw]
        assert_type(await raw.answer("tools/call go"), Answer)
    assert_type(payloads, list[bytes])
    return frames, payloads

"""The front door: a relay inside a program, as an ``async with`` block that yields frames.

::

    async with Relay(Command(["python", "server.py"]), RelayOptions(calls=[("echo", {})])) as relay:
        async for frame in relay:          # mcp_notifications.Notification or Error frames
            ...
        answer = await relay.answer("tools/call echo")
    relay.report                           # the report the CLI prints (RelayReport)

The server is a ``Command`` (a stdio server run as a child process: ``stdio.ServerRelay``) or a
``Remote`` (a URL, over Streamable HTTP or the older HTTP+SSE: ``streamable_http.HttpRelay``); both
run the one sans-IO session. Frames come from the relay's outbox as whole payloads (a
``channel.FrameSink``), never split again from channel bytes: ``payloads=True`` gives their bytes
instead of decoded frames. Backpressure is the channel's: while the program has not taken what it
was handed, new notifications wait in the outbox (``RelayOptions.outbox_bytes``), and what does not
fit is dropped and counted in the report; the server's reader never waits on the program.

The session takes its requests up front (``RelayOptions.requests`` and ``calls``, sent after the
handshake): ``answer(label)`` awaits the server's answer to one of them, ``answers`` holds every
answer so far. Leaving the block (at its end, on an error, or cancelled) shuts the server down and
waits until it and what it left behind are ended; an error or a cancellation skips the grace.
Each ``Relay`` holds its own state: many run side by side on one event loop.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, TypeVar, Union, cast, overload

from .. import mcp_notifications
from .channel import ChannelRelay, ChannelWriter, FrameSink, RelayOptions
from .frozen import Frozen, url_shown
from .session import RelayReport

if TYPE_CHECKING:
    from .network import NetworkPolicy, TokenProvider

__all__ = ["Answer", "Command", "Relay", "RelayEnded", "Remote", "Server"]


@dataclass(init=False, repr=False, eq=False)  # frozen, ==, hash: Frozen's (no code generated at start-up)
class Command(Frozen):
    """A stdio server: the command to start (POSIX), its environment (None: the program's) and folder."""

    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    def __init__(self, argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | None = None) -> None:
        vars(self).update(argv=argv, env=env, cwd=cwd)

    def __repr__(self) -> str:
        """The program and how many arguments, the environment's names: an argument or a value may be a secret."""
        program = self.argv[0] if isinstance(self.argv, (list, tuple)) and self.argv else None
        env = None if self.env is None else sorted(self.env)
        return f"Command(program={program!r}, arguments={max(len(self.argv) - 1, 0)}, env={env!r}, cwd={self.cwd!r})"


@dataclass(init=False, repr=False, eq=False)
class Remote(Frozen):
    """A remote server at ``url``: ``headers`` sent with every request, ``transport`` one of ``auto``,
    ``streamable-http``, ``sse``; ``token`` an async callable giving a bearer token (awaited at start and
    again on a 401), ``network`` the TLS and proxy policy (None: the environment's, as the CLI)."""

    url: str
    headers: Sequence[tuple[str, str]] = ()
    transport: str = "auto"
    token: TokenProvider | None = None
    network: NetworkPolicy | None = None

    def __init__(self, url: str, headers: Sequence[tuple[str, str]] = (), transport: str = "auto",
                 token: TokenProvider | None = None, network: NetworkPolicy | None = None) -> None:
        vars(self).update(url=url, headers=headers, transport=transport, token=token, network=network)

    def __repr__(self) -> str:
        """The URL without its user, password or query, the headers' names: their values may be credentials."""
        names = [header[0] for header in self.headers]
        token = None if self.token is None else "<provider>"
        return (f"Remote(url={url_shown(self.url)!r}, headers={names!r}, transport={self.transport!r}, "
                f"token={token}, network={self.network!r})")


Server = Union[Command, Remote]

Item = TypeVar("Item", mcp_notifications.Frame, bytes)
"""What ``async for`` gives: the codec's frames, or their payload bytes (``payloads=True``)."""


if TYPE_CHECKING:
    class Answer(NamedTuple):
        """The server's answer to one of the relay's requests: its label (``tools/call NAME`` or the method) and the
        JSON-RPC response (None: it timed out or was lost with its session)."""

        label: str
        message: dict[str, Any] | None
else:  # the same class, made without typing.NamedTuple: its string annotations were compiled at import (issue 44)
    Answer = collections.namedtuple("Answer", ("label", "message"))
    Answer.__doc__ = """The server's answer to one of the relay's requests: its label (``tools/call NAME`` or the method) and
    the JSON-RPC response (None: it timed out or was lost with its session)."""
    Answer.__annotations__ = {"label": "str", "message": "dict[str, Any] | None"}


class RelayEnded(LookupError):
    """The relay ended without the answer awaited (the request was never made, or the server went first)."""


class Relay(Generic[Item]):
    """One server relayed inside the program: ``async with``, then ``async for`` its frames (see the module).
    ``Relay[Frame]``, or ``Relay[bytes]`` with ``payloads=True``: what ``async for`` gives is typed."""

    @overload
    def __init__(self: Relay[mcp_notifications.Frame], server: Server, options: RelayOptions = ..., *,
                 payloads: Literal[False] = ..., on_answer: Callable[[Answer], None] | None = ...,
                 channel: ChannelWriter | None = ...) -> None: ...

    @overload
    def __init__(self: Relay[bytes], server: Server, options: RelayOptions = ..., *, payloads: Literal[True],
                 on_answer: Callable[[Answer], None] | None = ..., channel: ChannelWriter | None = ...) -> None: ...

    def __init__(self, server: Server, options: RelayOptions = RelayOptions(), *, payloads: bool = False,
                 on_answer: Callable[[Answer], None] | None = None, channel: ChannelWriter | None = None) -> None:
        if not isinstance(server, (Command, Remote)):
            raise TypeError("server must be a Command or a Remote")
        self.server: Server = server
        self.options: RelayOptions = options
        self.payloads: bool = payloads
        self.channel: ChannelWriter | None = channel
        """Where the mcp-notifications channel goes as stream records (``channel.open_writer``), instead of frames
        to iterate: the CLI's way, and a proxy's that forwards the channel as it is. Closed at the end."""
        self.answers: list[Answer] = []
        """Every answer so far, in the order they came."""
        self.on_answer: Callable[[Answer], None] | None = on_answer
        """Called with each answer as it comes (set before the block is entered)."""
        self._waiting: dict[str, list[asyncio.Future[Answer]]] = {}
        self._taken: dict[str, int] = {}  # answers per label handed out by ``answer``
        self._sink: FrameSink | None = None
        self._driver: ChannelRelay | None = None
        self._task: asyncio.Task[RelayReport] | None = None

    @property
    def driver(self) -> ChannelRelay:
        """The transport's driver (``stdio.ServerRelay`` or ``streamable_http.HttpRelay``), once started."""
        if self._driver is None:
            raise RuntimeError("the relay is not started: use it in 'async with'")
        return self._driver

    @property
    def running(self) -> bool:
        """Entered and not yet ended."""
        return self._task is not None and not self._task.done()

    @property
    def dropped(self) -> int:
        """Notifications dropped so far, for a live count (the report counts the outbox's drops only at the end)."""
        return sum(self.report.dropped.values()) + self.driver.session.outbox.dropped

    @property
    def report(self) -> RelayReport:
        """The report, as the CLI prints it (``as_dict``); final once the block is left."""
        return self.driver.report

    async def __aenter__(self) -> Relay[Item]:
        if self._task is not None:
            raise RuntimeError("a Relay runs once")
        writer: ChannelWriter = self.channel if self.channel is not None else FrameSink()
        if isinstance(writer, FrameSink):
            self._sink = writer
        self._driver = _driver(self.server, writer, self.options)
        self._driver.session.on_answer = self._answered
        self._task = asyncio.create_task(self._run(self._driver))
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        self.shutdown()
        if kind is not None:
            self.shutdown()  # a second time: no grace on an error or a cancellation
        await self.wait()

    async def wait(self) -> RelayReport:
        """Until the relay ended by itself (or was shut down): its report. Cancelled, it still ends the server."""
        assert self._task is not None, "the relay is not started: use it in 'async with'"
        try:
            return await asyncio.shield(self._task)
        except asyncio.CancelledError:
            self.shutdown()
            self.shutdown()
            await asyncio.wait([self._task])  # the server ended before the cancellation goes on
            raise

    def shutdown(self, reason: str = "requested") -> None:
        """End the relay: the server is asked to end (called again: without the waits)."""
        self.driver.shutdown(reason)

    def __aiter__(self) -> AsyncIterator[Item]:
        return self.frames()

    async def frames(self) -> AsyncIterator[Item]:
        """Each notification the server sent, in order, as the codec's frame (``Notification``, or the one ``Error``
        frame for a server never reached), or its payload bytes with ``payloads=True``; ends with the relay."""
        sink = self._sink
        if sink is None:
            raise RuntimeError("no frames: the relay is not started, or writes a channel")
        while (payload := await sink.get()) is not None:
            yield cast(Item, payload if self.payloads else mcp_notifications.decode(payload))

    async def answer(self, label: str) -> Answer:
        """The next answer not yet awaited to the request labelled ``label`` (``tools/call NAME`` or a method);
        ``RelayEnded`` if the relay ends first."""
        taken = self._taken.get(label, 0)
        ready = [answer for answer in self.answers if answer.label == label]
        if len(ready) > taken:
            self._taken[label] = taken + 1
            return ready[taken]
        if self._task is None or self._task.done():
            raise RelayEnded(f"the relay ended with no answer to {label}")
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(label, []).append(future)
        return await future

    def _answered(self, label: str, message: dict[str, Any] | None) -> None:
        answer = Answer(label, message)
        self.answers.append(answer)
        waiters = self._waiting.get(label, [])
        while waiters:
            future = waiters.pop(0)
            if not future.done():  # a waiter cancelled meanwhile is passed over
                self._taken[label] = self._taken.get(label, 0) + 1
                future.set_result(answer)
                break
        if self.on_answer is not None:
            self.on_answer(answer)

    async def _run(self, driver: ChannelRelay) -> RelayReport:
        try:
            return await driver.run()
        finally:
            if self._sink is not None:
                self._sink.close()
            for label, waiters in self._waiting.items():
                for future in waiters:
                    if not future.done():
                        future.set_exception(RelayEnded(f"the relay ended with no answer to {label}"))
            self._waiting.clear()


def _driver(server: Server, sink: ChannelWriter, options: RelayOptions) -> ChannelRelay:
    """The transport's driver for ``server``, writing into ``sink``."""
    if isinstance(server, Command):
        from .stdio import ServerRelay

        env = dict(server.env) if server.env is not None else options.env
        return ServerRelay(list(server.argv), sink, dataclasses.replace(options, env=env, cwd=server.cwd or options.cwd))
    from .streamable_http import HttpRelay

    return HttpRelay(server.url, sink, options, server.headers, transport=server.transport, token=server.token,
                     network=server.network)

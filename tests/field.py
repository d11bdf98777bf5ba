"""The relay's field: a restartable MCP server process (``field_server.py``), a middlebox that forgets idle flows,
and one in-process relay run. Shared by ``test_relay_http_infra.py`` and ``benchmarks/relay_field.py``."""

from __future__ import annotations

import asyncio
import contextlib
import io
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from diverge_codec import stream
from diverge_codec.relay.channel import FileWriter, RelayOptions, exit_status
from diverge_codec.relay.streamable_http import HttpRelay
from diverge_codec.sequence import McpNotificationsChecker

SERVER = Path(__file__).resolve().parent / "field_server.py"


class FieldServer:
    """``field_server.py`` on one port for its whole life: ``kill`` it (SIGKILL, as a crash) and ``start`` it again
    there; a restarted server knows none of the old sessions."""

    def __init__(self, tick: float = 0.5) -> None:
        self.tick = tick
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        for _ in range(50):  # the port may linger a moment after a kill
            self.process = subprocess.Popen([sys.executable, str(SERVER), str(self.port), str(self.tick)],
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert self.process.stdout is not None
            line = self.process.stdout.readline()
            if line.strip():
                self.port = int(line)
                return
            self.process.wait()
            time.sleep(0.1)
        raise RuntimeError("the field server did not start")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def field_server(tick: float = 0.5) -> Iterator[FieldServer]:
    server = FieldServer(tick)
    server.start()
    try:
        yield server
    finally:
        server.kill()


@contextlib.asynccontextmanager
async def forgetful_middlebox(upstream: tuple[str, int], idle: float) -> AsyncIterator[int]:
    """A TCP forwarder (its port) that silently stops forwarding a flow idle for ``idle`` seconds, as a NAT or a
    firewall that forgets it: no reset, no close; what either side sends after that goes nowhere."""

    flows: set[asyncio.Task[Any]] = set()

    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        flows.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection(*upstream)
        except OSError:
            writer.close()
            return
        flow = {"last": time.monotonic(), "dropped": False}

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            while data := await source.read(65536):
                if time.monotonic() - flow["last"] > idle:
                    flow["dropped"] = True
                if flow["dropped"]:
                    continue  # forgotten: swallowed
                flow["last"] = time.monotonic()
                sink.write(data)
                await sink.drain()

        try:
            await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer), return_exceptions=True)
        except asyncio.CancelledError:
            pass  # the middlebox closes
        finally:
            writer.close()
            up_writer.close()
            flows.discard(task)

    server = await asyncio.start_server(forward, "127.0.0.1", 0)
    try:
        yield int(server.sockets[0].getsockname()[1])
    finally:
        server.close()
        for task in list(flows):
            task.cancel()
        await asyncio.gather(*flows, return_exceptions=True)


async def relay_run(url: str, verify: Any = None, **options: Any) -> tuple[dict[str, Any], list[Any], int]:
    """One relay in this loop: (its report, the channel's notifications' data, its exit status)."""
    out = _Kept()
    settings = {"grace": 0.5, "request_timeout": 30.0, "protocol": "2025-11-25", **options}
    relay = HttpRelay(url, FileWriter(out), RelayOptions(**settings), verify=verify)
    report = await relay.run()
    checker = McpNotificationsChecker()
    frames = [checker.payload(bytes(payload)) for payload in stream.split_records(out.getvalue())]
    data = [frame.notification["params"].get("data") for frame in frames if hasattr(frame, "notification")]
    return report.as_dict(), data, exit_status(report)


class _Kept(io.BytesIO):
    def close(self) -> None:  # the channel's finish: keep what was written
        pass


def later(seconds: float, action: Any) -> asyncio.Task[None]:
    """Run ``action`` (blocking: a process started or killed) in a thread after ``seconds``."""

    async def run() -> None:
        await asyncio.sleep(seconds)
        await asyncio.to_thread(action)
    return asyncio.ensure_future(run())

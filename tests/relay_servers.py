"""Small stdio MCP servers for the relay's tests, standard library only: ``python relay_servers.py MODE [ARG]``.

Each speaks just enough MCP (newline-delimited JSON-RPC) for one behaviour the relay
must handle. The TypeScript SDK's member order (``jsonrpc`` last) is used where a real
server would use it.

- ``basic [VERSION]``: a log line before the handshake, ``initialize`` answered with
  VERSION; ``tools/call`` sends three progress notifications with the call's token and
  a log line with the call's arguments, then answers; exits 0 on EOF.
- ``stubborn PIDFILE``: ignores SIGTERM, SIGINT and EOF, forks a child that does the
  same, writes both pids to PIDFILE, and logs forever.
- ``big SIZE``: after the handshake, one log notification of SIZE bytes of data; exits on EOF.
- ``killed COUNT``: COUNT notifications after the handshake, then SIGKILL to itself.
- ``exit CODE``: exits at once with CODE, reading nothing.
- ``flood COUNT``: COUNT notifications at once, before any handshake, then exits on EOF.
- ``trickle COUNT``: a notification, then waits for the relay's next message (any), COUNT times.
- ``refused``: a notification the channel refuses (a lone surrogate), then a valid one.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def send(obj: dict, *, jsonrpc_last: bool = True) -> None:
    message = {**obj, "jsonrpc": "2.0"} if jsonrpc_last else {"jsonrpc": "2.0", **obj}
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def log(data, level: str = "info") -> None:
    send({"method": "notifications/message", "params": {"level": level, "data": data}})


def requests():
    for line in sys.stdin:
        yield json.loads(line)


def handshake(version: str = "2025-11-25") -> None:
    for message in requests():
        if message.get("method") == "initialize":
            send({"id": message["id"], "result": {"protocolVersion": version, "capabilities": {"logging": {}},
                                                  "serverInfo": {"name": "test", "version": "0"}}})
            return


def basic(version: str = "2025-11-25") -> None:
    log("before the handshake")
    handshake(version)
    for message in requests():
        if message.get("method") == "tools/call":
            params = message["params"]
            token = params["_meta"]["progressToken"]
            for step in range(3):
                send({"method": "notifications/progress", "params": {"progressToken": token, "progress": step, "total": 3}})
            log({"tool": params["name"], "arguments": params["arguments"]})
            send({"id": message["id"], "result": {"content": [{"type": "text", "text": "done"}]}})


def stubborn(pidfile: str) -> None:
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    child = os.fork()
    if child == 0:
        while True:
            time.sleep(1)
    with open(pidfile, "w") as file:
        file.write(f"{os.getpid()} {child}\n")
    handshake()
    sys.stdin.read()  # to EOF, which it ignores
    count = 0
    while True:
        log(count)
        count += 1
        time.sleep(0.01)


def big(size: str) -> None:
    handshake()
    log("x" * int(size))
    sys.stdin.read()


def killed(count: str) -> None:
    handshake()
    for index in range(int(count)):
        log(index)
    os.kill(os.getpid(), signal.SIGKILL)


def flood(count: str) -> None:
    chunk = []
    for index in range(int(count)):
        chunk.append(json.dumps({"method": "notifications/message", "params": {"level": "info", "data": index},
                                 "jsonrpc": "2.0"}, separators=(",", ":")))
        if len(chunk) == 1000:
            sys.stdout.write("\n".join(chunk) + "\n")
            chunk = []
    sys.stdout.write("".join(line + "\n" for line in chunk))
    sys.stdout.flush()
    handshake()
    sys.stdin.read()


def trickle(count: str) -> None:
    """One notification per message from the relay (its handshake, its pings back): it paces itself."""
    handshake()
    for index in range(int(count)):
        log(index)
        send({"id": f"ping-{index}", "method": "ping"})
        for message in requests():
            if message.get("id") == f"ping-{index}":
                break
    sys.stdin.read()


def refused() -> None:
    handshake()
    sys.stdout.write('{"method":"notifications/message","params":{"level":"info","data":"\\ud83d"},"jsonrpc":"2.0"}\n')
    sys.stdout.write('{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"\\ud83d"}}\n')
    log("valid")
    sys.stdin.read()


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    if mode == "exit":
        sys.exit(int(args[0]))
    {"basic": basic, "stubborn": stubborn, "big": big, "killed": killed, "flood": flood, "trickle": trickle,
     "refused": refused}[mode](*args)

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
- ``orphan PIDFILE``: after the handshake, logs once, forks a child that keeps stdout open and sleeps,
  writes the child's pid, and exits 0.
- ``escape PIDFILE [clean]``: after the handshake, forks a child that leaves the process group
  (``setsid``) with stdout sent to /dev/null and sleeps (``clean``: and execs a sleeper with an
  empty environment); writes the child's pid; exits on EOF.
- ``pings COUNT``: reads nothing, ever: COUNT ``ping`` requests, then a log line, then waits.
- ``silent``: answers ``initialize`` and never a call; logs each ``notifications/cancelled`` it gets.
- ``failing``: answers each call with a tool result that has ``isError: true``.
- ``odd-lines``: lines of ``\x0b``, ``\x0c`` and JSON whitespace, then a log line, before the handshake.
- ``exact SIZE``: a notification line of exactly SIZE bytes with no ``jsonrpc`` member, before the handshake.
- ``pipe-size``: after the handshake, logs the size of the pipe its stdout is (Linux's F_GETPIPE_SZ).
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


def orphan(pidfile: str) -> None:
    handshake()
    log("leaving a child behind")
    child = os.fork()
    if child == 0:
        time.sleep(600)
        os._exit(0)
    with open(pidfile, "w") as file:
        file.write(f"{child}\n")
    os._exit(0)


def escape(pidfile: str, how: str = "setsid") -> None:
    handshake()
    child = os.fork()
    if child == 0:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 1)
        if how == "clean":
            os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)"], {})
        time.sleep(600)
        os._exit(0)
    with open(pidfile, "w") as file:
        file.write(f"{child}\n")
    sys.stdin.read()


def pings(count: str) -> None:
    ping = '{"jsonrpc":"2.0","id":%d,"method":"ping"}\n'
    for start in range(0, int(count), 1000):
        sys.stdout.write("".join(ping % index for index in range(start, min(start + 1000, int(count)))))
    log("all pinged")
    time.sleep(600)


def silent() -> None:
    handshake()
    for message in requests():
        if message.get("method") == "notifications/cancelled":
            log({"cancelled": message["params"]["requestId"], "reason": message["params"]["reason"]})


def failing() -> None:
    handshake()
    for message in requests():
        if message.get("method") == "tools/call":
            send({"id": message["id"], "result": {"content": [{"type": "text", "text": "no such tool"}], "isError": True}})


def odd_lines() -> None:
    sys.stdout.write("\x0b\n\x0c\n \t\r\n\n")
    log("after")
    handshake()
    sys.stdin.read()


def exact(size: str) -> None:
    head, tail = '{"method":"notifications/message","params":{"level":"info","data":"', '"}}'
    sys.stdout.write(head + "x" * (int(size) - len(head) - len(tail)) + tail + "\n")
    sys.stdout.flush()
    handshake()
    sys.stdin.read()


def pipe_size() -> None:
    import fcntl

    handshake()
    log(fcntl.fcntl(1, 1032))  # F_GETPIPE_SZ
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
     "refused": refused, "orphan": orphan, "escape": escape, "pings": pings, "silent": silent, "failing": failing,
     "odd-lines": odd_lines, "exact": exact, "pipe-size": pipe_size}[mode](*args)

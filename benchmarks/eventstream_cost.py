"""CPU per event of the event-stream parsers: compiled, pure, and the parser before them (a git revision).

Events as MCP servers send them (``event: message``, an ``id``, one ``data`` line of JSON), about
185 B and 1.1 KB each, a few MiB of them cut in 64 KiB chunks; each parser reads the same chunks,
the runs interleaved, CPU time by ``time.process_time``, the median of ``--rounds``.

    python benchmarks/eventstream_cost.py [--old REVISION] [--rounds 7] [--mb 4]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from diverge_codec import _eventstream_c, _eventstream_py


def stream(size: int, megabytes: int) -> tuple[bytes, int]:
    """(the stream, how many events) of events about size bytes long."""
    events, total, index = [], 0, 0
    while total < megabytes << 20:
        head = b"event: message\nid: %d\ndata: " % index
        body = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t-%d","progress":%d,"message":"' % (index, index)
        event = head + body + b"x" * max(0, size - len(head) - len(body) - 5) + b'"}}\n\n'
        events.append(event)
        total += len(event)
        index += 1
    return b"".join(events), len(events)


def old_parser(revision: str) -> Callable[[int], object] | None:
    try:
        source = subprocess.run(["git", "show", f"{revision}:src/diverge_codec/relay/eventstream.py"], check=True,
                                capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    with tempfile.NamedTemporaryFile("wb", suffix=".py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location("old_eventstream", file.name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_eventstream"] = module
    spec.loader.exec_module(module)
    os.unlink(file.name)
    return module.EventParser  # type: ignore[no-any-return]


def cost(make: Callable[[int], object], chunks: list[bytes]) -> float:
    parser = make(1 << 20)
    started = time.process_time()
    for chunk in chunks:
        parser.feed(chunk)  # type: ignore[attr-defined]
    return time.process_time() - started


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--old", default="c24cd8a", help="the revision whose parser to compare (default c24cd8a)")
    options.add_argument("--rounds", type=int, default=7)
    options.add_argument("--mb", type=int, default=4)
    arguments = options.parse_args()
    parsers: dict[str, Callable[[int], object]] = {"compiled": _eventstream_c.EventParser, "pure": _eventstream_py.EventParser}
    old = old_parser(arguments.old)
    if old is not None:
        parsers[f"old ({arguments.old})"] = old
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    for size in (185, 1100):
        data, count = stream(size, arguments.mb)
        chunks = [data[at:at + 65536] for at in range(0, len(data), 65536)]
        assert [len(_eventstream_c.EventParser(1 << 20).feed(chunk)) for chunk in chunks[:1]] != [0]
        times: dict[str, list[float]] = {name: [] for name in parsers}
        for _ in range(arguments.rounds):
            for name, make in parsers.items():  # interleaved
                times[name].append(cost(make, chunks))
        print(f"events of {len(data) / count:.0f} B ({count} events, 64 KiB chunks), median of {arguments.rounds}:")
        for name, spent in times.items():
            median = statistics.median(spent)
            print(f"  {name:>18}: {median / count * 1e6:7.3f} us/event  ({len(data) / median / 1e6:7.1f} MB/s)")
    print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")


if __name__ == "__main__":
    main()

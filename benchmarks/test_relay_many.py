"""1, 10 and 100 replayed servers relayed at once in one event loop (``relay_many.py``): every
notification arrives, and the rows (throughput, latency median/p99, memory per channel) are
written to ``RELAY_MANY.md`` with the machine's load at the time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CAPTURE = HERE / "data" / "captures" / "ts-sdk-everything.jsonl"
COPIES = 20


def test_relay_many_servers():
    done = subprocess.run([sys.executable, str(HERE / "relay_many.py"), "--copies", str(COPIES)],
                          capture_output=True, text=True, timeout=1800, check=True)
    (HERE / "RELAY_MANY.md").write_text(done.stdout)
    rows = json.loads(subprocess.run(
        [sys.executable, str(HERE / "relay_many.py"), "--copies", "2", "--json"],
        capture_output=True, text=True, timeout=1800, check=True).stdout)
    per_server = sum(b'"id"' not in line for line in CAPTURE.read_bytes().splitlines()) * 2
    assert [(row["servers"], row["relayed"], row["dropped"]) for row in rows] == [
        (1, per_server, 0), (10, per_server * 10, 0), (100, per_server * 100, 0)]
    print(done.stdout, file=sys.stderr)

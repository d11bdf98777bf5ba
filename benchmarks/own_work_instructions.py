"""Instructions per notification for the relay's own work on the TypeScript SDK capture (valgrind callgrind).

Each case runs in a fresh interpreter under callgrind twice, with REPS and 2 x REPS
passes over the capture after the same warm-up (``instructions.per_call_picked``); the
difference, divided by REPS and by the notifications, is the cost of one notification
with start-up and imports left out. Counts do not depend on the machine's load, where
timings do.

    python benchmarks/own_work_instructions.py [REPS]
    python benchmarks/own_work_instructions.py --families [REPS]

``--families`` counts, per SDK family's capture, ``relay_frame``'s splice of each
notification against ``orjson.loads`` + ``pop("jsonrpc")`` + ``orjson.dumps`` (docs/performance.md's
per-family column; ``test_relay_families.py`` times the same two), and the whole relay session
(256 KiB reads, the outbox taken as records) per notification, the capture repeated to 1 MiB.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from instructions import allocator_note, per_call_picked  # noqa: E402  (the callgrind runner)

CASES = {
    "relay's own work (splice + write_record per line)":
        "fam.relay_own_work(mn.splice_notification, lines, mn.NotificationParseError)",
    "relay session (receive in 256 KiB reads, take, records)": "fam.relay_session_work(chunks)",
    "baseline: orjson loads/pop/dumps + write_record per line": "fam.relay_own_work(reparse, lines, orjson.JSONDecodeError)",
}
SETUP = """
import orjson
import test_relay_families as fam
from diverge_codec import mcp_notifications as mn
lines = fam.CAPTURES[fam.TS_FAMILY]
data = b"".join(lines)
chunks = fam.reads(data)
def reparse(line):
    message = orjson.loads(line)
    if type(message) is not dict or "id" in message:
        return None
    message.pop("jsonrpc", None)
    return b"\\x00" + orjson.dumps(message)
function = lambda: {call}
"""


FAMILY_SETUP = """
import test_relay_families as fam
lines = fam._notifications(fam.CAPTURES[{family!r}])
frame = {frame}
function = lambda: fam.each(frame, lines)
"""

SESSION_SETUP = """
import test_relay_families as fam
chunks = fam.reads(b"".join(fam.CAPTURES[{family!r}]) * {repeat})
function = lambda: fam.relay_session_work(chunks)
"""


def families(reps: int) -> None:
    import test_relay_families as fam

    print(f"relay_frame per notification, ours / orjson loads-pop-dumps; {reps} passes; {allocator_note()}")
    for family, lines in fam.CAPTURES.items():
        count = len(fam._notifications(lines))
        ours, base = (per_call_picked(FAMILY_SETUP.format(family=family, frame=frame), reps, warm=2) / count
                      for frame in ("fam._relay_frame(fam.relay.mcp_notifications)", "fam.reparse"))
        repeat = max(1, (1 << 20) // len(b"".join(lines)))
        session = per_call_picked(SESSION_SETUP.format(family=family, repeat=repeat), reps, warm=2) / (count * repeat)
        print(f"  {family} ({count} notifications): {ours:,.0f} / {base:,.0f} = {ours / base:.2f}x;"
              f" the session {session:,.0f} per notification")


def main() -> None:
    if sys.argv[1:2] == ["--families"]:
        families(int(sys.argv[2]) if len(sys.argv) > 2 else 20)
        return
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    import test_relay_families as fam

    lines = fam.CAPTURES[fam.TS_FAMILY]
    count = len(fam._notifications(lines))
    print(f"{fam.TS_FAMILY}: {count} notifications of {len(lines)} lines, {reps} passes; {allocator_note()}")
    for name, call in CASES.items():
        per = per_call_picked(SETUP.format(call=call), reps, warm=2) / count
        print(f"  {name}: {per:,.0f} instructions per notification")


if __name__ == "__main__":
    main()

"""``channel.exit_status``: the relay command's exit status from its report, every branch in the quick subset.

0 is a clean end or what was asked (a signal, ``--duration``, ``--until-answered``, the consumer closing the
channel); 1 a failure (a server unreachable, a handshake refused, a server that exited non-zero or had to be
killed); 2 a command that could not start (bad usage); a URL that could not be reached is 1, not 2.
"""

from __future__ import annotations

import pytest

from diverge_codec.relay.channel import REQUESTED, exit_status
from diverge_codec.relay.session import RelayReport


def _report(server: dict, unreachable: bool = False) -> RelayReport:
    report = RelayReport()
    report.server, report.unreachable = server, unreachable
    return report


@pytest.mark.parametrize(("server", "unreachable", "status"), [
    ({"started": False, "shutdown": "signal SIGINT"}, True, 0),
    ({"started": True, "shutdown": "signal SIGTERM", "exit_status": 1, "ended_by": "SIGKILL"}, False, 0),
    ({"started": False}, False, 2),
    ({"started": False, "transport": "streamable-http"}, True, 1),
    ({}, False, 2),
    *[({"started": True, "shutdown": reason, "exit_status": 1, "ended_by": "SIGKILL"}, True, 0) for reason in REQUESTED],
    ({"started": True, "shutdown": "handshake failed", "exit_status": 0, "ended_by": "itself"}, False, 1),
    ({"started": True, "shutdown": None, "exit_status": 0, "ended_by": "itself"}, True, 1),
    ({"started": True, "shutdown": None, "exit_status": 0, "ended_by": "itself"}, False, 0),
    ({"started": True, "shutdown": None, "exit_status": 0, "ended_by": "stdin closed"}, False, 0),
    ({"started": True, "shutdown": None, "exit_status": 0, "ended_by": "SIGTERM"}, False, 1),
    ({"started": True, "shutdown": None, "exit_status": 1, "ended_by": "itself"}, False, 1),
    ({"started": True, "shutdown": None, "exit_status": None, "ended_by": "itself"}, False, 1),
    ({"started": True, "shutdown": "server gone"}, False, 1),
])
def test_the_exit_status_says_what_ended_the_relay(server, unreachable, status):
    assert exit_status(_report(server, unreachable)) == status

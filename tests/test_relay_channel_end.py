"""The channel's end over a pipe: never inside a record, and the report's counts are what the consumer got.

A consumer that is slow at the end gets every record the relay had begun, whole; those not begun are
counted (``channel.unsent``, in ``dropped.backpressure``), never in ``relayed``. One that takes nothing
at all for two graces while a record is half written is the one case that cannot end whole: the report
says so (``channel.cut``) and counts that record unsent too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from diverge_codec import stream
from diverge_codec.errors import TruncatedStreamError

from test_relay_command import SERVERS, _report

SLOW_READER = r"""
import os, sys, time
out = open(sys.argv[1], "wb")
while True:
    data = os.read(0, 1500)
    if not data:
        break
    out.write(data)
    time.sleep(0.002)
"""


def _relay_into(consumer: list[str], *args: str) -> tuple[dict, subprocess.Popen[bytes]]:
    read_end, write_end = os.pipe()
    reader = subprocess.Popen(consumer, stdin=read_end)
    os.close(read_end)
    relay = subprocess.Popen([sys.executable, "-m", "diverge_codec", "relay", *args], stdout=write_end,
                             stderr=subprocess.PIPE)
    os.close(write_end)
    _, err = relay.communicate(timeout=120)
    return _report(err), reader


@pytest.mark.parametrize("pure", ["0", "1"])
def test_a_slow_consumer_at_the_end_gets_whole_records_and_the_counts_add_up(tmp_path, pure, monkeypatch):
    monkeypatch.setenv("DIVERGE_CODEC_PURE", pure)
    received = tmp_path / "received"
    report, reader = _relay_into([sys.executable, "-c", SLOW_READER, str(received)],
                                 "--duration", "2", "--grace", "1", "--", sys.executable, str(SERVERS), "flood", "400000")
    assert reader.wait(timeout=60) == 0
    payloads = stream.split_records(received.read_bytes())  # raises TruncatedStreamError on a cut record
    assert report["channel"] == {"unsent": report["channel"]["unsent"], "cut": False}
    assert report["channel"]["unsent"] > 0, "the consumer kept up: the test did not reach the end it is about"
    assert report["relayed"] == len(payloads) > 0
    assert report["seen"] == report["relayed"] + sum(report["dropped"].values())
    assert report["dropped"]["backpressure"] >= report["channel"]["unsent"]


def test_a_consumer_stopped_mid_record_is_reported_cut_and_that_record_is_not_counted_relayed(tmp_path):
    received = tmp_path / "received"
    read_end, write_end = os.pipe()
    reader = subprocess.Popen([sys.executable, "-c", SLOW_READER, str(received)], stdin=read_end)
    os.close(read_end)
    relay = subprocess.Popen([sys.executable, "-m", "diverge_codec", "relay", "--duration", "2", "--grace", "0.5",
                              "--", sys.executable, str(SERVERS), "big", str(3 << 20)], stdout=write_end,
                             stderr=subprocess.PIPE)
    os.close(write_end)
    time.sleep(1.0)  # the 3 MiB record is being written through a 1 MiB pipe: stop its reader there
    reader.send_signal(signal.SIGSTOP)
    try:
        _, err = relay.communicate(timeout=60)
    finally:
        reader.send_signal(signal.SIGCONT)
    report = _report(err)
    assert reader.wait(timeout=60) == 0
    with pytest.raises(TruncatedStreamError):
        stream.split_records(received.read_bytes())
    assert report["channel"] == {"unsent": 1, "cut": True} and report["relayed"] == 0
    assert report["dropped"]["backpressure"] == 1

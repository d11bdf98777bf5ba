"""An MCP stdio server that does not stop when its stdin closes: it logs every few ms forever.

It answers ``initialize`` (and nothing else), then writes a logging notification every
``--interval-ms`` (default 5) whether or not the client is there; stdin EOF changes
nothing. With ``--ignore-sigterm`` SIGTERM is ignored too, so only SIGKILL ends it: the
relay's shutdown (close stdin, wait, SIGTERM, wait, SIGKILL) must reach the last step.
It ends quietly when its stdout is closed (a broken pipe). Stdlib only.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time

from _stdio import initialize_result, log, read_message, write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--interval-ms", type=float, default=5.0)
    parser.add_argument("--ignore-sigterm", action="store_true")
    args = parser.parse_args()
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    initialized = threading.Event()
    threading.Thread(target=_serve, args=(initialized,), daemon=True).start()
    initialized.wait()
    index = 0
    try:
        while True:
            log("info", {"index": index, "note": "still here"})
            index += 1
            time.sleep(args.interval_ms / 1000)
    except BrokenPipeError:
        os._exit(0)  # stdout is gone: nothing left to ignore


def _serve(initialized: threading.Event) -> None:
    """Answer ``initialize``; at stdin EOF, start logging anyway and ignore the EOF."""
    while (request := read_message()) is not None:
        if request.get("method") == "initialize" and "id" in request:
            write(initialize_result(request, "eof-ignoring"))  # the logging loop waits for this
            initialized.set()
    initialized.set()


if __name__ == "__main__":
    sys.exit(main())

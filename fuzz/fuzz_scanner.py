"""Fuzzing the relay's scanner with atheris: ``splice_notification`` of both cores against orjson.

One input is one line a server wrote; ``scanner_check.check`` holds both cores to
``orjson.loads`` + popping ``jsonrpc`` + the channel's rules (payload decodes to that
notification, or the same refusal in ``decode``'s words, or None), on bytes, bytearray
and memoryview, and the compiled scanner's own verdict on validity to orjson's.

Run (``pip install 'diverge-codec[fuzz]'``, then from the repository root)::

    python fuzz/fuzz_scanner.py /tmp/fuzz-scanner fuzz/corpus_scanner -dict=fuzz/scanner.dict -max_total_time=60

libFuzzer writes new inputs into the first directory, so the committed corpus stays as
it is. A crash leaves the input in ``crash-*`` and a non-zero exit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).parent))
with atheris.instrument_imports():
    import scanner_check  # and, through it, the pure core and the model


def main() -> None:
    atheris.Setup(sys.argv, scanner_check.check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

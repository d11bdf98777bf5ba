"""Fuzzing the event-stream parsers with atheris: compiled against pure against a plain reference.

One input is a parser's settings, a chunking seed and a stream (``eventstream_check.check``).

Run (``pip install 'atheris>=2.3'``, then from the repository root)::

    python fuzz/fuzz_eventstream.py /tmp/fuzz-eventstream fuzz/corpus_eventstream -dict=fuzz/eventstream.dict -max_total_time=60

libFuzzer writes new inputs into the first directory, so the committed corpus stays as
it is. A crash leaves the input in ``crash-*`` and a non-zero exit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).parent))
with atheris.instrument_imports():
    import eventstream_check  # and, through it, the pure parser and the reference


def main() -> None:
    atheris.Setup(sys.argv, eventstream_check.check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

"""Fuzzing the codec with atheris: both channels, both cores, and the differential between them.

One input goes through every target (``targets.py``):

- ``decode`` of each channel with the compiled core and the pure one: the only
  exception allowed out is the channel's FrameError (a subclass of it);
- the differential: both cores give the same frame (variant, contents, repr and
  re-encoded bytes, or the same encode error) or the same error class and message;
- ``splice_notification`` and ``stream.split_records`` of both cores agree;
- the stdlib JSON path accepts and refuses what orjson does, with the same value.

Run (``pip install 'diverge-codec[fuzz]'``, then from the repository root)::

    python fuzz/fuzz_codec.py /tmp/fuzz-corpus fuzz/corpus -max_total_time=600

libFuzzer writes new inputs into the first directory, so the committed corpus stays as
it is. A crash leaves the input in ``crash-*`` and a non-zero exit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).parent))
with atheris.instrument_imports():
    import targets  # and, through it, the pure core, the model and the JSON path


def main() -> None:
    atheris.Setup(sys.argv, targets.check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

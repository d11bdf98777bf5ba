"""Fuzzing the two JSON backends against each other with atheris (``backend_targets.py``).

Run from the repository root (``pip install 'atheris>=2.3'``)::

    python fuzz/fuzz_backends.py /tmp/backend-corpus fuzz/corpus -dict=fuzz/codec.dict -max_total_time=600

It reads the shared seeds (``fuzz/corpus``) and writes new inputs to the first directory.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).parent))
with atheris.instrument_imports():
    import backend_targets  # and, through it, the JSON path and the pure core


def main() -> None:
    atheris.Setup(sys.argv, backend_targets.check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

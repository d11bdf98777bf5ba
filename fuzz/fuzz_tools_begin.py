"""Fuzzing the compiled tools-begin readers with atheris: ``decode`` of tags 0 and 3 in both cores against orjson.

One input is one body; ``tools_begin_check.check`` holds both cores (bytes, bytearray,
memoryview) and the compiled Begun reader to ``orjson.loads`` + the model's
``declaration_from_json``, the encode of what was read to both cores, and then the same
body as Inactive values to ``orjson.loads``, type for type, with the values reader.

Run (``pip install 'diverge-codec[fuzz]'``, then from the repository root)::

    python fuzz/tools_begin_seeds.py /tmp/seeds-tb
    python fuzz/fuzz_tools_begin.py /tmp/fuzz-tb /tmp/seeds-tb -dict=fuzz/tools_begin.dict -max_total_time=60

libFuzzer writes new inputs into the first directory. A crash leaves the input in
``crash-*`` and a non-zero exit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).parent))
with atheris.instrument_imports():
    import tools_begin_check  # and, through it, the pure core and the model


def main() -> None:
    atheris.Setup(sys.argv, tools_begin_check.check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

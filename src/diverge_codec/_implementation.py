"""Which implementation serves: the compiled core where it imports, else pure Python.

``DIVERGE_CODEC_PURE=1`` (any value but empty or ``0``) forces the pure one. The
choice is made once, at import, so every channel module agrees with the others.
"""

from __future__ import annotations

import os
import platform
import warnings

FORCED_PURE = os.environ.get("DIVERGE_CODEC_PURE", "") not in ("", "0")

IMPLEMENTATION: str
if FORCED_PURE:
    IMPLEMENTATION = "python"
else:
    try:
        from . import _mcp_notifications_c, _sequence_c, _stream_c, _tools_begin_c  # noqa: F401
    except ImportError:
        IMPLEMENTATION = "python"
        if platform.python_implementation() == "CPython":
            warnings.warn(
                "diverge_codec: the compiled core is not built here; using the pure-Python implementation "
                "(set DIVERGE_CODEC_PURE=1 to choose it and silence this)",
                RuntimeWarning,
                stacklevel=2,
            )
    else:
        IMPLEMENTATION = "cython"

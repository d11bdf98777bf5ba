"""Which implementation serves: the compiled core where it imports, else pure Python.

``DIVERGE_CODEC_PURE=1`` (any value but empty or ``0``) forces the pure one. The
choice is made once, at import, so every channel module agrees with the others.
"""

from __future__ import annotations

import os

FORCED_PURE = os.environ.get("DIVERGE_CODEC_PURE", "") not in ("", "0")

IMPLEMENTATION: str
if FORCED_PURE:
    IMPLEMENTATION = "python"
else:
    try:
        from . import _mcp_notifications_c, _stream_c, _tools_begin_c  # noqa: F401
    except ImportError:
        IMPLEMENTATION = "python"
    else:
        IMPLEMENTATION = "cython"

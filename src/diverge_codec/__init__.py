"""diverge-codec: the response frames of the diverge container-proxy protocol 2.3.0, tools-begin and mcp-notifications.

``IMPLEMENTATION`` says which core serves, ``"cython"`` or ``"python"``, and
``IMPLEMENTATION_REASON`` why; ``DIVERGE_CODEC_PURE=1`` before import forces the pure
one. ``diverge-codec doctor`` prints both, and the JSON backend.
"""

from ._collector import paused_collector

with paused_collector():
    from . import mcp_notifications, tools_begin
    from ._implementation import IMPLEMENTATION, IMPLEMENTATION_REASON
    from ._json import BACKEND as JSON_BACKEND
    from ._model import ErrorData, Mode, ProviderError
    from ._version import __version__
    from .errors import DecodeError, EncodeError

__all__ = [
    "IMPLEMENTATION", "IMPLEMENTATION_REASON", "JSON_BACKEND", "DecodeError", "EncodeError", "ErrorData", "Mode",
    "ProviderError", "__version__", "mcp_notifications", "tools_begin",
]

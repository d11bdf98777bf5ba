# The compiled core has the pure twin's API exactly; its types are the twin's.
from diverge_codec._mcp_notifications_py import *  # noqa: F403
from diverge_codec._mcp_notifications_py import __all__ as __all__
from diverge_codec._mcp_notifications_py import request_head as request_head
def _long_strings_reader(wanted: str | None = None) -> str: ...

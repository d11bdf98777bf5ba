# The compiled core has the pure twin's API exactly; its types are the twin's.
from diverge_codec._mcp_notifications_py import *  # noqa: F403
from diverge_codec._mcp_notifications_py import __all__ as __all__
def _answer_ids(line: bytes) -> list[int] | None: ...

# The compiled core has the pure twin's API exactly; its types are the twin's.
from diverge_codec._eventstream_py import *  # noqa: F403
from diverge_codec._eventstream_py import __all__ as __all__

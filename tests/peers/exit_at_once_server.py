"""A server that cannot be reached: it exits before reading or writing anything.

``python exit_at_once_server.py [STATUS]`` exits with STATUS (default 3). Stdlib only.
"""

import sys

sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 3)

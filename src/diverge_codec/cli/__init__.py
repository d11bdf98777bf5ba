"""``diverge-codec``: inspect captures, encode frames from JSON Lines, run the benchmark.

An adapter over the sans-IO codec, checkers and stream envelope: all the reading
and writing of files happens here, a module per subcommand. Bad input is one clear
line on stderr and a non-zero exit, never a traceback: 0 a valid capture, 1 an
invalid one, 2 bad usage or unreadable input.

Each subcommand module has ``register(subcommands)``, which adds its parser and sets
``run`` (the function taking the parsed arguments and returning the exit status).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import IMPLEMENTATION, __version__
from ._common import CHANNELS, UsageError

__all__ = ["CHANNELS", "SUBCOMMANDS", "UsageError", "main", "parser"]

SUBCOMMANDS = ("inspect", "encode", "bench", "doctor")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="diverge-codec", description=(__doc__ or "").split("\n\n")[0])
    top.add_argument("--version", action="version", version=f"diverge-codec {__version__} ({IMPLEMENTATION})")
    commands = top.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(commands)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except UsageError as error:
        print(f"diverge-codec: {error}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as error:
        print(f"diverge-codec: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130

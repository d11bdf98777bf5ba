"""``diverge-codec``: inspect captures, encode frames from JSON Lines, relay an MCP server, say how it is built, benchmark.

An adapter over the sans-IO codec, checkers and stream envelope: all the reading
and writing of files happens here, a module per subcommand. Whatever goes wrong is
one line on stderr, never a traceback and never a value from the input: 0 a valid
capture, 1 an invalid one, 2 bad usage or input the tool refuses, 3 a relay whose call
failed, 130 interrupted, 141 standard output closed early (``| head``; nothing is
written to stderr).

Each subcommand module has ``register(subcommands)``, which adds its parser and sets
``run`` (the function taking the parsed arguments and returning the exit status).
"""

from __future__ import annotations

from typing import Any, NoReturn

from .._collector import paused_collector

with paused_collector():  # start-up's objects live as long as the process (the relay freezes them: cli/relay.py)
    import argparse
    import importlib
    import os
    import re
    import sys

    from .. import IMPLEMENTATION, __version__
    from ._common import CHANNELS
    from ._safe import UsageError, escape

__all__ = ["CHANNELS", "SUBCOMMANDS", "UsageError", "main", "parser"]

SUBCOMMANDS = ("inspect", "encode", "bench", "relay", "doctor")

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_CLOSED_PIPE = 141
"""128 + SIGPIPE: what a shell shows for a tool that a closed pipe ended; ``set -o pipefail`` treats it as such."""

DESCRIPTION = """\
Check, write and relay the diverge tools-begin and mcp-notifications channels:
inspect a capture (or the built-in sample), encode frames from JSON Lines, relay an
MCP server's notifications onto the mcp-notifications channel, say which core an
install uses, run the benchmark."""
EPILOG = """\
exit status: 0 a valid capture or a relay that ended as asked, 1 an invalid capture
or a failed relay, 2 bad usage or input refused (one line on stderr), 3 a relay
whose call or request failed, 130 interrupted, 141 standard output closed early.

examples:
  diverge-codec inspect --sample
  diverge-codec inspect capture.bin --channel tools-begin
  diverge-codec relay --call 'emit_all={}' --until-answered -- python server.py \\
      | diverge-codec inspect --channel mcp-notifications -
  diverge-codec doctor
  diverge-codec COMMAND --help
"""


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Help kept as written, as wide as the terminal, found as ``shutil`` finds it without importing it."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


def _columns() -> int:
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class Parser(argparse.ArgumentParser):
    """argparse with plain-text help kept as written, and a refusal in one line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {escape(_without_values(message))} (see --help)\n")


def _without_values(message: str) -> str:
    """argparse's refusal naming the option, never the value given: that may be anything the user typed."""
    head, _, rest = message.partition(": ")
    if head == "unrecognized arguments":
        options = [word.split("=", 1)[0] for word in rest.split(" ") if word.startswith("-")]
        others = len(rest.split(" ")) - len(options)
        return f"{head}: " + ", ".join(options + ([f"{others} more"] if others else []))
    return re.sub(r"invalid choice: '.*?' \(", "invalid choice (", message, flags=re.S)


def parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser: with ``argv`` naming a subcommand, that subcommand's alone.

    Start-up is paid for what runs: ``relay`` does not import ``doctor``'s metadata reading or
    ``bench``'s benchmark, nor they the event loop. Without a subcommand (``--help``, a
    mistake) every one is registered, so the help lists them all.
    """
    top = Parser(prog="diverge-codec", description=DESCRIPTION, epilog=EPILOG)
    top.add_argument("--version", action="version", version=f"diverge-codec {__version__} ({IMPLEMENTATION})")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = _subcommand(argv)
    with paused_collector():
        for name in (chosen,) if chosen is not None else SUBCOMMANDS:
            importlib.import_module(f"{__name__}.{name}").register(commands)
    return top


def _subcommand(argv: list[str] | None) -> str | None:
    """The subcommand ``argv`` names (its first word that is no option), if it is one."""
    words = sys.argv[1:] if argv is None else argv
    first = next((word for word in words if not word.startswith("-")), None)
    return first if first in SUBCOMMANDS else None


def _say(text: str) -> None:
    try:
        print(f"diverge-codec: {text}", file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


def _silence_stdout() -> None:
    """After a closed pipe: what is still buffered goes nowhere, so the exit writes no error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    """The command: its exit status. Every failure is one line on stderr, never a traceback."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    try:
        with paused_collector():
            args = parser(argv).parse_args(argv)
        return int(args.run(args))
    except UsageError as error:
        _say(escape(str(error)))
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_CLOSED_PIPE
    except KeyboardInterrupt:
        _say("interrupted")
        return EXIT_INTERRUPTED
    except RecursionError:
        _say("input nested too deeply to handle")
    except MemoryError:
        _say("out of memory")
    except Exception as error:  # the last guard: the type only, as its text could hold a value
        if os.environ.get("DIVERGE_CODEC_TRACEBACK"):
            raise
        _say(f"unexpected {type(error).__name__} (DIVERGE_CODEC_TRACEBACK=1 shows where)")
    return EXIT_USAGE

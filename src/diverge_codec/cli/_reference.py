"""The command-line reference page (docs/cli_reference.md), rendered from the argparse parsers themselves.

``python -m diverge_codec.cli._reference > docs/cli_reference.md`` writes it; a test checks that the
committed page is what this renders, so the reference cannot drift from ``--help``.
"""

from __future__ import annotations

import argparse
import functools

from . import SUBCOMMANDS, Formatter, parser

WIDTH = 88
"""Columns of the rendered help: the same on every machine, whatever its terminal."""

HEADER = """\
# Command-line reference

Every command's `--help`, as `diverge-codec` prints it: this page is generated from the
parsers (`python -m diverge_codec.cli._reference > docs/cli_reference.md`), and a test fails
when it differs from them. The guide is in {doc}`cli` and {doc}`relay`; a first session is
in {doc}`quickstart`.
"""


def _help(command: argparse.ArgumentParser) -> str:
    command.formatter_class = functools.partial(Formatter, width=WIDTH)
    return command.format_help().rstrip("\n")


def render() -> str:
    """The page: the top-level help, then each subcommand's, in ``SUBCOMMANDS`` order."""
    top = parser([])
    commands = next(action for action in top._actions if isinstance(action, argparse._SubParsersAction))
    sections = [HEADER, f"## diverge-codec\n\n```text\n{_help(top)}\n```\n"]
    for name in SUBCOMMANDS:
        sections.append(f"## diverge-codec {name}\n\n```text\n{_help(commands.choices[name])}\n```\n")
    return "\n".join(sections)


if __name__ == "__main__":
    print(render(), end="")

"""The command line imports what the subcommand it runs needs, and no other subcommand."""

from __future__ import annotations

import subprocess
import sys

import pytest

from diverge_codec.cli import SUBCOMMANDS, parser

PROBE = """
import sys
from diverge_codec.cli import parser
parser(sys.argv[1:])
print(" ".join(sorted(name.rsplit(".", 1)[1] for name in sys.modules if name.startswith("diverge_codec.cli.")
                      and name.rsplit(".", 1)[1] in {SUBCOMMANDS})))
print("asyncio" in sys.modules)
"""


@pytest.mark.parametrize("argv", [["relay", "--", "cat"], ["inspect", "-"], ["--", "doctor"], ["bench", "--quick"]])
def test_only_the_chosen_subcommand_is_imported(argv):
    chosen = next(word for word in argv if not word.startswith("-"))
    done = subprocess.run([sys.executable, "-c", PROBE.replace("{SUBCOMMANDS}", repr(set(SUBCOMMANDS))), *argv],
                          capture_output=True, text=True, check=True, timeout=60)
    imported, asyncio = done.stdout.split("\n")[:2]
    assert imported == chosen and asyncio == str(chosen == "relay")


def test_without_a_subcommand_every_one_is_listed():
    help_text = parser([]).format_help()
    assert all(f"    {name} " in help_text for name in SUBCOMMANDS), help_text

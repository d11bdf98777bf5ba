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
    assert imported == chosen and asyncio == "False"  # the relay imports its driver once the options are read


DRIVER_PROBE = """
import sys
from diverge_codec.cli import relay
relay._driver(tls=sys.argv[1] == "tls")
import asyncio.base_events, asyncio.sslproto
ssl_in_asyncio = asyncio.base_events.ssl is not None and asyncio.sslproto.ssl is not None
import ssl  # put back: a later import works
print(ssl_in_asyncio, hasattr(ssl, "SSLContext"))
"""


@pytest.mark.parametrize(("transport", "asyncio_has_ssl"), [("pipes", False), ("tls", True)])
def test_a_command_relay_loads_asyncio_without_ssl_and_puts_it_back(transport, asyncio_has_ssl):
    done = subprocess.run([sys.executable, "-c", DRIVER_PROBE, transport], capture_output=True, text=True, check=True,
                          timeout=60)
    assert done.stdout.split() == [str(asyncio_has_ssl), "True"]


def test_where_ssl_is_already_imported_asyncio_keeps_it():
    probe = DRIVER_PROBE.replace("import sys\n", "import sys, ssl\n", 1)
    done = subprocess.run([sys.executable, "-c", probe, "pipes"], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["True", "True"]


def test_without_a_subcommand_every_one_is_listed():
    help_text = parser([]).format_help()
    assert all(f"    {name} " in help_text for name in SUBCOMMANDS), help_text

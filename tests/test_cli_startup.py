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


COLLECTOR_PROBE = """
import asyncio, gc, sys
from diverge_codec import cli
imported = gc.isenabled()
at_loop = []
real_run = asyncio.run
def run(main, **options):  # the relay's loop starts here: what start-up made is frozen, the collector back on
    at_loop.append((gc.isenabled(), gc.get_freeze_count() > 0))
    return real_run(main, **options)
asyncio.run = run
for argv in (["relay"], ["relay", "--bogus"], ["--version"], ["relay", "--quiet-server", "--", "true"]):
    try:
        status = cli.main(argv)
    except SystemExit as end:
        status = end.code
    print(argv[-1], status, gc.isenabled(), file=sys.stderr)
print("probe", imported, at_loop, file=sys.stderr)
"""


def test_start_up_pauses_the_collector_and_gives_it_back():
    """Start-up's objects live as long as the process: the collector is paused while they are made (the
    imports, the parse, the relay's set-up) and they are frozen before the loop; every way out leaves it on."""
    done = subprocess.run([sys.executable, "-c", COLLECTOR_PROBE], capture_output=True, text=True, timeout=60)
    said = [line.split(" ", 1) for line in done.stderr.splitlines()]
    assert [rest for first, *rest in said if first in ("relay", "--bogus", "--version", "true", "probe")] == [
        ["2 True"], ["2 True"], ["0 True"], ["1 True"], ["True [(True, True)]"]], done.stderr


PATTERN_PROBE = """
import re, sys
from diverge_codec.cli import relay
relay._driver(tls=True)
from diverge_codec.cli import _watch
from diverge_codec.relay import cookies  # what relay --url's HTTP client loads (without h11: it is an extra)
ours = {pattern for pattern, _, _ in _watch.HINTS} | {cookies._DELIMITERS, cookies._TIME, cookies._DAY, cookies._YEAR,
                                                      cookies._MAX_AGE}
print(sorted(key[1] for key in re._cache if key[1] in ours))
print("calendar" in sys.modules)
print(cookies.cookie_date("Wed, 09 Jun 2021 10:18:14 GMT"), "calendar" in sys.modules)
print(len({key[1] for key in re._cache if key[1] in ours}))
"""


def test_start_up_compiles_no_hint_or_cookie_pattern_and_imports_no_calendar():
    """The relay's hints and the cookie jar's date patterns are compiled the first time they are used, not at start-up
    (issue 44: start-up unchanged); a dated cookie compiles them and imports ``calendar`` then."""
    done = subprocess.run([sys.executable, "-c", PATTERN_PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    compiled, calendar_loaded, read, compiled_after = done.stdout.split("\n")[:4]
    assert compiled == "[]" and calendar_loaded == "False"
    assert read == "1623233894.0 True" and compiled_after == "4"  # the delimiters, the clock, the day, the year


def test_a_stdio_relays_start_up_imports_no_url_parser():
    """urllib.parse (six namedtuples: ~9 million instructions) is the HTTP relay's: a stdio relay's imports,
    the relay's value classes with their reprs among them (relay/frozen.py), load none (issue 44)."""
    probe = ("import sys\nfrom diverge_codec import cli\nstatus = cli.main(['relay', '--quiet-server', '--', 'true'])\n"
             "print(status, 'urllib.parse' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stderr.splitlines()[-1] == "1 False", done.stderr

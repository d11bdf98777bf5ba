"""docs/cli_reference.md is the parsers' help, rendered: it cannot drift from what ``--help`` prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from diverge_codec.cli import SUBCOMMANDS, _reference

PAGE = Path(__file__).resolve().parent.parent / "docs" / "cli_reference.md"


def test_the_committed_reference_is_the_parsers_help_rendered():
    if not PAGE.is_file():
        pytest.skip("docs/ is not beside tests/ here")
    assert PAGE.read_text(encoding="utf-8") == _reference.render(), (
        "regenerate it: python -m diverge_codec.cli._reference > docs/cli_reference.md")


def test_every_subcommand_and_option_has_its_place(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")  # the page does not follow the terminal
    page = _reference.render()
    assert [line for line in page.splitlines() if line.startswith("## ")] == (
        ["## diverge-codec"] + [f"## diverge-codec {name}" for name in SUBCOMMANDS])
    for option in ("--sample", "--show-values", "--answers FILE|-", "--report FILE", "--force-tty", "--url URL"):
        assert option in page
    monkeypatch.setenv("COLUMNS", "200")
    assert page == _reference.render()

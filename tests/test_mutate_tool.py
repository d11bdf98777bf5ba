"""tools/mutate.py makes the mutants docs/mutation.md says it makes, the planted bugs of issue #37 among them."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if not (ROOT / "tools" / "mutate.py").is_file():
    pytest.skip("no tools/ beside tests/ (a copy of the tests, as .ci/sanitize and .ci/check-install run): "
                "the mutation tool is the checkout's", allow_module_level=True)
sys.path.insert(0, str(ROOT / "tools"))
import mutate  # noqa: E402

SOURCE = '''
def f(a, b):
    """A docstring: left alone."""
    if a and b:
        return a <= b
    x = a + 1
    return not x
'''


def _whats(changes) -> set[str]:
    return {what for _, what, _ in changes}


def test_the_python_operators():
    assert _whats(mutate._python_changes(SOURCE)) == {
        "negate condition", "condition always", "condition never", "And->Or", "drop operand 1 of And",
        "drop operand 2 of And", "drop return", "LtE->Lt", "drop assign", "Add->Sub", "1->2", "drop not",
    }


def test_every_python_mutant_parses_and_differs_from_the_source():
    mutants = mutate.mutants_of("src/diverge_codec/sequence.py")
    source = (ROOT / "src/diverge_codec/sequence.py").read_text()
    assert len(mutants) >= 3 and len({mutant.key for mutant in mutants}) == len(mutants)
    for mutant in mutants:
        ast.parse(mutant.text)
        assert mutant.text != source


def test_the_splice_s_fast_path_condition_is_dropped_one_at_a_time():
    from diverge_codec import _mcp_notifications_py

    source = textwrap.dedent(inspect.getsource(_mcp_notifications_py.splice_notification))
    lines = source.splitlines()
    dropped = [node for node, what, _ in mutate._python_changes(source) if what == "drop operand 2 of And"]
    assert any("not in _SPACE" in lines[node.lineno - 1] for node in dropped)


def test_the_scanner_s_resets_are_dropped():
    signatures = {mutant.signature for mutant in mutate.mutants_of("src/diverge_codec/_jsonscan.h")}
    assert "src/diverge_codec/_jsonscan.h: if (depth == 1) in_params = 0; :: drop guarded assignment" in signatures
    assert any(signature.startswith("src/diverge_codec/_jsonscan.h: meta_kind = DC_ABSENT;")
               and signature.endswith(":: drop assignment") for signature in signatures)


def test_every_module_mutated_has_tests_that_exist():
    for module, tests in mutate.ORACLES.items():
        assert (ROOT / module).exists(), module
        assert all(list(ROOT.glob(test)) for test in tests), module


def test_an_equivalent_mutant_is_named_by_a_line_that_exists():
    for signature in {**mutate.EQUIVALENT, **mutate.KNOWN}:
        path, _, rest = signature.partition(": ")
        line = rest.rpartition(" :: ")[0]
        assert line in (ROOT / path).read_text(), signature

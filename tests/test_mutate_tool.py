"""tools/mutate.py makes the mutants docs/mutation.md says it makes, the planted bugs of issue #37 among them."""

from __future__ import annotations

import ast
import functools
import inspect
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

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


def test_the_excused_survivors_are_read_from_docs_mutation_md_each_with_its_reason():
    equivalent, known = mutate.excused((ROOT / "docs/mutation.md").read_text(encoding="utf-8"))
    assert (equivalent, known) == (mutate.EQUIVALENT, mutate.KNOWN) and len(equivalent) >= 17 and len(known) >= 3
    assert all(reason.strip() for reason in {**equivalent, **known}.values())
    text = "\n".join([
        "## Equivalent", "- `a.py: x :: 1->2@0`: because", "- `b.py: y :: drop`:", "prose `c.py: z :: w`: not an item",
        "### Known", "- `d.h: if (a || b) :: ||->&&@6`: a reason: with a colon", "## Other", "- `e.py: v :: u`: elsewhere",
    ])
    assert mutate.excused(text) == ({"a.py: x :: 1->2@0": "because"}, {"d.h: if (a || b) :: ||->&&@6": "a reason: with a colon"})


_mutants_of = functools.cache(mutate.mutants_of)  # listing a module's mutants parses each: once a run


@pytest.fixture
def listed_once(monkeypatch):
    monkeypatch.setattr(mutate, "mutants_of", _mutants_of)


class _FakeGit:
    """git as ``ci_base`` asks it: HEAD, the merge base with origin/main, and the commits this clone has."""

    def __init__(self, head: str = "h" * 40, merge_base: str | None = None, has: tuple[str, ...] = ()) -> None:
        self.head, self.merge_base, self.has = head, merge_base, has

    def __call__(self, *args: str) -> str | None:
        if args == ("rev-parse", "HEAD"):
            return self.head
        if args[0] == "merge-base":
            return self.merge_base
        if args[:3] == ("rev-parse", "--verify", "-q"):
            commit = args[3].removesuffix("^{commit}")
            return commit if commit in self.has or commit == self.head else None
        raise AssertionError(args)


@pytest.mark.parametrize(("environ", "git", "marker", "base", "why"), [
    ({"MUTATE_BASE": "abc"}, _FakeGit(merge_base="m" * 40), "c" * 40, "abc", "MUTATE_BASE"),
    ({}, _FakeGit(merge_base="m" * 40, has=("c" * 40,)), "c" * 40, "m" * 40, "the merge base with origin/main"),
    ({}, _FakeGit(merge_base="h" * 40, has=("c" * 40,)), "c" * 40 + "\n", "c" * 40, "the last commit CI passed"),
    ({}, _FakeGit(merge_base=None, has=("c" * 40,)), "c" * 40, "c" * 40, "the last commit CI passed"),
    ({}, _FakeGit(merge_base="h" * 40), "c" * 40, None, "which this clone does not have"),
    ({}, _FakeGit(merge_base="h" * 40), "h" * 40, None, "names HEAD: nothing changed"),
    ({}, _FakeGit(), "", None, "names no commit"),
    ({}, _FakeGit(), None, None, "names no commit"),
])
def test_ci_compares_with_what_it_is_given_else_a_branch_s_merge_base_else_the_last_commit_ci_passed(
        monkeypatch, tmp_path, environ, git, marker, base, why):
    monkeypatch.setattr(mutate, "_git", git)
    monkeypatch.setattr(mutate, "ROOT", tmp_path)
    monkeypatch.setattr(mutate, "MARKER", tmp_path / ".ci" / "mutate-base")
    if marker is not None:
        (tmp_path / ".ci").mkdir()
        (tmp_path / ".ci" / "mutate-base").write_text(marker)
    found, reason = mutate.ci_base(environ)
    assert found == base and why in reason


def test_a_spread_is_fixed_by_its_seed_and_reaches_the_relay_and_the_compiled_core(listed_once):
    first = [mutant.key for mutant in mutate.spread(mutate.SPREAD, 12, "effc904")]
    assert first == [mutant.key for mutant in mutate.spread(mutate.SPREAD, 12, "effc904")] and len(set(first)) == 12
    assert first != [mutant.key for mutant in mutate.spread(mutate.SPREAD, 12, "43bf8bf")]
    modules = {key.split(":")[0] for key in first}
    assert len(modules) == 12  # one a module in turn: as many modules as mutants, while there are modules
    assert set(mutate.SPREAD) >= modules
    assert any("/relay/" in module for module in mutate.SPREAD) and any(m.endswith(".h") for m in mutate.SPREAD)
    assert all(module.startswith("src/diverge_codec/relay/") or not module.endswith(".py") for module in mutate.SPREAD)




@pytest.mark.parametrize(("base", "changed", "spread"), [(None, [], True), ("c" * 40, [], True), ("c" * 40, ["m.py"], False)])
def test_ci_mutates_what_changed_since_its_base_and_a_spread_when_nothing_did(monkeypatch, capsys, base, changed, spread):
    monkeypatch.setattr(mutate, "ci_base", lambda: (base, "why"))
    monkeypatch.setattr(mutate, "changed_modules", lambda ref: changed if ref == base else pytest.fail(ref))
    monkeypatch.setattr(mutate, "mutants_of", lambda module: [mutate.Mutant(module, 1, "w", "t", "o")])
    monkeypatch.setattr(mutate, "spread", lambda modules, count, seed: [mutate.Mutant("s.py", 1, f"{count}:{seed}", "t")])
    monkeypatch.setattr(mutate, "_git", lambda *args: "headcommit12")
    parser_args = type("Args", (), {"ci": True, "spread": 6, "seed": None, "module": [], "only": [], "sample": 3})()
    modules, plan = mutate.plan_of(parser_args)
    said = capsys.readouterr().out
    assert f"base: {base[:12] if base else 'none'} (why)" in said
    if spread:
        assert modules == mutate.SPREAD and [m.what for m in plan] == ["6:headcommit12"] and "a spread of 6" in said
    else:
        assert modules == ["m.py"] and [m.key for m in plan] == ["m.py:1:w"]


def _run_main(monkeypatch, tmp_path, outcome: str, *argv: str) -> int:
    """main() with its scratch copy and its oracle faked: the module alone, every oracle run giving ``outcome``."""
    module = "src/diverge_codec/relay/outbox.py"

    def scratch_tree(tests_from):
        scratch = tmp_path / "scratch"
        (scratch / module).parent.mkdir(parents=True, exist_ok=True)
        (scratch / module).write_text((ROOT / module).read_text())
        return scratch
    monkeypatch.setattr(mutate, "scratch_tree", scratch_tree)
    monkeypatch.setattr(mutate, "run_oracle", lambda scratch, tests, timeout, full: outcome)
    return mutate.main(["--module", module, *argv])


def test_each_mutant_is_shown_with_its_line_before_and_after_and_its_verdict(monkeypatch, tmp_path, capsys, listed_once):
    mutant = next(m for m in mutate.mutants_of("src/diverge_codec/relay/outbox.py") if m.signature not in mutate.EQUIVALENT)
    assert _run_main(monkeypatch, tmp_path, "killed", "--only", mutant.key) == 0
    said = capsys.readouterr().out
    after = mutant.text.split("\n")[mutant.line - 1].strip()
    assert f"killed     {mutant.key} (" in said and f"- {mutant.original.strip()}\n" in said and f"+ {after}\n" in said
    assert "src/diverge_codec/relay/outbox.py: 1 / 1 = 100%" in said and "SURVIVED" not in said


def test_a_survivor_not_listed_fails_the_run_and_is_named_one_listed_does_not(monkeypatch, tmp_path, capsys, listed_once):
    mutants = mutate.mutants_of("src/diverge_codec/relay/outbox.py")
    listed = next(m for m in mutants if m.signature in mutate.EQUIVALENT)
    unlisted = next(m for m in mutants if m.signature not in mutate.EQUIVALENT)
    assert _run_main(monkeypatch, tmp_path, "survived", "--only", unlisted.key) == 1
    assert f"SURVIVED, not listed in docs/mutation.md: {unlisted.signature}" in capsys.readouterr().out
    assert _run_main(monkeypatch, tmp_path, "survived", "--only", listed.key) == 0
    said = capsys.readouterr().out
    assert f"equivalent {listed.key}" in said and "SURVIVED" not in said


def test_the_budget_starts_no_mutant_that_would_not_end_within_it(monkeypatch, tmp_path, capsys, listed_once):
    assert _run_main(monkeypatch, tmp_path, "killed", "--sample", "3", "--budget", "19") == 0  # a Python one: 20 s
    said = capsys.readouterr().out
    assert "budget spent: 3 mutants not run" in said and "killed     " not in said


@pytest.mark.parametrize("full", [False, True])
def test_the_oracle_is_its_tests_quick_subset_unless_the_full_files_are_asked(monkeypatch, tmp_path, full):
    """``--full`` (a quick run's survivors against the slow tests too) drops ``-m "not slow"`` and nothing else."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("")
    commands = []
    monkeypatch.setattr(mutate.subprocess, "run", lambda command, **_: commands.append(command) or SimpleNamespace(returncode=1))
    assert mutate.run_oracle(tmp_path, ["tests/test_x.py"], 10, full) == "killed"
    assert (commands[0].count("-m"), "not slow" in commands[0]) == ((1, False) if full else (2, True))  # python -m pytest
    assert commands[0][-1] == "tests/test_x.py"


def test_compiled_mutants_without_cython_stop_the_run_rather_than_pass_as_stillborn(monkeypatch, tmp_path, capsys):
    """A compiled mutant that cannot build is stillborn and not counted: with no Cython none builds, and the compiled
    core would pass untested (CI's venv had none until .ci/mutate installed the build requirements)."""
    module = "src/diverge_codec/_jsonscan.h"
    mutant = mutate.mutants_of(module)[0]
    monkeypatch.setattr(mutate, "scratch_tree", lambda tests_from: pytest.fail("no scratch tree is made"))
    monkeypatch.setattr(mutate.importlib.util, "find_spec", lambda name: None if name == "Cython" else object())
    assert mutate.main(["--module", module, "--only", mutant.key]) == 2
    assert "need pyproject's [build-system] requirements" in capsys.readouterr().err


@pytest.mark.parametrize("timeout, budget, elapsed, cost, limit", [
    (200, 0, 500, 20, 200),  # no budget: the timeout as given
    (200, 90, 10, 20, 80),  # what the budget has left, 80 s, is four times a Python mutant's cost
    (200, 90, 40, 20, 80),  # a hang found late is still given four times the cost, not the 50 s left
    (200, 300, 0, 20, 200),  # never past the timeout
    (200, 90, 40, 60, 200),  # a compiled mutant rebuilds: four times its cost is past the timeout
])
def test_an_oracle_run_is_held_to_the_budget_left_but_never_below_four_times_a_mutants_cost(timeout, budget, elapsed,
                                                                                              cost, limit):
    assert mutate.oracle_limit(timeout, budget, elapsed, cost) == limit

"""Mutation testing: plant one-line bugs in a scratch copy of the tree and see the tests kill them.

Python modules are mutated through their syntax tree (a comparison flipped, ``and``/``or``
swapped, a ``not`` dropped, a constant changed, a statement dropped, a ``+``/``-`` swapped);
the C headers and the Cython sources line by line (a comparison flipped, ``&&``/``||``
swapped, a constant changed, an assignment dropped). Each mutant is one change, written into
a private copy of the tree (``.ci/copy-tree``), rebuilt there if compiled, and run against
the module's tests of the quick subset, ``-x``: a failure kills it, a clean run is a survivor.
The worktree is never written to. Run from the repository root::

    python tools/mutate.py [--module PATH ...] [--changed REF | --ci | --spread N] [--sample N] [--seed S]
                           [--budget SECONDS] [--tests-from REF] [--json OUT] [--list]

``--tests-from REF`` takes ``tests/`` and ``fuzz/`` from a commit (the kill rate of older tests
against the same mutants); ``--ci`` is CI's step (``ci_base``: what changed since the last commit
CI passed, else a spread). The exit status is 1 if a mutant survived that docs/mutation.md does
not list, with its reason, as equivalent or known (``excused``).
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = "src/diverge_codec"
SANS_IO_RELAY = ["tests/test_relay*.py", "tests/test_leftovers.py"]  # their quick subset: the sans-IO tests
KILLS = "tests/test_relay_kills_*.py"  # the quick tests written for survivors of the relay's modules (issue #45)
PURE_CODEC = ["tests/test_mcp_notifications.py", "tests/test_decode_lazy.py", "tests/test_scanner.py",
              "tests/test_scanner_shapes.py", "tests/test_chunk_framer.py", "tests/test_encode_into.py",
              "tests/test_relay_answers.py", "tests/test_fuzz_corpus.py", "tests/test_parity.py", "tests/test_hostile.py",
              "tests/test_decode_unbuilt.py", "tests/test_chunk_framer_shapes.py"]
SCANNER = ["tests/test_scanner.py", "tests/test_scanner_shapes.py", "tests/test_decode_lazy.py",
           "tests/test_chunk_framer.py", "tests/test_fuzz_corpus.py", "tests/test_scanner_long_strings.py",
           "tests/test_scanner_number_runs.py", "tests/test_chunk_framer_memo.py", "tests/test_chunk_framer_shapes.py"]
TOOLS_BEGIN = ["tests/test_tools_begin.py", "tests/test_tools_begin_reader.py", "tests/test_fuzz_corpus.py",
               "tests/test_parity.py", "tests/test_values.py", "tests/test_hostile.py", "tests/test_errors_pickle.py"]
STREAM = ["tests/test_stream.py", "tests/test_stream_records.py", "tests/test_stream_write.py", "tests/test_reentrancy.py"]
SEQUENCE = ["tests/test_sequence.py", "tests/test_sequence_edges.py", "tests/test_proxy.py", "tests/test_contract.py",
            "tests/test_reentrancy.py"]
HTTP_CLIENT = ["tests/test_http_client_pool.py", "tests/test_http_client.py", "tests/test_http_driver.py", KILLS]
HTTP_DRIVER = ["tests/test_relay_http_timing.py", "tests/test_relay_http_headers.py", "tests/test_http_driver_field.py",
               "tests/test_http_driver.py", "tests/test_http_stateless.py", KILLS]
REMOTE_AUTH = ["tests/test_relay_auth.py", "tests/test_relay_http_timing.py", "tests/test_relay_http_headers.py", KILLS]
ORACLES: dict[str, list[str]] = {
    f"{PKG}/relay/session.py": SANS_IO_RELAY,
    f"{PKG}/relay/outbox.py": SANS_IO_RELAY,
    f"{PKG}/relay/http_client.py": HTTP_CLIENT,
    f"{PKG}/relay/http_stream.py": HTTP_CLIENT,
    f"{PKG}/relay/http_proxy.py": HTTP_CLIENT,
    f"{PKG}/relay/http_tls.py": HTTP_CLIENT,
    f"{PKG}/relay/http_body.py": HTTP_DRIVER,
    f"{PKG}/relay/http_reach.py": HTTP_DRIVER,
    f"{PKG}/relay/channel.py": SANS_IO_RELAY,
    f"{PKG}/relay/leftovers.py": ["tests/test_leftovers_proc.py", "tests/test_leftovers.py"],
    f"{PKG}/relay/http_streams.py": HTTP_DRIVER,
    f"{PKG}/relay/streamable_http.py": HTTP_DRIVER,
    f"{PKG}/relay/http_driver.py": HTTP_DRIVER,
    f"{PKG}/relay/http_stateless.py": HTTP_DRIVER,
    f"{PKG}/relay/param_headers.py": ["tests/test_param_headers.py", "tests/test_http_stateless.py",
                                      "tests/test_relay_http_headers.py"],
    f"{PKG}/relay/http_requests.py": HTTP_DRIVER,
    f"{PKG}/relay/remote_auth.py": REMOTE_AUTH,
    f"{PKG}/relay/http_stateless.py": HTTP_DRIVER,
    f"{PKG}/relay/http_sse.py": [*HTTP_DRIVER, "tests/test_relay_sse.py"],
    f"{PKG}/relay/eventstream.py": ["tests/test_eventstream.py", "tests/test_relay_sse.py", "tests/test_http_driver.py", KILLS],
    f"{PKG}/relay/cookies.py": ["tests/test_relay_cookies.py", "tests/test_http_client.py", KILLS],
    f"{PKG}/relay/eras.py": SANS_IO_RELAY,
    f"{PKG}/_mcp_notifications_py.py": PURE_CODEC,
    f"{PKG}/_tools_begin_py.py": TOOLS_BEGIN,
    f"{PKG}/_stream_py.py": STREAM,
    f"{PKG}/_sequence_py.py": SEQUENCE,
    f"{PKG}/_rules.py": SEQUENCE,
    f"{PKG}/sequence.py": SEQUENCE,
    f"{PKG}/_jsonscan.h": SCANNER,
    f"{PKG}/_relayscan.c": SCANNER,
    f"{PKG}/_jsonwrite.h": ["tests/test_mcp_notifications.py", "tests/test_encode_into.py", "tests/test_fuzz_corpus.py"],
    f"{PKG}/_tools_begin_scan.h": TOOLS_BEGIN,
    f"{PKG}/_mcp_notifications_c.pyx": PURE_CODEC,
    f"{PKG}/_mcp_notifications_chunks.pxi": PURE_CODEC,
    f"{PKG}/_mcp_notifications_lazy.pxi": PURE_CODEC,
    f"{PKG}/_tools_begin_c.pyx": TOOLS_BEGIN,
    f"{PKG}/_stream_c.pyx": STREAM,
    f"{PKG}/_sequence_c.pyx": SEQUENCE,
}
"""Each module the script mutates, and the tests that are its oracle (their quick subset)."""
SPREAD = [module for module in ORACLES if module.startswith(f"{PKG}/relay/") or not module.endswith(".py")]
"""Where ``--spread`` draws from: the relay's modules and the compiled core (CI's step with no base to compare with)."""
MARKER = ROOT / ".ci" / "mutate-base"
"""The last commit of main that CI passed, as the lead records it: what CI's step compares a change with."""

EXCUSED_IN = ROOT / "docs" / "mutation.md"
"""Where the survivors that fail no run are listed, each with its reason (its "Equivalent" and "Known" lists)."""


def excused(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """The equivalent and the known mutants docs/mutation.md lists, by ``Mutant.signature``, each with its reason:
    the items ``- `SIGNATURE`: REASON`` under its headings "Equivalent" and "Known"."""
    lists: dict[str, dict[str, str]] = {"Equivalent": {}, "Known": {}}
    current = None
    for line in text.splitlines():
        if line.startswith("#"):
            current = lists.get(line.lstrip("#").strip())
        elif current is not None and (item := re.match(r"- `([^`]+)`: (\S.*)$", line)):
            current[item.group(1)] = item.group(2)
    return lists["Equivalent"], lists["Known"]


EQUIVALENT, KNOWN = excused(EXCUSED_IN.read_text(encoding="utf-8")) if EXCUSED_IN.is_file() else ({}, {})
"""Survivors shown equivalent (no input tells them from the original), and survivors that are not but that no test
can see (memory safety, undefined behaviour with the same results: .ci/sanitize's builds are their test), by
``Mutant.signature``. A survivor in neither fails the run."""


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the root
    line: int
    what: str
    text: str  # the whole mutated file

    original: str = ""  # the line changed, as it stands in the source

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{self.what}"

    @property
    def signature(self) -> str:
        """What EQUIVALENT names a mutant by: its place by the line's text, not its number (lines move)."""
        return f"{self.path}: {self.original.strip()} :: {self.what.partition('#')[0]}"


# Python: the syntax tree ---------------------------------------------------------------------------

_FLIPS = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
          ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_BINOPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.BitOr: ast.BitAnd, ast.BitAnd: ast.BitOr, ast.Mult: ast.FloorDiv}


def _is_docstring(node: ast.AST | None, parents: dict[ast.AST, ast.AST]) -> bool:
    """A string standing alone as a statement: a docstring, or an attribute's (no behaviour)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and isinstance(parents.get(node), ast.Expr)


def _python_changes(source: str) -> list[tuple[ast.AST, str, str]]:
    """(node, what, replacement source) for every mutation point of a module."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    changes: list[tuple[ast.AST, str, str]] = []

    def skip(node: ast.AST) -> bool:  # annotations, __all__, type checking, messages: no behaviour to test
        while node in parents:
            parent = parents[node]
            if isinstance(parent, (ast.AnnAssign, ast.arg)) and node is getattr(parent, "annotation", None):
                return True
            if isinstance(parent, ast.FunctionDef) and node is parent.returns:
                return True
            if isinstance(parent, ast.If) and ast.unparse(parent.test) == "TYPE_CHECKING":
                return True
            if isinstance(parent, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in parent.targets):
                return True
            node = parent
        return False

    for node in ast.walk(tree):
        if not hasattr(node, "lineno") or skip(node) or (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        if isinstance(node, ast.Compare):
            for index, op in enumerate(node.ops):
                if type(op) in _FLIPS:
                    ops = list(node.ops)
                    ops[index] = _FLIPS[type(op)]()
                    changes.append((node, f"{type(op).__name__}->{type(ops[index]).__name__}",
                                    ast.unparse(ast.Compare(node.left, ops, node.comparators))))
        elif isinstance(node, ast.BoolOp):
            other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            changes.append((node, f"{type(node.op).__name__}->{type(other).__name__}",
                            ast.unparse(ast.BoolOp(other, node.values))))
            for index in range(len(node.values)):  # one condition dropped
                rest = node.values[:index] + node.values[index + 1:]
                changes.append((node, f"drop operand {index + 1} of {type(node.op).__name__}",
                                ast.unparse(rest[0] if len(rest) == 1 else ast.BoolOp(node.op, rest))))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            changes.append((node, "drop not", ast.unparse(node.operand)))
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            new = _BINOPS[type(node.op)]()
            changes.append((node, f"{type(node.op).__name__}->{type(new).__name__}",
                            ast.unparse(ast.BinOp(node.left, new, node.right))))
        elif isinstance(node, ast.AugAssign) and type(node.op) in _BINOPS:
            new = _BINOPS[type(node.op)]()
            changes.append((node, f"{type(node.op).__name__}= -> {type(new).__name__}=",
                            ast.unparse(ast.AugAssign(node.target, new, node.value))))
        elif isinstance(node, ast.Constant) and not _is_docstring(node, parents):
            value = node.value
            if isinstance(value, bool):
                changes.append((node, f"{value}->{not value}", repr(not value)))
            elif isinstance(value, int):
                changes.append((node, f"{value}->{value + 1}", repr(value + 1)))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Expr, ast.Return, ast.Raise, ast.Delete)) \
                and not _is_docstring(getattr(node, "value", None), parents) \
                and not isinstance(parents.get(node), (ast.Module, ast.ClassDef)):
            changes.append((node, f"drop {type(node).__name__.lower()}", "pass"))
        if isinstance(node, (ast.If, ast.While)):
            changes.append((node.test, "negate condition", f"not ({ast.unparse(node.test)})"))
        if isinstance(node, ast.If):
            changes += [(node.test, "condition always", "True"), (node.test, "condition never", "False")]
    return changes


def _lines(source: str) -> list[str]:
    """The lines as the parser counts them: at newlines only (str.splitlines also splits at a form feed)."""
    return [line + "\n" for line in source.split("\n")]


def _offsets(source: str) -> list[int]:
    starts, total = [], 0
    for line in _lines(source):
        starts.append(total)
        total += len(line)
    return starts


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def python_mutants(path: str, check: bool = True) -> list[Mutant]:
    """Every mutant of a Python module; with ``check``, only those that parse (a parse each: the cost of a listing)."""
    source = (ROOT / path).read_text()
    starts = _offsets(source)
    mutants = []
    lines = _lines(source)
    for node, what, replacement in _python_changes(source):
        begin = starts[node.lineno - 1] + len(lines[node.lineno - 1].encode()[:node.col_offset].decode())
        end = starts[node.end_lineno - 1] + len(lines[node.end_lineno - 1].encode()[:node.end_col_offset].decode())
        if replacement != "pass" and "\n" not in source[begin:end]:
            replacement = f"({replacement})"
        text = source[:begin] + replacement + source[end:]
        if check and not _parses(text):
            continue
        mutants.append(Mutant(path, node.lineno, f"{what}@{node.col_offset}", text))
    return mutants


# C and Cython: line by line ------------------------------------------------------------------------

_C_OPS = [(r"==", "!="), (r"!=", "=="), (r"<=", "<"), (r">=", ">"), (r"(?<![<-])<(?![<=])", "<="),
          (r"(?<![>-])>(?![>=])", ">="), (r"&&", "||"), (r"\|\|", "&&"), (r"(?<![\w.])([1-9]\d*|0)(?![\w.x])", None)]
_GUARDED = re.compile(r"^(\s*if\s*\(.*\)\s*)([\w>\-\.]+\s*=\s*[^=;]+;)\s*$")
_ASSIGN = re.compile(r"^\s*[\w>\-\.\[\]]+\s*=\s*[^=;]+;\s*(/\*.*\*/)?\s*$")


def _code_part(line: str, cython: bool) -> str:
    """The line without its comment and strings (blanked, so offsets stay)."""
    line = re.sub(r'"(\\.|[^"\\])*"' + r"|'(\\.|[^'\\])*'", lambda m: " " * len(m.group()), line)
    for mark in (("#",) if cython else ("//", "/*")):
        at = line.find(mark)
        if at >= 0:
            line = line[:at] + " " * (len(line) - at)
    return line


def c_mutants(path: str) -> list[Mutant]:
    lines = [line + "\n" for line in (ROOT / path).read_text().split("\n")]
    lines[-1] = lines[-1][:-1]
    cython = path.endswith((".pyx", ".pxi", ".pxd"))
    mutants = []
    in_comment = False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not cython and (in_comment or stripped.startswith("/*")):
            in_comment = "*/" not in stripped
            continue
        if not stripped or stripped.startswith(("#", "//", "*", "cimport", "from ", "import ", "cdef extern", "ctypedef",
                                                  "DEF ", "include")):
            continue
        if cython and re.match(r"\s*(cdef|cpdef|def|class|@)", line) and ":" in line and "=" not in line:
            continue  # a signature: its types and defaults are not behaviour to flip here
        code = _code_part(line, cython)
        if cython and "<" in code and re.search(r"<[\w\s\*]+>", code):
            code = re.sub(r"<[\w\s\*]+>", lambda m: " " * len(m.group()), code)  # a cast, not a comparison
        for pattern, replacement in _C_OPS:
            for match in re.finditer(pattern, code):
                if replacement is None:
                    if re.search(r"\[\s*$", code[:match.start()]) or "[" in code and "]" in code[match.end():] and \
                            re.match(r"\s*(static\s+)?(const\s+)?(unsigned\s+)?\w+\s+\w+\s*\[", code):
                        continue  # an array's size
                    new = str(int(match.group()) + 1)
                    what = f"{match.group()}->{new}@{match.start()}"
                else:
                    new, what = replacement, f"{match.group()}->{replacement}@{match.start()}"
                mutated = line[:match.start()] + new + line[match.end():]
                mutants.append(Mutant(path, number, what, "".join(lines[:number - 1] + [mutated] + lines[number:])))
        if _ASSIGN.match(code if not cython else code + ";") and "==" not in code and not re.match(r"\s*(static|const|int|size_t|unsigned|char|cdef)\b", code):
            indent = line[:len(line) - len(line.lstrip())]
            dropped = indent + ("pass\n" if cython else ";\n")
            mutants.append(Mutant(path, number, "drop assignment", "".join(lines[:number - 1] + [dropped] + lines[number:])))
        guarded = None if cython else _GUARDED.match(code)
        if guarded:  # if (...) x = y;  a reset made under a condition
            mutated = line[:guarded.start(2)] + ";" + line[guarded.end(2):]
            mutants.append(Mutant(path, number, "drop guarded assignment", "".join(lines[:number - 1] + [mutated] + lines[number:])))
    return mutants


def mutants_of(path: str, check: bool = True) -> list[Mutant]:
    """Every mutant of a module, each key unique (a second change at the same place gets #2); without ``check``,
    a Python module's include some that do not parse (``spread`` parses those it draws)."""
    seen: dict[str, int] = {}
    unique = []
    lines = (ROOT / path).read_text().split("\n")
    for mutant in python_mutants(path, check) if path.endswith(".py") else c_mutants(path):
        seen[mutant.key] = seen.get(mutant.key, 0) + 1
        what = mutant.what if seen[mutant.key] == 1 else f"{mutant.what}#{seen[mutant.key]}"
        unique.append(Mutant(mutant.path, mutant.line, what, mutant.text, lines[mutant.line - 1]))
    return unique


# Running ---------------------------------------------------------------------------------------------


def scratch_tree(tests_from: str | None) -> Path:
    """A private copy of the tree with the built modules (newer than their sources: only a mutated one rebuilds)."""
    scratch = Path(tempfile.mkdtemp(prefix="mutate-"))
    subprocess.run(["bash", str(ROOT / ".ci/copy-tree"), str(scratch)], check=True)
    if tests_from:
        for folder in ("tests", "fuzz"):
            shutil.rmtree(scratch / folder)
            archive = subprocess.run(["git", "archive", tests_from, folder], cwd=ROOT, check=True, capture_output=True).stdout
            subprocess.run(["tar", "x", "-C", str(scratch)], input=archive, check=True)
    for peer in ("node_modules", ".venvs"):
        if (ROOT / "tests/peers" / peer).exists() and not (scratch / "tests/peers" / peer).exists():
            (scratch / "tests/peers" / peer).symlink_to((ROOT / "tests/peers" / peer).resolve())
    time.sleep(1.1)  # the copies below are newer than every source copied above
    import diverge_codec  # the install's built modules: in place (editable), or in site-packages (CI)

    installed = Path(diverge_codec.__file__).parent
    for built in sorted(installed.glob("*.so")) + sorted((ROOT / PKG).glob("*.c")):
        shutil.copy2(built, scratch / PKG / built.name)
        os.utime(scratch / PKG / built.name)
    if (ROOT / "build").is_dir():
        shutil.copytree(ROOT / "build", scratch / "build", symlinks=True)
    if len(list((scratch / PKG).glob("*.so"))) < 4 and not build(scratch):  # a tree installed, not built in place (CI)
        raise SystemExit("the scratch copy does not build")
    return scratch


def _env(scratch: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(scratch / "src"), "PYTHONDONTWRITEBYTECODE": "1",
            "CFLAGS": "-g -O0", "DIVERGE_CODEC_REQUIRE_EXTENSION": "1"}


def build(scratch: Path) -> bool:
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=scratch, env=_env(scratch),
                          capture_output=True, timeout=900)
    return done.returncode == 0


def oracle_limit(timeout: float, budget: float, elapsed: float, cost: float) -> float:
    """One oracle run's limit: ``timeout``, cut to what the budget has left but never below four times a mutant's
    usual cost (a hanging mutant once held CI for the whole 200 s; the slowest passing oracle takes about 27 s)."""
    if not budget:
        return timeout
    return min(timeout, max(4 * cost, budget - elapsed))


def run_oracle(scratch: Path, tests: list[str], timeout: float, full: bool = False) -> str:
    """killed, survived or timeout: the tests' quick subset, or all of them (``full``: the slow ones too)."""
    present = [str(path.relative_to(scratch)) + test.partition("::")[1] + test.partition("::")[2]
               for test in tests for path in sorted(scratch.glob(test.partition("::")[0]))]
    command = [sys.executable, "-m", "pytest", "-x", "-q", *([] if full else ["-m", "not slow"]), "-p", "no:cacheprovider",
               "--no-header", "-o", "addopts=", *present]
    try:
        done = subprocess.run(command, cwd=scratch, env=_env(scratch), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    return "survived" if done.returncode in (0, 5) else "killed"  # 5: no test ran, so none killed it


def _git(*args: str) -> str | None:
    """git's output in the checkout, stripped; None if it fails (no such commit, a shallow clone, no git)."""
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def ci_base(environ: dict[str, str] | os._Environ[str] = os.environ) -> tuple[str | None, str]:
    """What CI's step compares the change with, and why: ``MUTATE_BASE``; else the merge base with ``origin/main``
    where it is not HEAD (a branch); else the commit ``.ci/mutate-base`` names, if this clone has it and it is
    not HEAD. None where none is (a fresh clone of main whose marker is HEAD, or a shallow one)."""
    if environ.get("MUTATE_BASE"):
        return environ["MUTATE_BASE"], "MUTATE_BASE"
    head = _git("rev-parse", "HEAD")
    merge_base = _git("merge-base", "HEAD", "origin/main")
    if merge_base and merge_base != head:
        return merge_base, "the merge base with origin/main"
    marked = MARKER.read_text().split()[0] if MARKER.is_file() and MARKER.read_text().split() else None
    if marked is None:
        return None, f"{MARKER.relative_to(ROOT)} names no commit"
    commit = _git("rev-parse", "--verify", "-q", f"{marked}^{{commit}}")
    if commit is None:
        return None, f"{MARKER.relative_to(ROOT)} names {marked[:12]}, which this clone does not have (shallow?)"
    if commit == head:
        return None, f"{MARKER.relative_to(ROOT)} names HEAD: nothing changed since CI last passed"
    return commit, f"the last commit CI passed ({MARKER.relative_to(ROOT)})"


def spread(modules: list[str], count: int, seed: str) -> list[Mutant]:
    """``count`` mutants drawn by ``seed`` across ``modules``, one a module in turn (the modules in a seeded order),
    so that a small sample reaches many modules and, across seeds, every one."""
    draw = random.Random(f"spread:{seed}")
    order = draw.sample(modules, len(modules))
    pools = {module: draw.sample(found, len(found)) for module in order if (found := mutants_of(module, check=False))}
    plan: list[Mutant] = []
    while len(plan) < count and any(pools.values()):
        for module in order:
            while pools.get(module) and len(plan) < count:
                mutant = pools[module].pop()
                if not module.endswith(".py") or _parses(mutant.text):
                    plan.append(mutant)
                    break
    return plan


def changed_modules(ref: str) -> list[str]:
    names = (_git("diff", "--name-only", ref, "--", PKG, "tests", "fuzz") or "").split()
    touched = [name for name in names if name in ORACLES]
    for name in names:  # a test changed: the modules it is the oracle of
        touched += [module for module, tests in ORACLES.items()
                    if any(fnmatch.fnmatchcase(name, test) for test in tests) and module not in touched]
    return touched


def plan_of(args: argparse.Namespace) -> tuple[list[str], list[Mutant]]:
    """The modules and the mutants a run plants: ``--ci`` chooses between what changed and a spread."""
    seed = args.seed or "1"
    if args.ci:
        base, why = ci_base()
        modules = changed_modules(base) if base else []
        print(f"base: {base[:12] if base else 'none'} ({why}); modules changed since: {len(modules)}")
        if not modules:
            seed = args.seed or (_git("rev-parse", "--short=12", "HEAD") or "1")
            print(f"nothing to compare with or nothing changed: a spread of {args.spread} mutants across the relay's"
                  f" modules and the compiled core, seed {seed}")
            return SPREAD, spread(SPREAD, args.spread, seed)
    elif args.spread:
        return SPREAD, spread(args.module or SPREAD, args.spread, seed)
    else:
        modules = args.module or (changed_modules(args.changed) if args.changed else list(ORACLES))
    modules = sorted(modules, key=lambda module: not module.endswith(".py"))  # the cheap ones first: no build
    plan: list[Mutant] = []
    for module in modules:
        found = mutants_of(module)
        if args.only:
            found = [mutant for mutant in found if mutant.key in args.only]
        elif args.sample and len(found) > args.sample:
            found = sorted(random.Random(f"{seed}:{module}").sample(found, args.sample), key=lambda m: m.line)
        plan += found
    return modules, plan


def _change(mutant: Mutant) -> str:
    """The line as it was and as the mutant has it (its first line, where the change spans more)."""
    after = mutant.text.split("\n")[mutant.line - 1].strip()
    return f"{'':11}- {mutant.original.strip()}\n{'':11}+ {after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", default=[], help="a path from ORACLES (default: all)")
    parser.add_argument("--changed", metavar="REF", help="the modules a diff from REF touched, or whose tests it touched")
    parser.add_argument("--ci", action="store_true", help="CI's step: what changed since the base ci_base() finds,"
                        " else a --spread (seeded by HEAD unless --seed)")
    parser.add_argument("--sample", type=int, default=0, help="at most N mutants a module, drawn by --seed (0: all)")
    parser.add_argument("--spread", type=int, default=0, help="N mutants across the relay and the compiled core (SPREAD)")
    parser.add_argument("--seed", help="what draws the sample (default 1; with --ci, HEAD's commit)")
    parser.add_argument("--budget", type=float, default=0, help="start no mutant that would not end within this many seconds")
    parser.add_argument("--timeout", type=float, default=240, help="one oracle run's limit (a timeout counts as killed)")
    parser.add_argument("--tests-from", metavar="REF", help="tests/ and fuzz/ from this commit")
    parser.add_argument("--only", action="append", default=[], help="the mutant path:line:what (repeatable)")
    parser.add_argument("--tests", action="append", default=[], help="run these tests (pytest ids) instead of the oracle")
    parser.add_argument("--full", action="store_true", help="the oracle's slow tests too (processes, servers): what the"
                        " whole suite would kill, for the survivors of a quick run (--only)")
    parser.add_argument("--json", type=Path, help="write every outcome here")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    args = parser.parse_args(argv)
    if args.ci and not args.spread:
        args.spread = 6
    modules, plan = plan_of(args)
    if args.list:
        for mutant in plan:
            print(mutant.key)
        return 0
    if not plan:
        print("no module to mutate")
        return 0
    if any(not mutant.path.endswith(".py") for mutant in plan) and importlib.util.find_spec("Cython") is None:
        # Without the build requirements every compiled mutant fails to build, and a stillborn one is not counted:
        # the compiled core would pass untested.
        print("the compiled mutants need pyproject's [build-system] requirements (setuptools, Cython) in this Python:"
              " none would build", file=sys.stderr)
        return 2
    started, outcomes, dirty, skipped = time.monotonic(), [], False, 0
    scratch = scratch_tree(args.tests_from)
    try:
        for mutant in plan:
            cost = 20 if mutant.path.endswith(".py") else 60  # about what one costs here: a compiled one rebuilds
            if args.budget and time.monotonic() - started + cost > args.budget:
                skipped += 1  # a cheaper one after it may still fit
                continue
            target = scratch / mutant.path
            original = target.read_text()
            compiled = not mutant.path.endswith(".py")
            if dirty and not compiled:  # the last compiled mutant's modules are still built: rebuild the originals
                dirty = not build(scratch)
            target.write_text(mutant.text)
            began = time.monotonic()
            limit = oracle_limit(args.timeout, args.budget, began - started, cost)
            try:
                outcome = "stillborn" if compiled and not build(scratch) else run_oracle(scratch, args.tests or ORACLES[mutant.path], limit, args.full)
            finally:
                target.write_text(original)
                dirty = dirty or compiled
            if outcome == "survived" and (mutant.signature in EQUIVALENT or mutant.signature in KNOWN):
                outcome = "equivalent" if mutant.signature in EQUIVALENT else "known"
            outcomes.append({"mutant": mutant.key, "signature": mutant.signature, "outcome": outcome,
                             "seconds": round(time.monotonic() - began, 1)})
            print(f"{outcome:10} {mutant.key} ({time.monotonic() - began:.0f} s)\n{_change(mutant)}", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if skipped:
        print(f"budget spent: {skipped} mutants not run")
    print(f"\nmodule: killed / run (timeouts count as killed; equivalent, known and stillborn mutants are not counted),"
          f" {time.monotonic() - started:.0f} s in all")
    for module in modules:
        mine = [o["outcome"] for o in outcomes if o["mutant"].startswith(module + ":")]
        ran = [o for o in mine if o in ("killed", "survived", "timeout")]
        if mine:
            killed = sum(o != "survived" for o in ran)
            print(f"  {module}: {killed} / {len(ran)} = {100 * killed / max(len(ran), 1):.0f}%"
                  f" ({mine.count('equivalent')} equivalent, {mine.count('known')} known, {mine.count('stillborn')} stillborn)")
    survivors = [o for o in outcomes if o["outcome"] == "survived"]
    for survivor in survivors:
        print(f"SURVIVED, not listed in docs/mutation.md: {survivor['signature']}")
    if args.json:
        args.json.write_text(json.dumps(outcomes, indent=1) + "\n")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())

"""Every behaviour test runs against both cores: the fixtures below are parametrized over ``c`` and ``py``.

The compiled modules are imported directly, never through the public modules, so a
``c`` case runs the compiled core or does not run. Where the compiled core is not built
(a pure install: no compiler, PyPy, a ``py3-none-any`` wheel) the ``c`` cases are skipped
and say so in the summary; with ``DIVERGE_CODEC_REQUIRE_EXTENSION=1`` (CI) a missing
compiled core fails them instead.
"""

from __future__ import annotations

import fnmatch
import gc
import importlib
import ipaddress
import os
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
from hypothesis import HealthCheck, settings

# The fixtures hand out modules, which hold no state between examples.
settings.register_profile(
    "diverge", suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
settings.register_profile(
    "ci", parent=settings.get_profile("diverge"), max_examples=300, print_blob=True
)
# .ci/sanitize: fewer examples for a run ~5x slower (children the tests start inherit the name).
settings.register_profile(
    "sanitize", suppress_health_check=list(HealthCheck), deadline=None, max_examples=25, print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "diverge"))

ALLOW_NO_EXTENSION = os.environ.get("DIVERGE_CODEC_REQUIRE_EXTENSION", "") in ("", "0")
REQUIRE_PEERS = os.environ.get("DIVERGE_CODEC_REQUIRE_PEERS", "") not in ("", "0")
"""CI: a real MCP server the tests need and cannot find fails them instead of skipping them."""


def _has_tracemalloc() -> bool:
    try:
        import tracemalloc  # noqa: F401  (PyPy ships the module, not its C half, _tracemalloc)
    except ImportError:
        return False
    return True


def require_gc_hooks() -> None:
    """Skip, saying why, where Python code cannot run at every collection nor collect at every allocation."""
    if not (hasattr(gc, "callbacks") and hasattr(gc, "set_threshold")):
        pytest.skip("gc.callbacks and gc.set_threshold are CPython's (this collector takes neither)")


def require_gc_inside_compiled_calls(implementation: str) -> None:
    """Skip a ``c`` case that needs a collection inside a compiled call: CPython 3.12+ never makes one."""
    if implementation == "c" and sys.version_info >= (3, 12):
        pytest.skip("CPython 3.12+ collects only between bytecodes: no GC callback or finalizer runs inside a compiled call")


def exports_lock_bytearrays() -> bool:
    """Whether a bytearray with a live memoryview refuses to resize (CPython, PyPy 8; not PyPy 7.3.19)."""
    data = bytearray(b"x")
    with memoryview(data):
        try:
            data += b"y"
        except BufferError:
            return True
    return False


# Memory tests measure with tracemalloc, which is CPython's: elsewhere they skip, saying so.
needs_tracemalloc = pytest.mark.skipif(
    not _has_tracemalloc(), reason="tracemalloc is CPython's (this Python has no _tracemalloc)"
)
IMPLEMENTATIONS = ["c", "py"]


def load(channel: str, implementation: str) -> ModuleType:
    name = f"diverge_codec._{channel}_{implementation}"
    if implementation == "c" and ALLOW_NO_EXTENSION:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name != name:
                raise
            pytest.skip("compiled core not built in this install (see `diverge-codec doctor`)")
    return importlib.import_module(name)


@pytest.fixture(params=IMPLEMENTATIONS)
def tb(request: pytest.FixtureRequest) -> ModuleType:
    """The tools-begin codec of one implementation."""
    return load("tools_begin", request.param)


@pytest.fixture(params=IMPLEMENTATIONS)
def mn(request: pytest.FixtureRequest) -> ModuleType:
    """The mcp-notifications codec of one implementation."""
    return load("mcp_notifications", request.param)


@pytest.fixture(params=IMPLEMENTATIONS)
def seq(request: pytest.FixtureRequest) -> ModuleType:
    """The sequence checkers of one implementation (whichever codec they are handed)."""
    return load("sequence", request.param)


@pytest.fixture
def both_seq() -> tuple[ModuleType, ModuleType]:
    return load("sequence", "c"), load("sequence", "py")


@pytest.fixture
def both_tb() -> tuple[ModuleType, ModuleType]:
    return load("tools_begin", "c"), load("tools_begin", "py")


@pytest.fixture
def both_mn() -> tuple[ModuleType, ModuleType]:
    return load("mcp_notifications", "c"), load("mcp_notifications", "py")


@pytest.fixture(params=IMPLEMENTATIONS)
def stream_core(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's envelope reader (``cli._records``) over one implementation's RecordReader."""
    from diverge_codec.cli import _records

    module = load("stream", request.param)
    monkeypatch.setattr(_records, "stream", SimpleNamespace(RecordReader=module.RecordReader))


def assert_message(error: BaseException, message: str) -> None:
    """The exact message; on the stdlib JSON path, a parser's own phrase may differ, so only up to it."""
    from diverge_codec import _json

    if _json.BACKEND != "orjson" and "(char " in message:
        prefix = message.split(": ", 1)[0] if "did not parse" in message else message
        assert str(error).startswith(prefix)
        return
    assert str(error) == message


# The slow marker: `python -m pytest -m "not slow"` is the quick subset, where bugs are caught first.
# A test is slow by what it does, not by its file's name: it starts a process, or it takes over
# ~1.5 s. Those are declared here; every other test is quick, and a quick test that starts a process
# fails (the audit hook below), so the declarations stay true. A server on a loopback address bound
# by the test's own process (asyncio's, served by its event loop) is no process and costs
# milliseconds: a quick test may bind one (issue #45); any other address, or a Unix socket, fails it
# as a process does. DIVERGE_CODEC_SLOW_AUDIT=record DIVERGE_CODEC_SLOW_AUDIT_FILE=PATH lists what each
# quick test started instead of failing it: how PROCESSES was found (the whole suite, peers
# installed, 2026-12-06). The durations are `--durations` on a busy 2-core machine.
SLOW_FILES = (
    "test_cli.py", "test_cli_hostile.py", "test_cli_streaming.py", "test_mcp_relay.py", "test_relay_command.py",
    "test_relay_http.py", "test_relay_many.py", "test_typing.py", "test_relay_http_hostile.py", "test_relay_http_restart.py",
    "test_relay_http_reach.py", "test_relay_channel_end.py", "test_relay_person.py",
    "test_http_client_infra.py",  # nginx, squid, tinyproxy (tests/infra.py)
    "test_relay_http_infra.py",  # the relay behind nginx and haproxy, past a forgetful middlebox
    "test_relay_token_command.py",
    "test_relay_eras_peers.py",
    "test_relay_api.py", "test_relay_fleet.py", "test_examples_embedding.py",
    "test_relay_http_eras.py",  # both SDKs' 2026-07-28 HTTP servers, a recording proxy, a server restarted
)
"""Files every test of which starts a process (the CLI, a relay, a type checker, a server)."""
PROCESSES = {
    "test_cli_parts.py": ("test_bench_plot_has_a_title_lower_is_better_and_the_targets",),  # matplotlib runs fc-list until its font cache is made
    "test_cli_mistakes.py": (
        "test_a_bad_path_fails_before_any_output", "test_a_json_looking_start_within_the_limit_is_read_as_records",
        "test_an_empty_capture_is_a_finish_with_nothing", "test_json_lines_given_to_inspect_say_what_to_run_before_any_output",
        "test_json_lines_on_standard_input_say_so_after_the_header", "test_what_the_hint_says_to_run_inspects_the_capture",
    ),
    "test_cli_startup.py": (
        "test_a_command_relay_loads_asyncio_without_ssl_and_puts_it_back", "test_only_the_chosen_subcommand_is_imported",
        "test_where_ssl_is_already_imported_asyncio_keeps_it", "test_start_up_pauses_the_collector_and_gives_it_back",
        "test_start_up_compiles_no_hint_or_cookie_pattern_and_imports_no_calendar",
        "test_a_stdio_relays_start_up_imports_no_url_parser",
    ),
    "test_contract.py": ("test_the_stdlib_backend_gives_every_outcome_orjson_gives",),
    "test_decode_lazy.py": ("test_the_stdlib_json_path_reads_the_pieces_alike",),
    "test_scanner_long_strings.py": ("test_the_environment_caps_the_first_choice",),
    "test_hostile.py": ("test_a_100_mb_body_costs_about_two_copies",),
    "test_install.py": (
        "test_a_missing_compiled_core_is_a_silent_fallback_even_under_W_error",
        "test_doctor_names_a_forced_stdlib_backend_and_gives_no_compile_hint_when_pure_is_chosen",
        "test_doctor_on_a_pure_install_says_how_to_compile", "test_forced_pure_says_so", "test_python_dash_m_runs_doctor",
        "test_require_extension_makes_a_missing_compiled_core_an_import_error",
        "test_pypy_gets_the_pure_core_says_why_and_no_compile_hint",  # PyPy's: a child there
        "test_pypy_with_the_extension_required_and_none_built_is_an_import_error",
    ),
    "test_json_fallback.py": ("test_both_cores_on_the_stdlib_path_refuse_what_they_refuse_on_orjson",),
    "test_ci_debian_mirror.py": (
        "test_no_debian_source_is_refused_saying_what_to_set", "test_no_registry_host_is_named_in_the_repository",
        "test_the_first_debian_release_source_is_the_mirror",
    ),
    "test_cli_first_hour.py": (
        "test_a_pipe_without_a_dash_is_refused_naming_the_dash_and_the_sample", "test_an_empty_pipe_without_a_dash_is_refused_too",
        "test_force_tty_writes_it_anyway", "test_long_params_are_clipped_in_text", "test_no_input_given_shows_the_sample_saying_so",
        "test_params_are_hidden_by_default_and_shown_escaped_on_request", "test_params_in_json_are_null_unless_asked",
        "test_sample_is_shown_on_request_without_a_note_whatever_stdin_is", "test_sample_with_a_file_is_refused",
        "test_the_channel_is_not_written_to_a_terminal", "test_the_readme_first_command_works_with_stdin_not_a_terminal",
    ),
    "test_leftovers.py": (
        "test_a_server_still_running_is_ended_by_its_group_and_is_not_its_own_leftover",
        "test_the_environment_of_a_process_older_than_this_one_is_not_read",
        "test_what_a_server_left_is_found_as_a_scan_of_every_process_finds_it_and_ended",
        "test_what_is_below_a_running_server_is_not_read_until_it_stopped",
        "test_a_dead_unreaped_child_is_not_a_leftover", "test_children_are_the_children_a_scan_of_proc_finds_from_every_thread",
        "test_descendants_are_the_tree_a_scan_of_proc_finds_grandchildren_and_other_groups_included",
        "test_end_children_kills_what_it_finds_and_spares_what_it_is_told_to",
        "test_a_group_held_reaches_its_members_after_its_leader_is_reaped_and_nothing_once_they_ended",
        "test_a_leader_reaped_before_its_group_is_held_is_not_trusted_by_its_number",
        "test_the_stdio_driver_never_signals_its_server_s_group_by_number_once_the_leader_is_reaped",
    ),
    "test_mcp_sdk.py": (
        "test_under_mcp_1x_the_import_names_the_version_needed_and_the_one_found",
        "test_without_mcp_the_import_says_so_and_how_to_install_it",
    ),
    "test_model.py": ("test_compiled_is_used_when_built", "test_pure_is_forced_by_the_environment"),
    "test_peers.py": (
        "test_big_log_server_writes_one_line_over_two_mib", "test_eof_ignoring_server_needs_sigkill",
        "test_eof_ignoring_server_without_flag_ends_on_sigterm", "test_exit_at_once_server", "test_live_sdk_server_member_order",
        "test_live_server_everything_progress", "test_live_ts_server_early_logs_before_answering_initialize",
    ),
    "test_private_files.py": (
        "test_encode_refuses_a_symbolic_link_and_leaves_its_target", "test_encode_replaces_an_existing_0644_file_with_a_0600_one",
        "test_encode_writes_a_new_file_0600", "test_what_is_no_regular_file_is_refused_and_left",
    ),
    "test_readme.py": ("test_a_readme_block_runs_as_pasted",),
    "test_relay_peers.py": (
        "test_a_capture_replays_through_cat", "test_a_notification_written_before_the_initialize_answer_is_relayed_first",
        "test_a_server_that_ignores_eof_and_sigterm_is_killed_and_the_relay_ends", "test_a_server_that_ignores_eof_ends_at_sigterm",
        "test_an_sdk_server_relayed_until_its_calls_are_answered", "test_server_everything_progress_logging_and_a_subscription",
        "test_the_2_mib_log_line_of_the_big_log_peer_is_relayed", "test_the_peer_that_exits_at_once_is_unreachable",
    ),
    "test_relay_service.py": (
        "test_a_call_never_answered_is_cancelled_and_until_answered_ends",
        "test_a_line_of_max_line_bytes_is_relayed_and_one_more_is_too_large", "test_a_process_that_left_the_server_s_group_is_ended_too",
        "test_a_quiet_server_s_consumer_leaving_ends_the_relay", "test_a_real_quiet_server_s_consumer_leaving_ends_the_relay",
        "test_a_revision_offered_is_accepted_back", "test_a_revision_the_relay_cannot_speak_is_refused_up_front",
        "test_a_server_that_exits_while_its_child_holds_the_output_is_ended",
        "test_a_server_that_floods_requests_and_reads_nothing_grows_no_memory", "test_a_signal_after_the_consumer_left_gives_the_report",
        "test_a_tool_result_with_is_error_counts_as_a_failed_call", "test_every_line_is_accounted_for_blank_meaning_json_whitespace_only",
        "test_nothing_is_left_when_the_relay_ends_normally", "test_the_channel_file_is_private_and_replaces_what_was_there",
        "test_the_server_s_output_pipe_is_widened_to_read_more_per_turn",
        "test_the_cli_reads_a_pipeful_a_turn_once_the_allocator_keeps_freed_blocks",
    ),
    "test_scanner.py": ("test_the_stdlib_json_path_splices_and_refuses_alike",),
    "test_stream.py": ("test_a_record_spanning_chunks_costs_about_two_sizes",),
}
"""Tests in other files that start a process, by file (every parameter)."""
LONG = {
    "test_hostile.py": ("test_two_hundred_thousand_frames_leave_memory_flat",),  # 2-3 s a core
    "test_backends.py": ("test_any_input_passes_the_backend_target",),  # 2.9 s
    "test_http_driver_field.py": (  # a relay that waits out a window, a backoff or a Retry-After: 1.6-2.5 s
        "test_a_server_restarted_behind_a_gateway_gets_a_new_session_and_the_calls_not_made_again_are_named",
        "test_the_older_transport_waits_out_a_502_within_the_window_and_makes_a_new_session",
        "test_a_429_with_retry_after_is_waited_out_and_then_the_stream_opened_again",
    ),
    "test_reentrancy.py": (
        "test_calls_fired_at_a_checker_mid_call_raise_at_most",  # 1.0-1.9 s each of 8 cases
        "test_a_decode_inside_a_decode_gives_the_same_frames_on_both_cores",  # up to 2.4 s
    ),
}
"""Tests over ~1.5 s (`--durations`, a busy 2-core machine, 2026-12-06) that start nothing."""
SLOW_TESTS = frozenset(f"{file}::{name}" for table in (PROCESSES, LONG) for file, names in table.items() for name in names)


def is_slow(file_name: str, function: str) -> bool:
    """Whether a test is left out of the quick subset: by its file's name, or by file::function."""
    return any(fnmatch.fnmatchcase(file_name, pattern) for pattern in SLOW_FILES) or f"{file_name}::{function}" in SLOW_TESTS


PROCESS_EVENTS = frozenset({
    "subprocess.Popen", "os.system", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.exec", "pty.spawn",
})
"""Audit events that start a process (asyncio's subprocesses raise them too)."""


def binds_loopback(address: object) -> bool:
    """Whether ``socket.bind``'s address is an IP loopback one (127.0.0.0/8, ::1): a server only this machine reaches."""
    if not (isinstance(address, tuple) and address and isinstance(address[0], str)):
        return False  # a Unix socket's path, or something else: not what a quick test may bind
    try:
        return ipaddress.ip_address(address[0].partition("%")[0]).is_loopback
    except ValueError:  # a host name ("localhost" too: it can resolve elsewhere) or "": every interface
        return False


class StartedInAQuickTest(RuntimeError):
    """A test of the quick subset started a process or bound a socket off loopback: declare it slow in conftest.py."""


_quick = {"test": None, "events": []}  # the quick test running, and what it started


def _refuse_processes_in_quick_tests(event: str, args: tuple) -> None:
    if _quick["test"] is None:
        return
    if event in PROCESS_EVENTS or (event == "socket.bind" and not binds_loopback(args[1])):
        _quick["events"].append(event)
        if os.environ.get("DIVERGE_CODEC_SLOW_AUDIT") != "record":
            raise StartedInAQuickTest(f"{event} in a quick test: declare it slow (tests/conftest.py PROCESSES),"
                                      " or bind 127.0.0.1 or ::1")


sys.addaudithook(_refuse_processes_in_quick_tests)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: starts a process, or over ~1.5 s; -m 'not slow' leaves them out (loopback servers in-process are quick)")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """The quick subset (``-m "not slow"``) does not import the files every test of which is slow: they would all be
    deselected, and importing them (the MCP SDK, the examples) took some 10 s of its time on a loaded machine."""
    if config.getoption("markexpr", "") == "not slow" and collection_path.suffix == ".py":
        return any(fnmatch.fnmatchcase(collection_path.name, pattern) for pattern in SLOW_FILES) or None
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(item.path.name, getattr(item, "originalname", item.name)):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """A quick test is watched from its setup to its teardown: what it started fails it, even if caught."""
    quick = item.get_closest_marker("slow") is None
    _quick["test"], _quick["events"] = (item.nodeid if quick else None), []
    try:
        return (yield)
    finally:
        _quick["test"] = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if _quick["events"] and report.when == "teardown" and _quick["test"] == item.nodeid:
        record = os.environ.get("DIVERGE_CODEC_SLOW_AUDIT_FILE")
        if record:
            with open(record, "a") as out:
                out.write(f"{item.nodeid}\t{sorted(set(_quick['events']))}\n")
        if os.environ.get("DIVERGE_CODEC_SLOW_AUDIT") != "record" and report.passed:
            report.outcome = "failed"
            report.longrepr = f"a quick test started {sorted(set(_quick['events']))}: declare it slow (tests/conftest.py PROCESSES)"
    return report

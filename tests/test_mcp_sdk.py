"""The ``[mcp]`` adapter against the real MCP Python SDK: what round-trips exactly, and where the SDK differs.

Each case is a notification on the wire, as the SDK's server session writes it. A
frame of it is decoded with both cores, read into the SDK's model, and written back the
way the SDK's session does; the tables say which come back byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sdk = pytest.importorskip("mcp.types", reason="the [mcp] extra is not installed")
from mcp.shared.exceptions import MCPError  # noqa: E402

import diverge_codec  # noqa: E402
from diverge_codec import ErrorData, _json, mcp_sdk  # noqa: E402

sys.path.insert(0, str(Path(__file__).with_name("peers")))
from servers import VENVS, missing  # noqa: E402

REQUIRE_PEERS = os.environ.get("DIVERGE_CODEC_REQUIRE_PEERS", "") not in ("", "0")

EXACT = {
    "cancelled, int id": {"method": "notifications/cancelled", "params": {"requestId": 3, "reason": "user"}},
    "cancelled, str id": {"method": "notifications/cancelled", "params": {"requestId": "r-1"}},
    "progress, int token": {"method": "notifications/progress",
                            "params": {"progressToken": 7, "progress": 0.25, "total": 1.0, "message": "m"}},
    "progress, str token, _meta": {"method": "notifications/progress",
                                   "params": {"_meta": {"trace": [1]}, "progressToken": "job-α", "progress": 0.5}},
    "logging, nested data": {"method": "notifications/message",
                             "params": {"level": "error", "logger": "demo", "data": {"n": {"l": [1, 2.5, None, True]}}}},
    "logging, string data": {"method": "notifications/message", "params": {"level": "debug", "data": "text"}},
    "resources updated": {"method": "notifications/resources/updated", "params": {"uri": "file:///srv/a.txt"}},
    "resources list changed": {"method": "notifications/resources/list_changed"},
    "tools list changed": {"method": "notifications/tools/list_changed"},
    "tools list changed, _meta": {"method": "notifications/tools/list_changed", "params": {"_meta": {"k": "v"}}},
    "prompts list changed": {"method": "notifications/prompts/list_changed"},
    "elicitation complete": {"method": "notifications/elicitation/complete", "params": {"elicitationId": "e1"}},
    "subscriptions acknowledged": {"method": "notifications/subscriptions/acknowledged", "params": {"notifications": {}}},
}

# What arrived, and what the SDK's model writes back for it: the codec keeps the former.
SDK_REWRITES = {
    "jsonrpc dropped": ({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
                        {"method": "notifications/tools/list_changed"}),
    "params: null dropped": ({"method": "notifications/tools/list_changed", "params": None},
                             {"method": "notifications/tools/list_changed"}),
    "undeclared member dropped": ({"method": "notifications/resources/updated", "params": {"uri": "file:///a", "x": 1}},
                                  {"method": "notifications/resources/updated", "params": {"uri": "file:///a"}}),
    "int progress read as float": ({"method": "notifications/progress", "params": {"progressToken": "a", "progress": 3, "total": 10}},
                                   {"method": "notifications/progress", "params": {"progressToken": "a", "progress": 3.0, "total": 10.0}}),
    "logging data: null dropped": ({"method": "notifications/message", "params": {"level": "info", "data": None}},
                                   {"method": "notifications/message", "params": {"level": "info"}}),
}


def _frame(mn, notification):
    return mn.decode(mn.frame_notification(_json.dumps(notification)))


def test_every_sdk_server_notification_has_an_exact_case():
    methods = {case["method"] for case in EXACT.values()}
    assert methods == mcp_sdk.KNOWN_METHODS


@pytest.mark.parametrize("name", list(EXACT))
def test_sdk_notifications_round_trip_byte_for_byte(mn, name):
    wire = _json.dumps(EXACT[name])
    frame = mn.decode(mn.frame_notification(wire))
    model = mcp_sdk.server_notification(frame)
    assert type(model).__name__.endswith("Notification")
    back = mcp_sdk.from_server_notification(model)
    assert mn.encode(mn.Notification(back.notification)) == b"\x00" + wire
    assert model == sdk.server_notification_adapter.validate_json(wire, by_name=False)


@pytest.mark.parametrize("name", list(SDK_REWRITES))
def test_where_the_sdk_rewrites_the_codec_keeps_what_arrived(mn, name):
    arrived, rewritten = SDK_REWRITES[name]
    frame = _frame(mn, arrived)
    assert frame.notification == arrived
    assert mn.encode(frame) == b"\x00" + _json.dumps(arrived)
    assert mcp_sdk.from_server_notification(mcp_sdk.server_notification(frame)).notification == rewritten


def test_the_sdk_refuses_its_own_rewrite_of_a_null_log_datum(mn):
    _, rewritten = SDK_REWRITES["logging data: null dropped"]
    with pytest.raises(mcp_sdk.NotificationModelError) as raised:
        mcp_sdk.server_notification(_frame(mn, rewritten))
    assert raised.value.problems == ("params.data missing",)


def test_a_custom_method_is_the_generic_notification_unless_strict(mn):
    custom = {"method": "notifications/acme/heartbeat", "params": {"beat": 1, "_meta": {"k": 2}}}
    frame = _frame(mn, custom)
    for model in (mcp_sdk.server_notification(frame), mcp_sdk.server_notification(frame, allow_custom=True)):
        assert type(model) is mcp_sdk.CustomNotification
        assert (model.method, model.params) == (custom["method"], custom["params"])
        assert mcp_sdk.from_server_notification(model).notification == custom
    for refuse in ({"strict": True}, {"allow_custom": False}, {"strict": True, "allow_custom": False}):
        with pytest.raises(mcp_sdk.NotificationModelError) as raised:
            mcp_sdk.server_notification(frame, **refuse)
        assert str(raised.value) == "notification does not fit the MCP SDK's models: unknown method"
        assert (raised.value.reason, raised.value.problems) == ("unknown method", ())
    with pytest.raises(ValueError) as contradiction:
        mcp_sdk.server_notification(frame, strict=True, allow_custom=True)
    assert str(contradiction.value) == "strict=True and allow_custom=True contradict each other"


def test_strict_changes_nothing_for_a_modeled_method(mn):
    frame = _frame(mn, EXACT["tools list changed"])
    assert type(mcp_sdk.server_notification(frame, strict=True)) is sdk.ToolListChangedNotification
    assert type(mcp_sdk.server_notification(frame, allow_custom=False)) is sdk.ToolListChangedNotification


def test_a_custom_method_without_params(mn):
    model = mcp_sdk.server_notification(_frame(mn, {"method": "x/y"}))
    assert (model.method, model.params) == ("x/y", None)
    assert mcp_sdk.from_server_notification(model).notification == {"method": "x/y"}


def test_strict_and_allow_custom_are_keyword_only(mn):
    frame = _frame(mn, {"method": "x/y"})
    with pytest.raises(TypeError):
        mcp_sdk.server_notification(frame, True)


def _import_in(python: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Import the adapter in another interpreter, from the package under test on its pure core.

    Only the package itself is put on the path (a link to it), not the site-packages it may be
    installed in: the other interpreter must find its own mcp, or none.
    """
    path = tmp_path / "path"
    path.mkdir()
    (path / "diverge_codec").symlink_to(Path(diverge_codec.__file__).resolve().parent)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(path), "DIVERGE_CODEC_PURE": "1"}
    return subprocess.run([*python, "-c", "import diverge_codec.mcp_sdk"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)


def test_under_mcp_1x_the_import_names_the_version_needed_and_the_one_found(tmp_path):
    reason = missing("mcp-v1")
    if reason is not None:
        (pytest.fail if REQUIRE_PEERS else pytest.skip)(f"{reason} (CI runs .ci/peers first)")
    python = str(VENVS / "mcp-v1" / "bin" / "python")
    found = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert found.startswith("1.")
    run = _import_in([python], tmp_path)
    assert run.returncode == 1
    assert run.stderr.splitlines()[-1] == (
        f"ImportError: diverge_codec.mcp_sdk needs mcp 2.3 or newer (below 3); mcp {found} is installed")
    assert "pip install" not in run.stderr.splitlines()[-1]  # the extra would replace the user's mcp 1.x


def test_without_mcp_the_import_says_so_and_how_to_install_it(tmp_path):
    run = _import_in([sys.executable, "-S"], tmp_path)  # -S: no site-packages, so no mcp (nor its metadata)
    assert run.returncode == 1
    assert run.stderr.splitlines()[-1] == (
        "ImportError: diverge_codec.mcp_sdk needs the MCP Python SDK (mcp 2.3 or newer, below 3), which is not "
        "installed: pip install 'diverge-codec[mcp]'")


def test_invalid_params_say_which_field_and_never_the_value(mn):
    secret = "SECRET-7f3a"
    frame = _frame(mn, {"method": "notifications/progress", "params": {"progressToken": secret, "progress": secret}})
    with pytest.raises(mcp_sdk.NotificationModelError) as raised:
        mcp_sdk.server_notification(frame)
    error = raised.value
    assert str(error) == "notification does not fit the MCP SDK's models: invalid params: params.progress float_parsing"
    assert error.__cause__ is None and error.__context__ is None  # pydantic's error quotes the values
    assert secret not in repr(error) + repr(error.args) + repr(vars(error))


def test_from_server_notification_refuses_what_is_no_notification_model():
    with pytest.raises(TypeError, match="expected an MCP SDK notification model, not dict"):
        mcp_sdk.from_server_notification({"method": "x"})


@pytest.mark.parametrize("error", [ErrorData(-32000, "gone"), ErrorData(5, "m", {"detail": [1, None]}), ErrorData(0, "", 0)])
def test_error_data_round_trips_through_the_sdk(mn, error):
    frame = mn.decode(mn.encode(mn.Error(error)))
    sdk_error = mcp_sdk.sdk_error_data(frame.error)
    assert (sdk_error.code, sdk_error.message, sdk_error.data) == (error.code, error.message, error.data)
    assert mcp_sdk.from_sdk_error_data(sdk_error) == error
    raised = mcp_sdk.mcp_error(frame.error)
    assert isinstance(raised, MCPError) and raised.code == error.code
    assert mcp_sdk.from_mcp_error(raised) == error


def test_error_data_null_data_is_absent_on_both_sides(mn):
    frame = mn.decode(b'\x01{"code":1,"message":"m","data":null}')
    assert frame.error.data is None
    assert mn.encode(frame) == b'\x01{"code":1,"message":"m"}'
    dumped = mcp_sdk.sdk_error_data(frame.error).model_dump(by_alias=True, mode="json", exclude_unset=True)
    assert dumped == {"code": 1, "message": "m"}


def test_the_sdk_takes_codes_that_are_no_i32_and_the_adapter_refuses_them(mn):
    lax = sdk.ErrorData.model_validate({"code": 2**40, "message": "m"})
    assert lax.code == 2**40
    with pytest.raises(ValueError, match="ErrorData code must fit in 32 signed bits"):
        mcp_sdk.from_sdk_error_data(lax)
    with pytest.raises(mn.ErrorParseError):
        mn.decode(b'\x01{"code":1099511627776,"message":"m"}')
    coerced = sdk.ErrorData.model_validate({"code": "7", "message": "m"})
    assert mcp_sdk.from_sdk_error_data(coerced) == ErrorData(7, "m")
    with pytest.raises(TypeError, match="expected mcp.types.ErrorData, not ErrorData"):
        mcp_sdk.from_sdk_error_data(ErrorData(1, "m"))

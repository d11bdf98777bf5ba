"""The notification kinds of MCP 2025-11-25 the SDK's union leaves out: each still maps to an SDK model."""

from __future__ import annotations

import pytest

from diverge_codec import _json

sdk = pytest.importorskip("mcp.types", reason="the [mcp] extra is not installed")
from diverge_codec import mcp_sdk  # noqa: E402

TASK_STATUS = {"method": "notifications/tasks/status", "params": {  # in the SDK's own member order
    "taskId": "task-1", "status": "working", "statusMessage": "half way", "createdAt": "2025-11-25T00:00:00Z",
    "lastUpdatedAt": "2025-11-25T00:00:01Z", "ttl": 60000}}
ELICITATION_COMPLETE = {"method": "notifications/elicitation/complete", "params": {"elicitationId": "e-1"}}


def _frame(mn, notification):
    return mn.decode(mn.frame_notification(_json.dumps(notification)))


@pytest.mark.parametrize("notification, model", [
    (TASK_STATUS, "TaskStatusNotification"),
    (ELICITATION_COMPLETE, "ElicitCompleteNotification"),
])
def test_each_kind_maps_to_the_sdk_model_and_back_byte_for_byte(mn, notification, model):
    read = mcp_sdk.server_notification(_frame(mn, notification))
    assert type(read).__name__ == model and read.method in mcp_sdk.MODELED_METHODS
    assert mn.encode(mn.Notification(mcp_sdk.from_server_notification(read).notification)) == b"\x00" + _json.dumps(notification)


def test_tasks_status_is_modeled_outside_the_union():
    assert "notifications/tasks/status" in mcp_sdk.MODELED_METHODS - mcp_sdk.KNOWN_METHODS
    assert mcp_sdk.KNOWN_METHODS < mcp_sdk.MODELED_METHODS


def test_a_task_status_without_its_required_fields_says_which(mn):
    with pytest.raises(mcp_sdk.NotificationModelError) as raised:
        mcp_sdk.server_notification(_frame(mn, {"method": "notifications/tasks/status", "params": {"taskId": "t"}}))
    assert raised.value.reason == "invalid params" and "params.status missing" in raised.value.problems


def test_a_custom_method_is_the_generic_notification_by_default(mn):
    custom = {"method": "notifications/demo/custom", "params": {"any": ["thing"]}}
    read = mcp_sdk.server_notification(_frame(mn, custom))
    assert type(read) is mcp_sdk.CustomNotification and read.method not in mcp_sdk.MODELED_METHODS
    assert mcp_sdk.from_server_notification(read).notification == custom
    with pytest.raises(mcp_sdk.NotificationModelError) as raised:
        mcp_sdk.server_notification(_frame(mn, custom), strict=True)
    assert raised.value.reason == "unknown method"


def test_strict_reads_every_modeled_kind_as_before(mn):
    for notification, model in ((TASK_STATUS, "TaskStatusNotification"), (ELICITATION_COMPLETE, "ElicitCompleteNotification")):
        assert type(mcp_sdk.server_notification(_frame(mn, notification), strict=True)).__name__ == model

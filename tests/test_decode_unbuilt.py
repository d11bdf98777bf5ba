"""Issue 44: the compiled decode leaves a short notification's members unbuilt while they are the
envelope alone (method, params, ``"jsonrpc": "2.0"``, each once), and makes the dict the first time
``notification`` (or ==, repr, pickle, encode) asks for it; ``params`` reads past it. Whatever the
order, the repeats and the other members, both cores give orjson's members, in orjson's order."""
from __future__ import annotations

import gc
import itertools
import pickle

import pytest

from conftest import IMPLEMENTATIONS, load

orjson = pytest.importorskip("orjson", reason="the reference the members are held to")

ENVELOPE = ['"jsonrpc":"2.0"', '"method":"notifications/progress"', '"params":{"progress":1,"_meta":{}}', '"params":null']
OTHERS = ['"jsonrpc":"1.0"', '"_meta":{"a":1}', '"method":"again"', '"params":{"again":[]}', '"id":7', '"method":3']


def _bodies():
    """Every order of up to three envelope members (a method always among them), then each with one
    other member or repeat at each place."""
    for count in (1, 2, 3):
        for members in itertools.permutations(ENVELOPE, count):
            if not any('"method"' in member for member in members) or sum('"params"' in m for m in members) > 1:
                continue
            yield "{" + ",".join(members) + "}"
            for other in OTHERS:
                for place in range(count + 1):
                    yield "{" + ",".join([*members[:place], other, *members[place:]]) + "}"


BODIES = sorted(set(_bodies()))


def outcome(core: str, body: str):
    try:
        frame = load("mcp_notifications", core).decode(b"\x00" + body.encode())
    except Exception as error:  # noqa: BLE001 - compared as class and message
        return type(error).__name__, str(error)
    return frame


def as_held(result):
    """A frame as what it holds (frames of two cores never compare equal), an error as class and message."""
    return result if type(result) is tuple else (result.method, list(result.notification.items()))


@pytest.mark.parametrize("body", BODIES)
def test_the_members_are_orjsons_in_its_order_on_both_cores(body):
    expected = orjson.loads(body)
    results = {core: outcome(core, body) for core in IMPLEMENTATIONS}
    if type(expected.get("method")) is not str:
        assert results["c"] == results["py"] and results["c"][0] == "NotificationParseError", results
        return
    for core, frame in results.items():
        params = frame.params  # before the members are made, then after
        assert list(frame.notification.items()) == list(expected.items()), core
        assert frame.params is params and params is frame.notification.get("params"), core
        assert params == expected.get("params") and frame.method == expected["method"], core
    assert as_held(results["c"]) == as_held(results["py"])


def _members_dict_held(frame) -> bool:
    """Whether the frame holds its members' dict (the collector sees what a compiled frame references)."""
    return any(type(held) is dict and "method" in held for held in gc.get_referents(frame))


def test_the_dict_is_made_when_asked_for_and_only_then():
    mn = load("mcp_notifications", "c")
    frame = mn.decode(b'\x00{"jsonrpc":"2.0","method":"m","params":{"a":1}}')
    assert (frame.method, frame.params) == ("m", {"a": 1})
    assert not _members_dict_held(frame)
    view = frame.notification
    assert _members_dict_held(frame) and dict(view) == {"jsonrpc": "2.0", "method": "m", "params": {"a": 1}}
    assert gc.get_referents(view)[0] is gc.get_referents(frame.notification)[0]  # made once, kept: the same dict
    # another member, or one again: the dict is made as the body is read
    for body in (b'\x00{"method":"m","id":1}', b'\x00{"method":"m","method":"n"}', b'\x00{"jsonrpc":"2.1","method":"m"}'):
        assert _members_dict_held(mn.decode(body))


@pytest.mark.parametrize("core", IMPLEMENTATIONS)
def test_an_unbuilt_frame_compares_prints_pickles_and_encodes_as_a_built_one(core):
    mn = load("mcp_notifications", core)
    body = b'{"method":"notifications/progress","params":{"progressToken":7,"progress":5},"jsonrpc":"2.0"}'
    unbuilt, built = mn.decode(b"\x00" + body), mn.Notification(orjson.loads(body))
    assert unbuilt == built and mn.decode(b"\x00" + body) == unbuilt
    assert repr(unbuilt) == repr(built) == "Notification(method='notifications/progress', params=<2 members>)"
    assert pickle.loads(pickle.dumps(mn.decode(b"\x00" + body))) == built
    assert mn.encode(mn.decode(b"\x00" + body)) == b"\x00" + body
    assert built.params is built.notification["params"]
    assert mn.Notification({"method": "m"}).params is None


@pytest.mark.parametrize("core", IMPLEMENTATIONS)
def test_params_of_a_half_built_frame_is_refused_as_notification_is(core):
    mn = load("mcp_notifications", core)
    frame = mn.Notification.__new__(mn.Notification)
    for name in ("params", "notification"):
        with pytest.raises(AttributeError, match=rf"^'Notification' object has no attribute '{name}'$"):
            getattr(frame, name)


def test_code_run_while_the_dict_is_made_finds_it_made_once():
    """A collection run by the members' dict's own allocation calls back into the frame, which makes
    them there first: the frame keeps one dict, the one the callback saw and every later view shows."""
    mn = load("mcp_notifications", "c")
    frames = [mn.decode(b'\x00{"method":"m%d","params":{"n":%d}}' % (n, n)) for n in range(50)]
    armed: list = [None]
    seen: dict[int, object] = {}
    interrupted = 0

    def callback(phase, info):
        nonlocal interrupted
        frame = armed[0]
        if phase == "start" and frame is not None and id(frame) not in seen:
            interrupted += not _members_dict_held(frame)
            seen[id(frame)] = gc.get_referents(frame.notification)[0]

    threshold = gc.get_threshold()
    gc.callbacks.append(callback)
    try:
        for frame in frames:
            hoard = [{} for _ in range(100)]  # the dict free list emptied: the members' dict is a new object
            armed[0] = frame
            gc.set_threshold(1)  # and its allocation runs a collection
            view = frame.notification
            gc.set_threshold(*threshold)
            armed[0] = None
            del hoard
            held = gc.get_referents(view)[0]
            assert held is gc.get_referents(frame.notification)[0]
            assert seen.get(id(frame), held) is held
            assert dict(view) == {"method": frame.method, "params": frame.params}
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(callback)
    assert interrupted, "no collection ran while a frame's members were made"

"""LazyNotification's guards, the same in both cores: it cannot be changed, and one made by ``__new__`` alone hands out nothing.

The compiled class once answered a write with Cython's "attribute ... is not writable"
and, made by ``__new__``, gave ``method`` None and ``params_json`` b'' under a repr that
looked initialised; the pure twin, like every frame, says it is immutable and refuses.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from conftest import IMPLEMENTATIONS, load
from test_values import refusal

PAYLOAD = b'\x00{"method":"n/x","params":{"secret":"hunter2"}}'
IMMUTABLE = (AttributeError, "LazyNotification is immutable")
NO_PAYLOAD = (AttributeError, "'LazyNotification' object has no attribute '_payload'")


def _both(outcome) -> object:
    """What ``outcome(core)`` gives on each core, asserted equal; the shared result."""
    got = [outcome(load("mcp_notifications", implementation)) for implementation in IMPLEMENTATIONS]
    assert got[0] == got[1]
    return got[0]


@pytest.mark.parametrize("name", ["method", "params_json", "materialize", "other", "_payload", "__class__"])
def test_setting_or_deleting_any_attribute_says_it_is_immutable(name):
    def outcome(mn):
        lazy = mn.decode_lazy(PAYLOAD)
        return (refusal(lambda: setattr(lazy, name, "x")), refusal(lambda: delattr(lazy, name)),
                lazy.method, lazy.params_json)
    assert _both(outcome) == (IMMUTABLE, IMMUTABLE, "n/x", b'{"secret":"hunter2"}')


def test_one_made_by_new_alone_refuses_alike():
    def outcome(mn):
        lazy = mn.LazyNotification.__new__(mn.LazyNotification)
        made = mn.decode_lazy(PAYLOAD)
        return (repr(lazy), refusal(lambda: lazy.method), refusal(lambda: lazy.params_json),
                refusal(lazy.materialize), refusal(lambda: lazy == lazy), refusal(lambda: made == lazy),
                refusal(lambda: pickle.dumps(lazy)), refusal(lambda: copy.copy(lazy)),
                refusal(lambda: setattr(lazy, "method", "m")), refusal(lambda: lazy.__init__(PAYLOAD)))
    assert _both(outcome) == (
        "LazyNotification(<not initialised>)",
        (AttributeError, "'LazyNotification' object has no attribute 'method'"),
        (AttributeError, "'LazyNotification' object has no attribute 'params_json'"),
        NO_PAYLOAD, NO_PAYLOAD, NO_PAYLOAD, NO_PAYLOAD, NO_PAYLOAD,
        IMMUTABLE,
        (TypeError, "LazyNotification is made by decode_lazy"),
    )


def test_one_made_by_decode_lazy_still_reads_compares_and_pickles():
    def outcome(mn):
        lazy = mn.decode_lazy(PAYLOAD)
        again = pickle.loads(pickle.dumps(lazy))
        return (repr(lazy), lazy.method, lazy.params_json, again == lazy, copy.copy(lazy) == lazy,
                lazy.materialize() == mn.decode(PAYLOAD))
    assert _both(outcome) == ("LazyNotification(method='n/x', params_json=<20 bytes>)", "n/x",
                              b'{"secret":"hunter2"}', True, True, True)

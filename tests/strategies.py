"""Hypothesis strategies for payloads: valid, near-valid and arbitrary, for both channels."""

from __future__ import annotations

import json
import random
import re

from hypothesis import strategies as st

from diverge_codec import _json

names = st.text(max_size=12)
scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=4),
    max_leaves=12,
)
modes = st.sampled_from(["fixed", "rotating"])


def dump(value) -> bytes:
    """The JSON backend where it can; the odd integer orjson will not write goes in as the stdlib writes it."""
    try:
        return _json.dumps(value)
    except TypeError:
        import json

        return json.dumps(value).encode()


registrations = st.fixed_dictionaries(
    {}, optional={"secrets": st.dictionaries(names, modes | json_values, max_size=4) | json_values, "dependencies": json_values}
)
provider_errors = st.fixed_dictionaries({}, optional={"message": st.text(max_size=10) | json_values, "k": json_values})
error_datas = st.fixed_dictionaries(
    {},
    optional={
        "code": st.integers(-(2**33), 2**33) | json_values,
        "message": st.text(max_size=10) | json_values,
        "data": json_values,
    },
)
notifications = st.fixed_dictionaries(
    {},
    optional={
        "method": st.sampled_from(["notifications/progress", "notifications/message", "x/custom"]) | json_values,
        "params": st.none() | st.dictionaries(names, json_values, max_size=3) | st.fixed_dictionaries({"_meta": json_values}) | json_values,
        "jsonrpc": st.just("2.0"),
    },
)


def tagged(tag: int, bodies: st.SearchStrategy) -> st.SearchStrategy[bytes]:
    return bodies.map(lambda body: bytes([tag]) + dump(body))


def mutated(payloads: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Near-valid: a valid payload with a byte changed, dropped or inserted."""

    @st.composite
    def mutate(draw):
        payload = bytearray(draw(payloads))
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(payload)))
            action = draw(st.sampled_from(["set", "drop", "insert"]))
            byte = draw(st.integers(0, 255))
            if action == "insert" or at == len(payload):
                payload.insert(at, byte)
            elif action == "drop":
                del payload[at]
            else:
                payload[at] = byte
        return bytes(payload)

    return mutate()


tools_begin_valid = st.one_of(
    tagged(0, registrations), tagged(1, provider_errors), st.just(b"\x02"),
    tagged(3, st.dictionaries(names, json_values, max_size=4) | json_values),
)
tools_begin_payloads = st.one_of(tools_begin_valid, mutated(tools_begin_valid), st.binary(max_size=40))

notifications_valid = st.one_of(tagged(0, notifications), tagged(1, error_datas))
notifications_payloads = st.one_of(notifications_valid, mutated(notifications_valid), st.binary(max_size=40))


# The scanner's and the splice's shapes ----------------------------------------------------------
# Every shape their code branches on: the envelope anywhere and repeated, every member the channel
# reads repeated, `_meta` and `params` keys at every depth and in sibling objects, JSON whitespace
# before and after each comma and colon, role names escaped. tests/test_scanner_shapes.py pins that
# sampling makes each shape in SHAPES.

ROLE_NAMES = ("method", "params", "id", "_meta", "jsonrpc")


class Members(list):
    """A JSON object as its members in order, repeats kept (a dict cannot say `{"a":1,"a":2}`)."""


keys = st.sampled_from(ROLE_NAMES) | names
member_trees = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(keys, inner), max_size=3).map(Members),
    max_leaves=8,
)
"""JSON values whose objects hold role names as keys, at any depth."""
meta_values = st.sampled_from([None, 1, "x", True, []]) | st.lists(st.tuples(keys, member_trees), max_size=2).map(Members)
"""What a `_meta` holds: an object or null (accepted) or any other kind (refused where params holds it)."""
refused_meta_holders = st.sampled_from([1, "x", True, []]).map(lambda value: Members([("_meta", value)]))
"""An object holding a `_meta` params may not hold: what a scanner that forgot where params ended refuses."""


def role_key(name: str, escape: bool) -> bytes:
    """A key plainly, or with its first character as a \\u escape (the same name to a parser)."""
    if escape and name:
        return b'"\\u%04x' % ord(name[0]) + json.dumps(name[1:], ensure_ascii=False).encode()[1:]
    return json.dumps(name, ensure_ascii=False).encode()


SPACES = (b"", b"", b"", b" ", b"\t", b"\n", b"\r\n  ")


def write_members(rnd: random.Random, value) -> bytes:
    """value as JSON, with whitespace around every comma and colon and keys escaped or not, as rnd picks
    (one seeded Random per line: a draw per token would cost most of the example)."""
    def space() -> bytes:
        return rnd.choice(SPACES)

    if isinstance(value, Members):
        parts = [space() + role_key(key, rnd.random() < 0.3) + space() + b":" + space() + write_members(rnd, item) + space()
                 for key, item in value]
        return b"{" + b",".join(parts) + b"}" if parts else b"{" + space() + b"}"
    if isinstance(value, list):
        return b"[" + b",".join(space() + write_members(rnd, item) + space() for item in value) + b"]"
    return json.dumps(value, ensure_ascii=rnd.random() < 0.5).encode()


@st.composite
def envelope_messages(draw) -> bytes:
    """A server line in any member order and spelling: method, params, `_meta`, `id` and `jsonrpc`
    each absent, once or repeated; siblings that hold `_meta` and `params` deeper; whitespace anywhere."""
    members: list[tuple[str, object]] = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 0]))):
        members.append(("method", draw(st.text(max_size=8) | st.sampled_from([7, None]))))
    for _ in range(draw(st.sampled_from([1, 1, 2, 0]))):
        params = Members(draw(st.lists(st.tuples(keys, member_trees), max_size=2)))
        for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
            params.insert(draw(st.integers(0, len(params))), ("_meta", draw(meta_values)))
        members.append(("params", draw(st.sampled_from([params] * 6 + [None, [], "p"]))))
    siblings = member_trees | meta_values | refused_meta_holders
    sibling_keys = st.sampled_from(["_meta", "_meta", "params", "method"]) | names  # repeats of the roles too
    members += draw(st.lists(st.tuples(sibling_keys, siblings), max_size=2))
    members += [("id", 1)] * draw(st.sampled_from([0] * 6 + [1, 2]))
    members = draw(st.permutations(members))
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
        members.insert(draw(st.integers(0, len(members))), ("jsonrpc", draw(st.sampled_from(["2.0", "2.0", 2, None]))))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    return rnd.choice(SPACES) + write_members(rnd, Members(members)) + rnd.choice(SPACES)


def _pairs(message: bytes) -> list:
    return json.loads(message, object_pairs_hook=Members)


def _holds(value, key: str, below: int = 0) -> bool:
    """Whether value holds an object with key at least `below` levels down."""
    if isinstance(value, Members):
        return any((name == key and below <= 0) or _holds(item, key, below - 1) for name, item in value)
    return isinstance(value, list) and any(_holds(item, key, below - 1) for item in value)


def _refused_meta(value, deep: bool = False) -> bool:
    """Whether value is an object holding a `_meta` of a kind params may not hold (with deep, or holds one at any depth)."""
    items = value if isinstance(value, Members) else [(None, item) for item in value] if isinstance(value, list) else []
    return any((name == "_meta" and not isinstance(item, (Members, type(None)))) or (deep and _refused_meta(item, deep))
               for name, item in items)


def _roles_named(message: bytes) -> bytes:
    """The message with every string blanked to "s", a role name's kept: what whitespace patterns look at."""
    def name(match):
        text = json.loads(match.group())
        return b'"' + text.encode() + b'"' if text in ROLE_NAMES else b'"s"'

    return re.sub(rb'"(?:\\.|[^"\\])*"', name, message)


def shapes(message: bytes) -> set[str]:
    """The named shapes a line has, out of SHAPES."""
    found: set[str] = set()
    members = _pairs(message)
    if not isinstance(members, Members):
        return found
    names_ = [name for name, _ in members]
    envelope = [at for at, name in enumerate(names_) if name == "jsonrpc"]
    plain = _roles_named(message)
    found |= {shape for shape, pattern in SPACE_PATTERNS.items() if re.search(pattern, plain)}
    if envelope:
        found.add("envelope first" if envelope[0] == 0 else "envelope after a member")
        found |= {"envelope last"} if envelope[-1] == len(names_) - 1 else {"envelope before a member"}
        if re.search(rb'\s,\s*"jsonrpc"\s*:\s*(?:"s"|[\w.-]+)\s*\}\s*$', plain) and envelope[-1] == len(names_) - 1:
            found.add("space before the comma of an envelope last")
    found |= {f"{name} repeated" for name in ROLE_NAMES if names_.count(name) > 1}
    params = [item for name, item in members if name == "params"]
    if params and isinstance(params[-1], Members) and [name for name, _ in params[-1]].count("_meta") > 1:
        found.add("_meta repeated in params")
    if any(_holds(item, "_meta") for name, item in members if name != "params"):
        found.add("_meta in a sibling object")
    if "_meta" in names_:
        found.add("_meta at the top level")
    if any(_holds(item, "_meta", 1) for item in params):
        found.add("_meta deeper in params")
    if any(_holds(item, "params") for _, item in members):
        found.add("params below the top level")
    last_params = max((at for at, name in enumerate(names_) if name == "params"), default=None)
    if last_params is not None and isinstance(members[last_params][1], Members) and any(
            name not in ("params", "_meta") and _refused_meta(item, deep=True) for name, item in members[last_params + 1:]):
        found.add("a refused _meta in a sibling after params")
    if len(params) > 1 and _refused_meta(params[0]) and isinstance(params[-1], Members) and not _refused_meta(params[-1]):
        found.add("an earlier params' refused _meta, the last params fine")
    if b"\\u00" in message and any(re.search(rb'"\\u00[0-9a-f]{2}' + name.encode()[1:] + b'"', message) for name in ROLE_NAMES):
        found.add("a role name escaped")
    return found


SPACE_PATTERNS = {
    "space before a comma": rb"\s,", "space after a comma": rb",\s", "space before a colon": rb"\s:",
    "space after a colon": rb":\s",
}
SHAPES = (
    *SPACE_PATTERNS, "envelope first", "envelope after a member", "envelope last", "envelope before a member",
    "space before the comma of an envelope last", *(f"{name} repeated" for name in ROLE_NAMES),
    "_meta repeated in params", "_meta in a sibling object", "_meta at the top level", "_meta deeper in params",
    "params below the top level", "a refused _meta in a sibling after params",
    "an earlier params' refused _meta, the last params fine", "a role name escaped",
)

"""``x-mcp-header`` (MCP 2026-07-28, SEP-2243) as the relay reads it: which properties, which values, which
headers, and ``tools/list`` read for the schemas, bounded. Pure functions and a sans-IO listing: no I/O.

The examples are the revision's own (basic/transports/streamable-http, "Custom Headers from Tool Parameters" and
"Value Encoding"); every refusal is pinned, and none holds an argument's value.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from diverge_codec.relay.param_headers import (LIST_BYTES, LIST_PAGES, Declaration, Refusal, ToolsListing,
                                               declarations, header_value, param_headers)

EXECUTE_SQL = {"type": "object", "properties": {
    "region": {"type": "string", "description": "The region to execute the query in", "x-mcp-header": "Region"},
    "query": {"type": "string", "description": "The SQL query to execute"}}, "required": ["region", "query"]}
"""The revision's example tool."""


def _headers(schema: dict[str, Any], arguments: Any) -> dict[str, str]:
    return param_headers(declarations(schema), arguments)


def _marked(kind: Any = "string", name: Any = "Region", **more: Any) -> dict[str, Any]:
    prop = {"x-mcp-header": name, **more}
    if kind is not None:
        prop["type"] = kind
    return {"type": "object", "properties": {"region": prop}}


def test_the_revision_s_example_mirrors_the_region():
    assert declarations(EXECUTE_SQL) == (Declaration(("region",), "Region", "string"),)
    assert _headers(EXECUTE_SQL, {"region": "us-west1", "query": "SELECT * FROM users"}) == {"Mcp-Param-Region": "us-west1"}


@pytest.mark.parametrize(("value", "sent"), [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),  # looks like the sentinel: encoded
    ("a b", "a b"),  # a space inside is a field value as it is
    ("", ""),
])
def test_values_are_encoded_as_the_revision_s_table_says(value, sent):
    assert header_value(value) == sent
    assert _headers(_marked(), {"region": value}) == {"Mcp-Param-Region": sent}


@pytest.mark.parametrize(("kind", "value", "sent"), [
    ("integer", 42, "42"), ("integer", -7, "-7"), ("integer", 42.0, "42"), ("integer", 2**53 - 1, "9007199254740991"),
    ("integer", -(2**53 - 1), "-9007199254740991"), ("boolean", True, "true"), ("boolean", False, "false"),
])
def test_integers_in_decimal_booleans_in_lower_case(kind, value, sent):
    assert _headers(_marked(kind), {"region": value}) == {"Mcp-Param-Region": sent}


@pytest.mark.parametrize("arguments", [{}, {"region": None}, None, [], {"query": "x"}])
def test_no_value_or_null_sends_no_header(arguments):
    assert _headers(_marked(), arguments) == {}


def test_a_nested_property_reached_by_properties_alone_is_mirrored_from_its_exact_path():
    schema = {"type": "object", "properties": {"where": {"type": "object", "properties": {
        "zone": {"type": "string", "x-mcp-header": "Zone"}, "tier": {"type": "integer", "x-mcp-header": "tier"}}}}}
    assert declarations(schema) == (Declaration(("where", "tier"), "tier", "integer"),
                                    Declaration(("where", "zone"), "Zone", "string"))
    assert _headers(schema, {"where": {"zone": "eu", "tier": 3}}) == {"Mcp-Param-Zone": "eu", "Mcp-Param-tier": "3"}
    assert _headers(schema, {"where": "eu"}) == {}  # a step that is no object: no value there
    assert _headers(schema, {"zone": "eu"}) == {}  # not its path


def test_a_schema_that_marks_nothing_or_is_no_object_has_no_declarations():
    assert declarations({"type": "object", "properties": {"q": {"type": "string"}}}) == ()
    assert declarations(None) == () and declarations("x") == () and declarations([]) == ()
    # a value is not a schema: a default or an example holding the key marks nothing
    assert declarations({"type": "object", "properties": {"q": {"type": "string", "default": {"x-mcp-header": "Q"}}},
                         "examples": [{"x-mcp-header": "E"}]}) == ()


UNREACHABLE = [
    {"type": "object", "x-mcp-header": "Root"},
    {"type": "object", "properties": {"list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}},
    {"type": "object", "properties": {"list": {"type": "array", "prefixItems": [{"type": "string", "x-mcp-header": "P"}]}}},
    {"type": "object", "oneOf": [{"properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}]},
    {"type": "object", "allOf": [{"properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}]},
    {"type": "object", "if": {"properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}},
    {"type": "object", "additionalProperties": {"type": "string", "x-mcp-header": "Extra"}},
    {"type": "object", "properties": {"r": {"$ref": "#/$defs/r"}}, "$defs": {"r": {"type": "string", "x-mcp-header": "R"}}},
    {"type": "object", "patternProperties": {"^r": {"type": "string", "x-mcp-header": "R"}}},
    {"type": "object", "properties": {"n": {"not": {"type": "string", "x-mcp-header": "N"}}}},
]


@pytest.mark.parametrize("schema", UNREACHABLE)
def test_a_mark_not_reached_by_properties_alone_makes_the_tool_invalid(schema):
    with pytest.raises(Refusal, match="no property reached by 'properties' keys alone .* makes the tool invalid"):
        declarations(schema)


@pytest.mark.parametrize(("name", "told"), [
    ("", "''"), ("Re gion", "'Re gion'"), ("Region\r\nX-Evil: 1", "'Region\\r\\nX-Evil: 1'"), ("Régión", "'R\\xe9gi\\xf3n'"),
    ("a:b", "'a:b'"), ("a/b", "'a/b'"), (5, "a int"), (None, "a NoneType"), (["Region"], "a list"),
])
def test_a_name_that_is_no_http_token_makes_the_tool_invalid(name, told):
    with pytest.raises(Refusal) as refused:
        declarations(_marked(name=name))
    assert str(refused.value) == (f"property 'region': x-mcp-header {told} is not an HTTP token (RFC 9110 tchar): "
                                  "the revision makes the tool invalid")


@pytest.mark.parametrize(("kind", "told"), [("number", "'number'"), ("object", "'object'"), ("array", "'array'"),
                                            ("null", "'null'"), (None, "none"), (["string", "null"], "a list")])
def test_a_mark_on_anything_but_a_string_integer_or_boolean_makes_the_tool_invalid(kind, told):
    with pytest.raises(Refusal) as refused:
        declarations(_marked(kind))
    assert str(refused.value) == (f"property 'region': x-mcp-header on a property of type {told}, not string, integer "
                                  "or boolean: the revision makes the tool invalid")


def test_a_name_twice_case_insensitively_makes_the_tool_invalid():
    schema = {"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Region"},
                                               "b": {"type": "string", "x-mcp-header": "region"}}}
    with pytest.raises(Refusal, match=r"x-mcp-header '(Region|region)' again \(case-insensitively, also on '(a|b)'\)"):
        declarations(schema)


def test_a_server_s_long_name_is_cut_in_the_words():
    with pytest.raises(Refusal) as refused:
        declarations({"type": "object", "properties": {"p" * 1000: {"type": "number", "x-mcp-header": "P"}}})
    assert f"property '{'p' * 64}':" in str(refused.value) and "p" * 65 not in str(refused.value)


SECRET = "s3cret-value-\u00e9"


@pytest.mark.parametrize(("kind", "value", "rule"), [
    ("string", 5, "is no string"), ("string", {"k": SECRET}, "is no string"), ("string", [SECRET], "is no string"),
    ("integer", SECRET, "is no integer"), ("integer", True, "is no integer"), ("integer", 4.5, "is no integer"),
    ("integer", float("inf"), "is no integer"), ("boolean", "true", "is no boolean"), ("boolean", 1, "is no boolean"),
    ("integer", 2**53, "an integer beyond"), ("integer", -(2**53), "an integer beyond"), ("integer", 1e300, "an integer beyond"),
])
def test_a_value_the_revision_gives_no_header_refuses_the_call_and_never_says_the_value(kind, value, rule):
    with pytest.raises(Refusal) as refused:
        _headers(_marked(kind), {"region": value})
    words = str(refused.value)
    assert words.startswith("argument 'region': ") and rule in words
    for told in (words, repr(refused.value), repr(refused.value.args)):
        assert SECRET not in told and "s3cret" not in told
    assert refused.value.__cause__ is None and refused.value.__context__ is None


# --- tools/list, read for the schemas ---------------------------------------------------------------

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


def _page(listing: ToolsListing, tools: list[dict[str, Any]], cursor: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"tools": tools}
    if cursor is not None:
        result["nextCursor"] = cursor
    return {"jsonrpc": "2.0", "id": listing.request_id, "result": result}


def _tool(name: str, schema: Any = None) -> dict[str, Any]:
    return {"name": name, "inputSchema": schema if schema is not None else {"type": "object"}}


def test_pages_are_read_with_their_cursor_until_every_tool_to_call_is_found():
    listing = ToolsListing({"b", "d"}, META)
    first = json.loads(listing.request())
    assert first == {"jsonrpc": "2.0", "id": "diverge-codec/tools/list/1", "method": "tools/list", "params": {"_meta": META}}
    listing.read(_page(listing, [_tool("a"), _tool("b", EXECUTE_SQL)], "c1"))
    second = json.loads(listing.request())
    assert second["id"] == "diverge-codec/tools/list/2" and second["params"] == {"_meta": META, "cursor": "c1"}
    listing.read(_page(listing, [_tool("c"), _tool("d")], "c2"))  # every tool found: no third page
    assert listing.request() is None and listing.outcome == "read" and listing.pages == 2
    assert listing.schemas == {"b": EXECUTE_SQL, "d": {"type": "object"}}  # only the tools to be called kept


def test_a_last_page_without_the_tool_ends_the_listing_read_and_the_tool_unknown():
    listing = ToolsListing({"z"}, META)
    listing.request()
    listing.read(_page(listing, [_tool("a"), "no tool", {"name": 5}]))
    assert listing.request() is None and listing.outcome == "read" and listing.schemas == {}


def test_a_tool_listed_twice_keeps_its_first_schema():
    listing = ToolsListing({"a", "b"}, META)
    listing.request()
    listing.read(_page(listing, [_tool("a", EXECUTE_SQL), _tool("a", {"type": "object", "x": 1})], "c1"))
    assert listing.schemas == {"a": EXECUTE_SQL}


def test_a_cursor_seen_before_ends_the_listing():
    listing = ToolsListing({"z"}, META)
    for cursor in ("c1", "c2", "c1"):
        listing.request()
        listing.read(_page(listing, [_tool("a")], cursor))
    assert listing.request() is None and listing.outcome == "cut (a cursor seen before)" and listing.pages == 3


def test_an_endless_listing_is_cut_at_its_pages():
    listing = ToolsListing({"z"}, META)
    while listing.request() is not None:
        listing.read(_page(listing, [_tool("a")], f"c{listing.pages}"))
    assert listing.pages == LIST_PAGES and listing.outcome == f"cut (more than {LIST_PAGES} pages)"


def test_a_listing_is_cut_past_its_bytes():
    listing = ToolsListing({"z"}, META, size=100)
    listing.request()
    assert listing.count(60) and not listing.count(41)
    assert listing.outcome == "cut (more than 100 bytes)" and listing.request() is None
    assert LIST_BYTES == 8 << 20


@pytest.mark.parametrize(("answer", "outcome"), [
    ({"error": {"code": -32601, "message": "Method not found"}}, "failed (error -32601)"),
    ({"error": {"code": True}}, "failed (no tools answered)"),
    ({"result": {"tools": "none"}}, "failed (no tools answered)"),
    ({"result": None}, "failed (no tools answered)"),
])
def test_an_answer_without_tools_fails_the_listing(answer, outcome):
    listing = ToolsListing({"z"}, META)
    listing.request()
    listing.read({"jsonrpc": "2.0", "id": listing.request_id, **answer})
    assert listing.outcome == outcome and listing.request() is None


def test_a_first_page_whose_answer_never_came_fails_the_listing():
    listing = ToolsListing({"z"}, META)
    listing.request()
    listing.unanswered("HTTP 502")
    assert listing.outcome == "failed (HTTP 502)" and listing.request() is None


def test_a_page_whose_answer_never_came_fails_the_listing_and_one_that_came_does_not():
    listing = ToolsListing({"z"}, META)
    listing.request()
    listing.read(_page(listing, [], "c1"))
    listing.unanswered("no answer")
    assert listing.outcome is None  # its answer came: the next page is asked for
    listing.request()
    listing.unanswered("HTTP 404")
    assert listing.outcome == "failed (HTTP 404)"
    listing.fail("later")
    assert listing.outcome == "failed (HTTP 404)"  # the first word stays


def test_nothing_to_find_asks_for_nothing():
    listing = ToolsListing(set(), META)
    assert listing.request() is None and listing.outcome == "read" and listing.pages == 0

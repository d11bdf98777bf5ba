"""MCP 2026-07-28's custom headers from tool parameters (SEP-2243), as data and pure functions: no I/O.

Over Streamable HTTP a tool's ``inputSchema`` may mark a property ``"x-mcp-header": "Region"``; a ``tools/call`` of
that tool then carries the argument as ``Mcp-Param-Region`` (basic/transports/streamable-http, "Custom Headers from
Tool Parameters"). The revision's rules, as the relay reads them:

- **Which properties** (``declarations``): a name that is an RFC 9110 token, case-insensitively unique in the
  schema, on a property of type ``string``, ``integer`` or ``boolean`` (``number`` is not permitted) reached from the
  root by ``properties`` keys alone. An ``x-mcp-header`` anywhere else (under ``items``, ``oneOf``, ``$defs``, ...)
  makes the tool invalid: the revision has a client reject such a tool, so the relay does not call it (``Refusal``).
- **Which values** (``param_headers``): the argument at the property's exact path; none there, or ``null``: no
  header. A string as it is, an integer in decimal (within JavaScript's safe range, which the revision requires),
  a boolean as ``true``/``false``; each through ``header_value``. Where the revision is silent the call is refused,
  never guessed at: an argument of another type than its property declares, an integer out of the safe range.
- **Where the schemas come from** (``ToolsListing``): ``tools/list``, read page by page (its ``nextCursor``) only
  until every tool to be called is found, bounded in pages (``LIST_PAGES``) and bytes (``LIST_BYTES``); a cursor
  seen before ends it. Only the schemas of the tools to be called are kept.

A ``Refusal``'s words name the property path and the rule, never an argument's value (it may be a secret); the
server-given names in them are cut to ``SHOWN`` characters and escaped.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any, NamedTuple

from .._json import dumps

__all__ = ["HEADER_PREFIX", "LIST_BYTES", "LIST_PAGES", "LIST_TIMEOUT", "Declaration", "Refusal", "ToolsListing", "declarations",
           "header_value", "param_headers"]

HEADER_PREFIX = "Mcp-Param-"
TYPES = ("string", "integer", "boolean")
"""The property types ``x-mcp-header`` may mark (the revision: "Parameters with type ``number`` are not permitted")."""
SAFE_INTEGER = 2**53 - 1
"""The largest integer the revision lets a header carry (JavaScript's safe range, both signs)."""
LIST_PAGES = 32
"""``tools/list`` pages read at most to find the tools to be called."""
LIST_BYTES = 8 << 20
"""Bytes of ``tools/list`` answers read at most, all pages told."""
LIST_TIMEOUT = 10.0
"""Seconds ``tools/list`` may take, all pages told (at most half the calls' own ``request_timeout``, so that the calls
still have time once it is given up)."""
SHOWN = 64
"""A server-given name (a property path, an ``x-mcp-header`` value) in a refusal's words is cut to this many characters."""

_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_SENTINEL = ("=?base64?", "?=")
_ONE_SCHEMA = ("items", "contains", "additionalProperties", "unevaluatedProperties", "unevaluatedItems",
               "propertyNames", "not", "if", "then", "else", "contentSchema")
_SCHEMA_LISTS = ("items", "prefixItems", "allOf", "anyOf", "oneOf")
_SCHEMA_MAPS = ("patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions")
"""JSON Schema's keywords holding subschemas other than ``properties``: a property under one is not statically
reachable. Values (``default``, ``const``, ``examples``, ...) are not schemas and not looked into; ``$ref`` is not
followed (its target, under ``$defs``, is looked into as unreachable)."""


class Refusal(ValueError):
    """A call the relay does not send, in words naming the rule and the property, never an argument's value."""


class Declaration(NamedTuple):
    """One marked property: its path of ``properties`` keys, its header's name part, its type."""

    path: tuple[str, ...]
    name: str
    type: str


def header_value(text: str) -> str:
    """``text`` as an HTTP field value: as it is where it is printable ASCII without spaces at its ends and does not
    look like the sentinel, else ``=?base64?...?=`` of its UTF-8 (the revision's "Value Encoding", the same for
    ``Mcp-Name`` and ``Mcp-Param-{Name}``)."""
    if (text.isascii() and text.isprintable() and text == text.strip()
            and not (text.startswith(_SENTINEL[0]) and text.endswith(_SENTINEL[1]))):
        return text
    return f"{_SENTINEL[0]}{base64.b64encode(text.encode('utf-8', 'surrogatepass')).decode('ascii')}{_SENTINEL[1]}"


def shown(text: str) -> str:
    """A server-given name for a refusal's words: cut to ``SHOWN`` characters, quoted, all but printable ASCII escaped."""
    return ascii(text[:SHOWN])


def declarations(schema: Any) -> tuple[Declaration, ...]:
    """The properties a tool's ``inputSchema`` marks with ``x-mcp-header``; ``Refusal`` where a mark breaks the
    revision's rules (the tool is then invalid, and not called). A schema that is no object marks none."""
    found: list[Declaration] = []
    names: dict[str, tuple[str, ...]] = {}
    stack: list[tuple[Any, tuple[str, ...] | None]] = [(schema, ())]
    while stack:
        node, path = stack.pop()
        if not isinstance(node, dict):
            continue
        if "x-mcp-header" in node:
            found.append(_declared(node, path, names))
        properties = node.get("properties")
        if isinstance(properties, dict):
            stack.extend((child, None if path is None else (*path, str(key))) for key, child in properties.items())
        for key in _ONE_SCHEMA:
            stack.append((node.get(key), None))
        for key in _SCHEMA_LISTS:
            if isinstance(node.get(key), list):
                stack.extend((child, None) for child in node[key])
        for key in _SCHEMA_MAPS:
            if isinstance(node.get(key), dict):
                stack.extend((child, None) for child in node[key].values())
    return tuple(sorted(found))


def _declared(node: dict[str, Any], path: tuple[str, ...] | None, names: dict[str, tuple[str, ...]]) -> Declaration:
    if not path:
        raise Refusal("x-mcp-header marks a schema that is no property reached by 'properties' keys alone "
                      "(under items, oneOf, $defs, ... or the root): the revision makes the tool invalid")
    where = shown(".".join(path))
    name = node["x-mcp-header"]
    if not isinstance(name, str) or not name or not set(name) <= _TCHAR:
        told = shown(name) if isinstance(name, str) else f"a {type(name).__name__}"
        raise Refusal(f"property {where}: x-mcp-header {told} is not an HTTP token (RFC 9110 tchar): "
                      "the revision makes the tool invalid")
    kind = node.get("type")
    if kind not in TYPES:
        told = shown(kind) if isinstance(kind, str) else "none" if kind is None else f"a {type(kind).__name__}"
        raise Refusal(f"property {where}: x-mcp-header on a property of type {told}, not string, integer or boolean: "
                      "the revision makes the tool invalid")
    if name.lower() in names:
        raise Refusal(f"property {where}: x-mcp-header {shown(name)} again (case-insensitively, also on "
                      f"{shown('.'.join(names[name.lower()]))}): the revision makes the tool invalid")
    names[name.lower()] = path
    return Declaration(path, name, kind)


def param_headers(declared: Iterable[Declaration], arguments: Any) -> dict[str, str]:
    """The ``Mcp-Param-{Name}`` headers of a call with ``arguments``; ``Refusal`` for a value the revision gives no
    header for (its words never hold the value)."""
    headers: dict[str, str] = {}
    for path, name, kind in declared:
        value = _at(arguments, path)
        if value is None:
            continue
        headers[HEADER_PREFIX + name] = header_value(_text(value, kind, shown(".".join(path))))
    return headers


def _at(arguments: Any, path: tuple[str, ...]) -> Any:
    """The value at ``path``, None where there is none (a key missing, a step that is no object)."""
    for key in path:
        if not isinstance(arguments, dict):
            return None
        arguments = arguments.get(key)
    return arguments


def _text(value: Any, kind: str, where: str) -> str:
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "boolean" and isinstance(value, bool):
        return "true" if value else "false"
    if kind == "integer" and not isinstance(value, bool) and (
            isinstance(value, int) or isinstance(value, float) and value.is_integer()):
        if abs(value) > SAFE_INTEGER:
            raise Refusal(f"argument {where}: an integer beyond ±(2**53-1), which the revision does not let "
                          f"x-mcp-header carry")
        return str(int(value))
    raise Refusal(f"argument {where}: its value is no {kind}, the type its x-mcp-header property declares (the "
                  f"revision gives no header for it)")


class ToolsListing:
    """``tools/list`` read for the schemas of the tools to be called, sans-IO: ``request`` is the next page's message
    (None once done), ``count`` each piece of an answer's bytes as they come, ``read`` the answer, ``fail`` a page
    that was not answered. ``schemas`` holds what was found (name -> ``inputSchema``), ``outcome`` what happened."""

    def __init__(self, wanted: Iterable[str], meta: dict[str, Any], *, pages: int = LIST_PAGES,
                 size: int = LIST_BYTES) -> None:
        self.wanted: set[str] = set(wanted)
        self.meta: dict[str, Any] = meta
        self.max_pages: int = pages
        self.max_bytes: int = size
        self.schemas: dict[str, Any] = {}
        self.pages: int = 0
        """Pages asked for."""
        self.bytes: int = 0
        """Bytes of answers read, all pages told."""
        self.outcome: str | None = None
        """None while reading; then ``read``, ``cut (...)`` or ``failed (...)``."""
        self._cursor: str | None = None
        self._cursors: set[str] = set()
        self._answered = 0  # the last page whose answer came

    @property
    def request_id(self) -> str:
        """The id of the page asked for last: a string, never one of the session's (integer) ids."""
        return f"diverge-codec/tools/list/{self.pages}"

    def request(self) -> bytes | None:
        """The next page's ``tools/list`` request (``_meta`` as every modern request), None once done."""
        if self.outcome is None and not self.wanted - self.schemas.keys():
            self.outcome = "read"
        if self.outcome is not None:
            return None
        params: dict[str, Any] = {"_meta": self.meta}
        if self._cursor is not None:
            params["cursor"] = self._cursor
        self.pages += 1
        return dumps({"jsonrpc": "2.0", "id": self.request_id, "method": "tools/list", "params": params})

    def count(self, size: int) -> bool:
        """``size`` more bytes of an answer came; False (and done, cut) once past ``max_bytes``."""
        self.bytes += size
        if self.bytes > self.max_bytes and self.outcome is None:
            self.outcome = f"cut (more than {self.max_bytes} bytes)"
        return self.outcome is None

    def read(self, answer: dict[str, Any]) -> None:
        """The page's answer: its tools' schemas kept where wanted; its cursor, the next page's (if still needed)."""
        if self.outcome is not None:
            return
        self._answered = self.pages
        result, error = answer.get("result"), answer.get("error")
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            code = error.get("code") if isinstance(error, dict) else None
            self.fail(f"error {code}" if isinstance(code, int) and not isinstance(code, bool) else "no tools answered")
            return
        for tool in result["tools"]:
            name = tool.get("name") if isinstance(tool, dict) else None
            if name in self.wanted and name not in self.schemas:
                self.schemas[name] = tool.get("inputSchema")
        cursor = result.get("nextCursor")
        if not self.wanted - self.schemas.keys() or not isinstance(cursor, str) or not cursor:
            self.outcome = "read"
        elif cursor in self._cursors:
            self.outcome = "cut (a cursor seen before)"
        elif self.pages >= self.max_pages:
            self.outcome = f"cut (more than {self.max_pages} pages)"
        else:
            self._cursors.add(cursor)
            self._cursor = cursor

    def unanswered(self, why: str) -> None:
        """The page's answer ended: ``why`` is the failure where it held no answer to the page asked for."""
        if self.outcome is None and self._answered != self.pages:
            self.fail(why)

    def fail(self, why: str) -> None:
        """The page asked for was not answered (``why``: a status, an error code, a timeout): done."""
        if self.outcome is None:
            self.outcome = f"failed ({why})"

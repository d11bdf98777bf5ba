"""The relay's value classes (``Command``, ``Remote``, ``NetworkPolicy``): frozen dataclasses compared, hashed,
replaced and pickled as ``@dataclass(frozen=True)`` made them, with nothing compiled at import (issue 44: a
relay's start-up), and a repr that shows no credential: not a header's, an environment variable's or an
argument's value, nor a URL's user, password, query or fragment."""
from __future__ import annotations

import dataclasses
import pickle

import pytest

from diverge_codec.relay import Command, Remote
from diverge_codec.relay.frozen import url_shown
from diverge_codec.relay.network import NetworkPolicy

SECRET = "s3cr3t-value"


async def _token() -> str:
    return SECRET


EXAMPLES = [
    (Command(["server", "--key", SECRET], {"API_KEY": SECRET, "HOME": "/root"}, "/srv"),
     "Command(program='server', arguments=2, env=['API_KEY', 'HOME'], cwd='/srv')"),
    (Command(("server",)), "Command(program='server', arguments=0, env=None, cwd=None)"),
    (Command([]), "Command(program=None, arguments=0, env=None, cwd=None)"),
    (Remote(f"https://user:{SECRET}@host:8443/mcp?key={SECRET}#{SECRET}", [("Authorization", f"Bearer {SECRET}"),
                                                                          ("X-Team", SECRET)], "sse", _token),
     "Remote(url='https://…@host:8443/mcp?…#…', headers=['Authorization', 'X-Team'], transport='sse', "
     "token=<provider>, network=None)"),
    (Remote("http://[::1]:9/mcp", network=NetworkPolicy(proxy=f"http://user:{SECRET}@proxy:3128", environment=False)),
     "Remote(url='http://[::1]:9/mcp', headers=[], transport='auto', token=None, network=NetworkPolicy("
     "ssl_context=None, cafile=None, cert=None, key=None, proxy='http://…@proxy:3128', environment=False))"),
    (NetworkPolicy(cafile="/etc/ca.pem", cert="/etc/client.pem", key="/etc/client.key"),
     "NetworkPolicy(ssl_context=None, cafile='/etc/ca.pem', cert='/etc/client.pem', key='/etc/client.key', "
     "proxy=None, environment=True)"),
]


@pytest.mark.parametrize(("value", "shown"), EXAMPLES, ids=[shown[:24] for _, shown in EXAMPLES])
def test_a_repr_shows_names_and_counts_never_a_credential(value, shown):
    assert repr(value) == shown and SECRET not in repr(value)


@pytest.mark.parametrize(("url", "shown"), [
    (None, None), ("http://host/mcp", "http://host/mcp"), ("host/mcp", "host/mcp"), ("https://u@h/?", "https://…@h/"),
    ("https://h/p?a=1", "https://h/p?…"), ("http://[::1", "<a URL that does not parse>"),
])
def test_url_shown(url, shown):
    assert url_shown(url) == shown


@pytest.mark.parametrize(("make", "names"), [
    (lambda **kw: Command(["a"], **kw), ["argv", "env", "cwd"]),
    (lambda **kw: Remote("http://h/mcp", **kw), ["url", "headers", "transport", "token", "network"]),
    (lambda **kw: NetworkPolicy(**kw), ["ssl_context", "cafile", "cert", "key", "proxy", "environment"]),
])
def test_frozen_compared_hashed_replaced_and_pickled_by_their_fields(make, names):
    value = make()
    assert [field.name for field in dataclasses.fields(value)] == names == list(type(value).__match_args__)
    assert dataclasses.is_dataclass(value)
    other = dataclasses.replace(value, **{names[-1]: "changed"})
    assert value == make() and value != other and getattr(other, names[-1]) == "changed"
    assert (value == object()) is False and value.__eq__(object()) is NotImplemented
    for name in names:
        with pytest.raises(dataclasses.FrozenInstanceError, match=f"^cannot assign to field '{name}'$"):
            setattr(value, name, 1)
        with pytest.raises(dataclasses.FrozenInstanceError, match=f"^cannot delete field '{name}'$"):
            delattr(value, name)
    if not isinstance(value, Command):  # a Command's argv is a list: unhashable, as a frozen dataclass's
        assert hash(value) == hash(make()) and len({value, make(), other}) == 2
        assert pickle.loads(pickle.dumps(value)) == value
    else:
        with pytest.raises(TypeError, match="unhashable type: 'list'"):
            hash(value)
        assert pickle.loads(pickle.dumps(other)) == other


def test_the_network_policy_refuses_as_before():
    with pytest.raises(ValueError, match="^NetworkPolicy: an ssl_context, or cafile/cert/key to make one, not both$"):
        NetworkPolicy(ssl_context=object(), cafile="ca.pem")
    with pytest.raises(ValueError, match="^NetworkPolicy: proxy must be an http:// URL with a host$"):
        dataclasses.replace(NetworkPolicy(), proxy="https://proxy:3128")


def test_nothing_is_compiled_when_they_are_made():
    """Their methods are the module's, compiled with it: none is source run through exec, as a frozen
    dataclass's six are (tests/test_cli_startup.py: their reprs load no urllib.parse at start-up)."""
    for cls in (Command, Remote, NetworkPolicy):
        for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
            assert getattr(cls, name).__code__.co_filename.endswith(".py"), (cls, name)


def test_an_answer_is_the_named_tuple_it_was():
    """``Answer`` is made by ``collections.namedtuple`` at run time (``typing.NamedTuple`` compiled its string
    annotations at import): the same tuple, fields, repr, pickling and type hints as before."""
    import typing

    from diverge_codec.relay import Answer

    answer = Answer("tools/call go", {"result": {}})
    label, message = answer
    assert (label, message) == ("tools/call go", {"result": {}}) and isinstance(answer, tuple)
    assert Answer._fields == ("label", "message") and answer._asdict() == {"label": label, "message": message}
    assert repr(Answer("ping", None)) == "Answer(label='ping', message=None)"
    assert Answer.__module__ == "diverge_codec.relay.api" and pickle.loads(pickle.dumps(answer)) == answer
    assert typing.get_type_hints(Answer) == {"label": str, "message": typing.Optional[dict[str, typing.Any]]}
    assert answer._replace(message=None) == ("tools/call go", None)

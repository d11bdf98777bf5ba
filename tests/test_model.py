"""The shared model: Mode, ProviderError, ErrorData, and the implementation switch."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

import diverge_codec
from diverge_codec import ErrorData, Mode, ProviderError


def test_mode_is_a_str_enum():
    assert Mode.FIXED == "fixed" and Mode.ROTATING == "rotating"
    assert Mode("fixed") is Mode.FIXED and str(Mode.ROTATING) == "rotating"
    with pytest.raises(ValueError):
        Mode("Fixed")


def test_provider_error():
    error = ProviderError("nope", b=1, a=2)
    assert error.message == "nope" and list(error.details) == ["b", "a"]
    assert error.to_json() == {"message": "nope", "b": 1, "a": 2}
    assert error == ProviderError("nope", b=1, a=2) != ProviderError("nope")
    assert pickle.loads(pickle.dumps(error)) == error
    with pytest.raises(AttributeError):
        error.message = "x"  # type: ignore[misc]
    with pytest.raises(TypeError, match="must be a str"):
        ProviderError(3)  # type: ignore[arg-type]


def test_error_data():
    error = ErrorData(-32603, "internal", {"k": 1})
    assert (error.code, error.message, error.data) == (-32603, "internal", {"k": 1})
    assert ErrorData(1, "m").to_json() == {"code": 1, "message": "m"}
    assert pickle.loads(pickle.dumps(error)) == error
    with pytest.raises(TypeError, match="must be an int"):
        ErrorData(True, "m")
    with pytest.raises(TypeError, match="must be an int"):
        ErrorData(1.0, "m")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="32 signed bits"):
        ErrorData(2**31, "m")
    with pytest.raises(TypeError, match="message must be a str"):
        ErrorData(1, None)  # type: ignore[arg-type]


def test_version_and_implementation():
    assert diverge_codec.__version__.count(".") == 2
    assert diverge_codec.IMPLEMENTATION in ("cython", "python")


def _implementation_with(env: dict[str, str]) -> str:
    code = "import diverge_codec as d, diverge_codec.tools_begin as t; print(d.IMPLEMENTATION, type(t.Begun()).__module__)"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_pure_is_forced_by_the_environment():
    assert _implementation_with({"DIVERGE_CODEC_PURE": "1"}) == "python diverge_codec._tools_begin_py"


def test_compiled_is_used_when_built():
    pytest.importorskip("diverge_codec._tools_begin_c", reason="compiled core not built")
    assert _implementation_with({"DIVERGE_CODEC_PURE": ""}) == "cython diverge_codec._tools_begin_c"

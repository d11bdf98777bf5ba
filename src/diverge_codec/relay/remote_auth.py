"""Reaching a remote server: its credentials and TLS, kept off the command line and out of every report.

- ``expand_header``: ``${NAME}`` in a ``--header`` value is taken from the environment, so a token
  need not be in the process list; an unset name is refused by name, never by value.
- ``TokenSource``: ``--token-command``, run at start and again once when the server answers 401
  mid-session; its standard output is the bearer token (any OAuth tool that prints an access token
  serves: a client-credentials script, a cloud CLI). Its failure is one line that names no token.
- ``describe_challenge``: what a 401 or 403 says about authorization (RFC 6750's
  ``WWW-Authenticate``, RFC 9728's protected resource metadata): the scheme and the authorization
  servers to get a token from, never a token.
- ``tls_context``: ``--cacert``, ``--cert`` and ``--key`` as an ``ssl.SSLContext`` (imported only here,
  only for https).

No value read here reaches an exception's text: errors name the option or the variable.
"""

from __future__ import annotations

import asyncio
import os
import re
from typing import Any

__all__ = ["TokenSource", "describe_challenge", "expand_header", "tls_context"]

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
TOKEN_COMMAND_TIMEOUT = 30.0
"""Seconds ``--token-command`` may take."""
TOKEN_BYTES = 16 * 1024
"""The longest token read from ``--token-command`` (a JWT is a few KiB)."""


class CredentialError(Exception):
    """A credential could not be had; the text names the option or variable, never a value."""


def expand_header(name: str, value: str, environ: Any = os.environ) -> str:
    """``value`` with each ``${NAME}`` replaced from the environment; CredentialError naming an unset one."""
    def replace(match: re.Match[str]) -> str:
        variable = match.group(1)
        if variable not in environ:
            raise CredentialError(f"--header {name}: ${{{variable}}} is not set in the environment")
        return str(environ[variable])
    return _VARIABLE.sub(replace, value)


def usable_token(text: bytes) -> str | None:
    """A bearer token as RFC 6750 spells one (token68, trailing ``=``), or None."""
    token = text.strip()
    if not token or len(token) > TOKEN_BYTES or not re.fullmatch(rb"[A-Za-z0-9\-._~+/]+=*", token):
        return None
    return token.decode("ascii")


class TokenSource:
    """``--token-command``: a shell command whose standard output is a bearer token.

    ``refresh`` runs it (one at a time; a caller that saw an older token than the current one gets the
    current one without a new run) and returns the ``Authorization`` header's value. Its standard error is
    discarded and its standard input is empty: the relay's output stays one report, and nothing waits on a
    terminal."""

    def __init__(self, command: str) -> None:
        self.command: str = command
        self.version: int = 0
        """How many tokens were had: a request sent with an older one may simply be sent again."""
        self.runs: int = 0
        self._value: str | None = None
        self._lock = asyncio.Lock()

    @property
    def header(self) -> str | None:
        return self._value

    async def refresh(self, seen_version: int) -> str:
        async with self._lock:
            if self._value is not None and seen_version != self.version:
                return self._value
            token = await self._run()
            self._value = f"Bearer {token}"
            self.version += 1
            return self._value

    async def _run(self) -> str:
        self.runs += 1
        process = await asyncio.create_subprocess_shell(
            self.command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
        assert process.stdout is not None
        try:
            output = await asyncio.wait_for(process.stdout.read(TOKEN_BYTES + 1), TOKEN_COMMAND_TIMEOUT)
            status = await asyncio.wait_for(process.wait(), TOKEN_COMMAND_TIMEOUT)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()
            raise CredentialError(f"--token-command did not finish within {TOKEN_COMMAND_TIMEOUT:g} s") from None
        if status != 0:
            raise CredentialError(f"--token-command failed (exit status {status})")
        token = usable_token(output)
        if token is None:
            raise CredentialError("--token-command printed no bearer token (one line of token characters)")
        return token


_PARAMETER = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]+)')


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """The first scheme of a ``WWW-Authenticate`` header and its parameters (quotes removed)."""
    scheme, _, rest = header.strip().partition(" ")
    parameters = {key.lower(): value.strip('"') for key, value in _PARAMETER.findall(rest)}
    return scheme, parameters


def describe_challenge(status: int, header: str | None, metadata: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """A human phrase and the report's ``authorization`` for a 401/403 (and RFC 9728 metadata, if read)."""
    found: dict[str, Any] = {"status": status}
    scheme, parameters = parse_challenge(header) if header else ("", {})
    if scheme:
        found["scheme"] = scheme[:32]
    for key in ("error", "scope", "resource_metadata"):
        if key in parameters and parameters[key].isprintable():
            found[key] = parameters[key][:512]
    servers = metadata.get("authorization_servers") if isinstance(metadata, dict) else None
    if isinstance(servers, list):
        found["authorization_servers"] = [url for url in servers[:8] if isinstance(url, str) and url.isprintable()]
    words = "the token was refused" if status == 401 and "error" in found else (
        "authorization required" if status == 401 else "the credentials do not allow this")
    if scheme:
        words += f" ({scheme[:32]})"
    if found.get("authorization_servers"):
        words += f"; get a token from {found['authorization_servers'][0]}"
    elif "resource_metadata" in found:
        words += "; the server publishes its authorization metadata (resource_metadata)"
    return words, found


def tls_context(cacert: str | None, cert: str | None, key: str | None) -> Any:
    """An ``ssl.SSLContext`` offering ALPN ``http/1.1``, verifying the server (against ``cacert``, or the CAs
    ``http_tls.default_tls`` trusts: the same set as without ``--cert``) and, with
    ``cert``, presenting a client certificate; CredentialError naming the option that cannot be used."""
    import ssl

    for option, path in (("--cacert", cacert), ("--cert", cert), ("--key", key)):
        if path is not None and not (os.path.isfile(path) and os.access(path, os.R_OK)):
            raise CredentialError(f"{option}: not a readable file")
    if key is not None and cert is None:
        raise CredentialError("--key goes with --cert")
    from .http_tls import default_tls, offer_http11

    try:
        # Without --cacert, the CAs plain TLS trusts (the system's, as http_tls reads them), so --cert changes
        # only what the relay presents, never what it trusts.
        context = offer_http11(ssl.create_default_context(cafile=cacert)) if cacert is not None else default_tls()
    except (ssl.SSLError, ValueError):
        raise CredentialError("--cacert: no PEM certificate OpenSSL can read") from None
    if cert is not None:
        try:
            context.load_cert_chain(cert, key, password=lambda: b"")  # an encrypted key is refused, never prompted for
        except (ssl.SSLError, ValueError):
            raise CredentialError("--cert/--key: not a certificate and private key OpenSSL can read together") from None
    return context

"""Reaching a remote server: its credentials and TLS, kept off the command line and out of every report.

- ``expand_header``: ``${NAME}`` in a ``--header`` value is taken from the environment, so a token
  need not be in the process list; an unset name is refused by name, never by value.
- ``TokenSource``: ``--token-command`` or a program's token provider (an async callable), run before the first request and again when a request sent with the
  current token is answered 401: at once if that token served before (it expired), else once its run is
  ``TOKEN_REFRESH_EVERY`` seconds old (a token refused from the start is the server's refusal). Its
  standard output, read to its end or to the command's exit (whatever it left running may hold the pipe:
  not waited on), is the bearer token, a ``Bearer`` prefix allowed (any OAuth tool that prints an access
  token serves: a client-credentials script, a cloud CLI).
  The command's whole process group is ended on every path: its exit, ``TOKEN_COMMAND_TIMEOUT``, the
  relay's end. Its failure is one line that names no token.
- ``parse_challenge`` and ``describe_challenge``: what a 401 or 403 says about authorization (RFC 6750's
  ``WWW-Authenticate``, read in one pass, linear in its length; RFC 9728's protected resource metadata,
  used only where its ``resource`` is the URL the relay asked): the scheme and the authorization servers
  to get a token from, never a token. Every string the server gave is cut to ``SHOWN_CHARS``.
- ``tls_context``: ``--cacert``, ``--cert`` and ``--key`` as an ``ssl.SSLContext`` (imported only here,
  only for https).

No value read here reaches an exception's text: errors name the option or the variable.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

__all__ = ["CommandToken", "TokenSource", "describe_challenge", "expand_header", "parse_challenge", "tls_context", "usable_token"]

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
TOKEN_COMMAND_TIMEOUT = 30.0
"""Seconds ``--token-command`` may take; then it is ended, with everything it started."""
TOKEN_BYTES = 16 * 1024
"""The longest token read from ``--token-command`` (a JWT is a few KiB); a longer output is refused."""
TOKEN_REFRESH_EVERY = 10.0
"""The least time between two runs of ``--token-command`` while its tokens are refused from the start."""
TOKEN_POLL = 0.01
"""Seconds between two looks at whether the token command has exited (its output is read meanwhile)."""
CHALLENGE_CHARS = 8192
"""What is read of a ``WWW-Authenticate`` header; the rest is ignored."""
SHOWN_CHARS = 200
"""The longest string a server gave (an authorization server's URL, an error, a scope) shown on stderr or in
the report; a longer one is cut, ending in ``...``."""

log: logging.Logger = logging.getLogger("diverge_codec.relay")


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


_TOKEN68 = re.compile(rb"(?:[Bb][Ee][Aa][Rr][Ee][Rr] +)?([A-Za-z0-9\-._~+/]+=*)")


def usable_token(text: bytes) -> str | None:
    """A bearer token as RFC 6750 spells one (token68, trailing ``=``), a ``Bearer`` prefix allowed, or None."""
    if len(text) > TOKEN_BYTES + 16:
        return None
    match = _TOKEN68.fullmatch(text.strip())
    return match.group(1).decode("ascii") if match is not None else None


class CommandToken:
    """``--token-command`` as a token provider (``api.Remote.token``): the shell command run as ``TokenSource``
    runs it (its own timeout, its process group ended, its failure said in ``--token-command``'s words)."""

    def __init__(self, command: str) -> None:
        self.command: str = command

    def __repr__(self) -> str:
        return "CommandToken(...)"  # a command line may hold a secret

    async def __call__(self) -> str:
        return await TokenSource(self.command)._run()


class TokenSource:
    """``--token-command``: a shell command whose standard output is a bearer token.

    ``refresh`` runs it (one at a time; a caller that saw an older token than the current one gets the
    current one without a new run) and returns the ``Authorization`` header's value; ``may_refresh`` says
    whether a 401 may have a new token (``TOKEN_REFRESH_EVERY``). Its standard error is discarded and its
    standard input is empty: the relay's output stays one report, and nothing waits on a terminal."""

    def __init__(self, command: str | None = None, *, provider: Callable[[], Awaitable[str]] | None = None,
                 timeout: float = TOKEN_COMMAND_TIMEOUT, every: float = TOKEN_REFRESH_EVERY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(provider, CommandToken):
            command, provider = provider.command, None
        if (command is None) == (provider is None):
            raise ValueError("a TokenSource has a command or a provider, one of them")
        self.command: str | None = command
        self.provider: Callable[[], Awaitable[str]] | None = provider
        """A program's own async callable giving a bearer token (``api.Remote.token``), awaited as the command is run."""
        self.name: str = "--token-command" if command is not None else "the token provider"
        self.timeout = timeout
        self.every = every
        self.version: int = 0
        """How many tokens were had: a request sent with an older one may simply be sent again."""
        self.runs: int = 0
        self._value: str | None = None
        self._ran_at: float | None = None
        self._accepted = False  # whether the current token was ever answered other than 401
        self._clock = clock
        self._lock = asyncio.Lock()

    @property
    def header(self) -> str | None:
        return self._value

    def accepted(self, seen_version: int) -> None:
        """A request sent with token ``seen_version`` was answered other than 401: that token served."""
        if seen_version == self.version:
            self._accepted = True

    def may_refresh(self, seen_version: int) -> bool:
        """Whether a request sent with token ``seen_version`` and answered 401 may be sent again: a newer token is
        had or being had already, the token served before (it expired), or its run began ``every`` seconds ago.
        Otherwise the 401 is the server's refusal: a token refused from the start is not asked for again sooner."""
        return (seen_version != self.version or self._lock.locked() or self._accepted or self._ran_at is None
                or self._clock() - self._ran_at >= self.every)

    async def refresh(self, seen_version: int) -> str:
        async with self._lock:
            if self._value is not None and seen_version != self.version:
                return self._value
            self._ran_at = self._clock()
            try:
                token = await (self._run() if self.provider is None else self._ask())
            except CredentialError as error:
                log.info("%s", error)
                raise
            self._value = f"Bearer {token}"
            self.version += 1
            self._accepted = False
            if self.version > 1:
                log.info("%s gave a new token (run %d): the server refused the last one", self.name, self.runs)
            return self._value

    async def _ask(self) -> str:
        """The provider's token: its failure is said by the exception's type alone (its text may hold a secret)."""
        assert self.provider is not None
        self.runs += 1
        failure = None
        try:
            given: object = await asyncio.wait_for(self.provider(), self.timeout)
        except asyncio.TimeoutError:
            failure = f"the token provider did not answer within {self.timeout:g} s"
        except CredentialError:
            raise
        except Exception as error:  # noqa: BLE001  # a program's own code: any failure is the provider's
            failure = f"the token provider failed ({type(error).__name__})"
        if failure is not None:  # raised outside the handler: the provider's exception is no __context__
            raise CredentialError(failure)
        token = usable_token(given.encode("ascii", "replace")) if isinstance(given, str) else None
        if token is None:
            raise CredentialError("the token provider gave no bearer token (a str of token characters)")
        return token

    async def _run(self) -> str:
        assert self.command is not None
        self.runs += 1
        read_end, write_end = os.pipe()
        try:
            process = subprocess.Popen(self.command, shell=True, stdin=subprocess.DEVNULL, stdout=write_end,
                                       stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError:
            os.close(read_end)
            raise CredentialError("--token-command could not start (no shell)") from None
        finally:
            os.close(write_end)
        log.debug("--token-command started (pid %d)", process.pid)
        try:
            output, status = await asyncio.wait_for(_output_until_exit(process.pid, read_end), self.timeout)
        except asyncio.TimeoutError:
            raise CredentialError(f"--token-command did not finish within {self.timeout:g} s "
                                  "(it was ended, with everything it started)") from None
        finally:
            os.close(read_end)
            _end_group(process)
        if status != 0:
            raise CredentialError(f"--token-command failed (exit status {status})")
        if output is None:
            raise CredentialError(f"--token-command printed more than {TOKEN_BYTES} bytes: no bearer token")
        token = usable_token(output)
        if token is None:
            raise CredentialError("--token-command printed no bearer token (one line of token characters)")
        return token


async def _output_until_exit(pid: int, read_end: int) -> tuple[bytes | None, int]:
    """What the command wrote until it exited (None past ``TOKEN_BYTES``) and its exit status. Its output is
    read to its end or to the command's exit, whichever is first: a child it left behind may hold the pipe
    open for ever. The command is left unreaped (a zombie keeps its group's number from being reused)."""
    os.set_blocking(read_end, False)
    output = bytearray()
    while True:
        exited = _exited(pid)
        open_ = _read_available(read_end, output)  # after the look: what it wrote before exiting is in the pipe
        if len(output) > TOKEN_BYTES:
            return None, 0
        if exited is not None:
            return bytes(output), exited
        await asyncio.sleep(TOKEN_POLL if open_ else TOKEN_POLL * 5)


def _read_available(fd: int, into: bytearray) -> bool:
    """Append what the pipe holds now (at most a little past ``TOKEN_BYTES``): False once it is at its end."""
    while len(into) <= TOKEN_BYTES:
        try:
            piece = os.read(fd, TOKEN_BYTES + 1)
        except BlockingIOError:
            return True
        if not piece:
            return False
        into += piece
    return True


def _exited(pid: int) -> int | None:
    """The command's exit status (128 + N for signal N) once it has exited, None while it runs; not reaped (where
    ``os.waitid`` is missing, macOS before Python 3.13, reaped: its group is signalled right after)."""
    try:
        if not hasattr(os, "waitid"):
            done, status = os.waitpid(pid, os.WNOHANG)
            code = os.waitstatus_to_exitcode(status)
            return None if done == 0 else code if code >= 0 else 128 - code
        result = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return -1
    if result is None or result.si_pid == 0:
        return None
    return result.si_status if result.si_code == os.CLD_EXITED else 128 + result.si_status


def _end_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the command's process group (its leader not yet reaped: the number is still the group's), then reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        _, status = os.waitpid(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    except ChildProcessError:
        process.returncode = -1
    log.debug("--token-command ended (pid %d, its group killed)", process.pid)


_TCHARS = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"?')
_BETWEEN = re.compile(r"[ \t,]*")
_SPACES = re.compile(r"[ \t]*")
_ESCAPE = re.compile(r"\\(.)")


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """The first scheme of a ``WWW-Authenticate`` header and its parameters (quotes removed, names in lower case).

    One pass over at most ``CHALLENGE_CHARS`` characters, each pattern anchored where the last one ended and
    none able to backtrack: time linear in the header's length (RFC 9110 section 11.6.1's grammar)."""
    text = header[:CHALLENGE_CHARS]
    position = _SPACES.match(text).end()  # type: ignore[union-attr]
    scheme_match = _TCHARS.match(text, position)
    if scheme_match is None:
        return "", {}
    parameters: dict[str, str] = {}
    position = scheme_match.end()
    while position < len(text):
        position = _BETWEEN.match(text, position).end()  # type: ignore[union-attr]
        name = _TCHARS.match(text, position)
        if name is None:
            break
        position = _SPACES.match(text, name.end()).end()  # type: ignore[union-attr]
        if text[position:position + 1] != "=":
            break  # the next challenge's scheme, or a token68: the first challenge's parameters end here
        position = _SPACES.match(text, position + 1).end()  # type: ignore[union-attr]
        quoted = _QUOTED.match(text, position)
        if quoted is not None:
            value, position = _ESCAPE.sub(r"\1", quoted.group(1)), quoted.end()
        else:
            plain = _TCHARS.match(text, position)
            value, position = (plain.group(), plain.end()) if plain is not None else ("", position)
        parameters.setdefault(name.group().lower(), value)
    return scheme_match.group(), parameters


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as a server gave it, cut to ``limit`` characters (ending ``...`` where it was longer)."""
    return text if len(text) <= limit else text[:limit] + "..."


def same_resource(resource: object, url: str) -> bool:
    """RFC 9728 section 3.3: the metadata's ``resource`` is the URL the relay asked (scheme and host in any case,
    a trailing ``/`` either way, the query and fragment left out: they are no part of the resource's name)."""
    if not isinstance(resource, str) or len(resource) > 8192:
        return False
    def canonical(text: str) -> tuple[str, str, str]:
        parts = urlsplit(text)
        return parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/")
    try:
        return canonical(resource) == canonical(url)
    except ValueError:
        return False


def describe_challenge(status: int, header: str | None, metadata: dict[str, Any] | None, *,
                       token_sent: bool = True, url: str | None = None) -> tuple[str, dict[str, Any]]:
    """A human phrase and the report's ``authorization`` for a 401/403 (and RFC 9728 metadata, if read: used only
    where its ``resource`` is ``url``). ``token_sent``: whether the refused request carried an ``Authorization``."""
    found: dict[str, Any] = {"status": status}
    scheme, parameters = parse_challenge(header) if header else ("", {})
    if scheme:
        found["scheme"] = shown(scheme, 32)
    for key in ("error", "scope", "resource_metadata"):
        if key in parameters and parameters[key].isprintable():
            found[key] = shown(parameters[key])
    servers = None
    if isinstance(metadata, dict):
        if url is None or same_resource(metadata.get("resource"), url):
            servers = metadata.get("authorization_servers")
        else:
            found["metadata"] = "names another resource: not used"
    if isinstance(servers, list):
        found["authorization_servers"] = [shown(url) for url in servers[:8] if isinstance(url, str) and url.isprintable()]
    named = f" ({found['scheme']})" if scheme else ""
    if status == 401 and not token_sent:
        words = f"the server wants a token{named or ' (Bearer)'}; none was sent"
    elif status == 401:
        words = f"the token was refused{named}"
    else:
        words = f"the credentials do not allow this{named}"
    if found.get("authorization_servers"):
        words += f"; get a token from {found['authorization_servers'][0]}"
    elif "metadata" in found:
        words += "; its authorization metadata (RFC 9728) names another resource: not used"
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
        load_client_certificate(context, cert, key)
    return context


def load_client_certificate(context: Any, cert: str, key: str | None) -> None:
    """``cert`` (and ``key``) presented by ``context``; CredentialError naming the options, never a value."""
    import ssl

    for option, path in (("--cert", cert), ("--key", key)):
        if path is not None and not (os.path.isfile(path) and os.access(path, os.R_OK)):
            raise CredentialError(f"{option}: not a readable file")
    try:
        context.load_cert_chain(cert, key, password=lambda: b"")  # an encrypted key is refused, never prompted for
    except (ssl.SSLError, ValueError):
        raise CredentialError("--cert/--key: not a certificate and private key OpenSSL can read together") from None

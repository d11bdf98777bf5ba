"""Real infrastructure on loopback: nginx, squid, tinyproxy and haproxy from Debian's packages (``.ci/infra``).

Each launcher is a context manager that writes a configuration to a fresh directory, starts its own instance
in the foreground on a free loopback port, waits until that port accepts, and on leaving stops it (SIGTERM,
then SIGKILL) and removes the directory::

    with infra.nginx(upstream=("127.0.0.1", port), keepalive_timeout="1s") as proxy:
        proxy.url            # https://localhost:PORT (TLS by the CA in proxy.tls.ca_file)
    with infra.squid(credentials=("user", "pass")) as proxy:
        proxy.url            # http://user:pass@127.0.0.1:PORT, for HTTP_PROXY / HTTPS_PROXY
    with infra.haproxy([("127.0.0.1", a), ("127.0.0.1", b)]) as balancer:
        balancer.url         # http://127.0.0.1:PORT, sticky by the cookie SERVERID

A missing binary skips the test saying which and how to install it; with ``CI`` set or
``DIVERGE_CODEC_REQUIRE_INFRA=1`` it fails instead. A process that does not start fails with the tail of its
log. Tests using these start processes and bind sockets: declare them slow in tests/conftest.py.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REQUIRED = bool(os.environ.get("CI")) or os.environ.get("DIVERGE_CODEC_REQUIRE_INFRA", "") not in ("", "0")
"""In CI (or asked for), a missing binary fails the test instead of skipping it."""
BINARIES = {"nginx": "/usr/sbin/nginx", "squid": "/usr/sbin/squid", "tinyproxy": "/usr/bin/tinyproxy",
            "haproxy": "/usr/sbin/haproxy"}
START_SECONDS = 15.0
"""How long a process may take to accept on its port (squid reads its configuration and starts helpers)."""
SSE_SETTINGS = """\
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_buffering off;
        proxy_cache off;
        proxy_read_timeout 1h;
"""
"""nginx's settings for an MCP server's event streams, as docs/relay.md gives them: HTTP/1.1 and keep-alive to
the server, nothing buffered (each event passes at once), a stream quiet for up to an hour kept."""


def binary(name: str) -> str:
    """The path of ``name``'s binary; skip (fail where REQUIRED) when it is not installed."""
    path = shutil.which(name) or BINARIES[name]
    if not os.access(path, os.X_OK):
        message = f"{name} is not installed (bash .ci/infra installs nginx, squid, tinyproxy and haproxy as root)"
        if REQUIRED:
            pytest.fail(message + "; CI or DIVERGE_CODEC_REQUIRE_INFRA=1 requires it", pytrace=False)
        pytest.skip(message)
    return path


def free_port() -> int:
    """A loopback port nothing listens on now (the OS's choice)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class TlsFiles:
    """A CA and a certificate it issued for ``localhost`` and ``127.0.0.1``, as PEM files."""

    ca_file: str
    cert_file: str
    key_file: str
    ca: object = field(repr=False)
    """The ``trustme.CA``, to issue more (a client certificate for mTLS)."""


def tls_files(directory: str | Path, names: Sequence[str] = ("localhost", "127.0.0.1")) -> TlsFiles:
    trustme = pytest.importorskip("trustme", reason="the TLS tests make their CA with trustme (the test extra)")
    authority = trustme.CA()
    issued = authority.issue_cert(*names)
    folder = Path(directory)
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "server.pem", folder / "server.key"
    authority.cert_pem.write_to_path(str(ca_file))
    issued.cert_chain_pems[0].write_to_path(str(cert_file))
    for pem in issued.cert_chain_pems[1:]:
        pem.write_to_path(str(cert_file), append=True)
    issued.private_key_pem.write_to_path(str(key_file))
    return TlsFiles(str(ca_file), str(cert_file), str(key_file), authority)


@dataclass
class Running:
    """A started instance: where it listens, its process and its directory (configuration and log)."""

    name: str
    port: int
    process: subprocess.Popen[bytes]
    directory: Path
    url: str = ""
    tls: TlsFiles | None = None
    extra: dict[str, object] = field(default_factory=dict)

    def log(self) -> str:
        path = self.directory / "log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 5 s; waited for."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _world_readable_directory(name: str) -> Path:
    """A fresh directory the service's own user can read and write (squid and tinyproxy leave root)."""
    directory = Path(tempfile.mkdtemp(prefix=f"diverge-infra-{name}-"))
    directory.chmod(0o777)
    return directory


def _wait_for_port(running: Running) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if running.process.poll() is not None:
            break
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", running.port), timeout=0.5):
            return
        time.sleep(0.02)
    running.stop()
    pytest.fail(f"{running.name} did not start on port {running.port} (exit status {running.process.returncode}):\n"
                f"{running.log()}", pytrace=False)


@contextlib.contextmanager
def _started(name: str, argv: list[str], directory: Path, port: int, **details: object) -> Iterator[Running]:
    with open(directory / "log", "ab") as log:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=directory,
                                   start_new_session=True)
    running = Running(name, port, process, directory, **details)  # type: ignore[arg-type]
    try:
        _wait_for_port(running)
        yield running
    finally:
        running.stop()
        shutil.rmtree(directory, ignore_errors=True)


@contextlib.contextmanager
def nginx(upstream: tuple[str, int], *, tls: bool = True, keepalive_timeout: str = "75s", sse: bool = True,
          client_ca: str | None = None, extra: str = "") -> Iterator[Running]:
    """nginx as a reverse proxy to ``upstream`` (a host and port), terminating TLS (a fresh CA's certificate for
    ``localhost``: ``tls.ca_file`` verifies it) unless ``tls`` is False; ``keepalive_timeout`` toward the client
    (nginx's default is 75s); ``sse`` the event-stream settings of docs/relay.md, else nginx's defaults (HTTP/1.0 to
    the server, responses buffered); ``client_ca`` requires a client certificate it issued (mTLS); ``extra``
    more directives inside ``location /``."""
    path = binary("nginx")
    directory = _world_readable_directory("nginx")
    port = free_port()
    files = tls_files(directory) if tls else None
    listen = f"listen 127.0.0.1:{port}" + (" ssl" if tls else "") + ";"
    certificates = (f"ssl_certificate {files.cert_file};\n        ssl_certificate_key {files.key_file};"
                    if files else "")
    if client_ca:
        certificates += f"\n        ssl_client_certificate {client_ca};\n        ssl_verify_client on;"
    temp = "".join(f"    {kind}_temp_path {directory}/{kind};\n"
                   for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (directory / "nginx.conf").write_text(f"""\
daemon off;
master_process off;
pid {directory}/nginx.pid;
error_log {directory}/log info;
events {{ worker_connections 256; }}
http {{
    access_log off;
{temp}    keepalive_timeout {keepalive_timeout};
    server {{
        {listen}
        server_name localhost;
        {certificates}
        location / {{
            proxy_pass http://{upstream[0]}:{upstream[1]};
{SSE_SETTINGS if sse else ""}{extra}
        }}
    }}
}}
""")
    scheme = "https" if tls else "http"
    with _started("nginx", [path, "-p", str(directory), "-c", str(directory / "nginx.conf"), "-e", str(directory / "log")],
                  directory, port, url=f"{scheme}://localhost:{port}", tls=files) as running:
        yield running


def _proxy_url(port: int, credentials: tuple[str, str] | None) -> str:
    return f"http://{credentials[0]}:{credentials[1]}@127.0.0.1:{port}" if credentials else f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def squid(credentials: tuple[str, str] | None = None) -> Iterator[Running]:
    """squid as a forward proxy on loopback (absolute-form http and ``CONNECT`` to any port, nothing cached),
    requiring Basic ``credentials`` (a user and password of letters and digits) when given. Its access log,
    one line a request, is ``directory/access.log``."""
    path = binary("squid")
    directory = _world_readable_directory("squid")
    port = free_port()
    if credentials:
        checker = directory / "check-password"
        checker.write_text(f'#!/bin/sh\nwhile read -r user password; do\n  if [ "$user" = "{credentials[0]}" ] && '
                           f'[ "$password" = "{credentials[1]}" ]; then echo OK; else echo ERR; fi\ndone\n')
        checker.chmod(0o755)
        access = (f"auth_param basic program {checker}\nauth_param basic children 1 startup=1\n"
                  "auth_param basic realm infra\nacl users proxy_auth REQUIRED\nhttp_access allow users\n"
                  "http_access deny all\n")
    else:
        access = "http_access allow all\n"
    user = "cache_effective_user proxy\n" if os.geteuid() == 0 else ""
    (directory / "squid.conf").write_text(f"""\
http_port 127.0.0.1:{port}
{access}{user}pid_filename none
cache deny all
cache_mem 8 MB
cache_log {directory}/log
access_log stdio:{directory}/access.log
logfile_rotate 0
shutdown_lifetime 0 seconds
coredump_dir {directory}
dns_nameservers 127.0.0.1
forwarded_for delete
via off
""")
    with _started("squid", [path, "-N", "-f", str(directory / "squid.conf")], directory, port,
                  url=_proxy_url(port, credentials)) as running:
        yield running


@contextlib.contextmanager
def tinyproxy(credentials: tuple[str, str] | None = None) -> Iterator[Running]:
    """tinyproxy as a forward proxy on loopback (``CONNECT`` to any port), requiring Basic ``credentials`` when
    given. tinyproxy 1.11 serves one request per client connection and relays whatever follows it raw."""
    path = binary("tinyproxy")
    directory = _world_readable_directory("tinyproxy")
    port = free_port()
    user = "User nobody\nGroup nogroup\n" if os.geteuid() == 0 else ""
    authentication = f"BasicAuth {credentials[0]} {credentials[1]}\n" if credentials else ""
    (directory / "tinyproxy.conf").write_text(f"""\
Port {port}
Listen 127.0.0.1
{user}Timeout 60
LogFile "{directory}/log"
LogLevel Info
MaxClients 50
Allow 127.0.0.1
DisableViaHeader Yes
{authentication}""")
    with _started("tinyproxy", [path, "-d", "-c", str(directory / "tinyproxy.conf")], directory, port,
                  url=_proxy_url(port, credentials)) as running:
        yield running


@contextlib.contextmanager
def haproxy(servers: Sequence[tuple[str, int]], *, cookie: str = "SERVERID", check: bool = True) -> Iterator[Running]:
    """haproxy balancing ``servers`` round robin, sticky by the cookie it inserts (``cookie``, its value the
    server's name ``s0``, ``s1``...), each server health-checked every 0.5 s where ``check`` (a dead one is taken
    out, its clients moved to another); HTTP keep-alive both ways."""
    path = binary("haproxy")
    directory = _world_readable_directory("haproxy")
    port = free_port()
    health = " check inter 500 fall 1 rise 1" if check else ""
    lines = "".join(f"    server s{index} {host}:{server_port} cookie s{index}{health}\n"
                    for index, (host, server_port) in enumerate(servers))
    (directory / "haproxy.cfg").write_text(f"""\
global
    maxconn 256
defaults
    mode http
    option redispatch
    retries 1
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout http-keep-alive 10s
frontend entry
    bind 127.0.0.1:{port}
    default_backend servers
backend servers
    balance roundrobin
    cookie {cookie} insert indirect nocache
{lines}""")
    with _started("haproxy", [path, "-db", "-f", str(directory / "haproxy.cfg")], directory, port,
                  url=f"http://127.0.0.1:{port}") as running:
        yield running

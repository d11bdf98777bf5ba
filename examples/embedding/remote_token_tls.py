"""Relay a remote MCP server with your own token provider and your own ``ssl.SSLContext``.

``python examples/embedding/remote_token_tls.py URL --cafile CA.pem --token-file FILE [--call NAME]``: the
relay awaits the provider before its first request and again when the server answers 401; here the provider
reads the token a refresh agent keeps in FILE (any async code serves: an OAuth client, a vault lookup). The
``NetworkPolicy`` trusts only CA.pem and reads nothing from the environment: ``HTTPS_PROXY``,
``SSL_CERT_FILE`` and the like change nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
from pathlib import Path

from diverge_codec.relay import NetworkPolicy, Relay, RelayOptions, Remote


class FileToken:
    """A token provider: the token in ``path``, read again each time the relay asks (at start, after a 401)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.asked = 0

    async def __call__(self) -> str:
        self.asked += 1
        return (await asyncio.to_thread(self.path.read_text)).strip()


async def main(url: str, cafile: str, token_file: Path, call: str | None) -> int:
    context = ssl.create_default_context(cafile=cafile)  # your own context: your CAs, your settings
    token = FileToken(token_file)
    remote = Remote(url, token=token, network=NetworkPolicy(ssl_context=context, environment=False))
    options = RelayOptions(calls=[(call, {})] if call else [], until_answered=call is not None)
    async with Relay(remote, options, payloads=True) as relay:
        async for payload in relay:  # the channel payload's bytes: tag 0, then the notification's JSON
            print(len(payload), payload[1:60].decode("utf-8", "replace"))
    report = relay.report.as_dict()
    print("calls", report["calls"], "token asked", token.asked, "unreachable", report["unreachable"])
    return 1 if report["unreachable"] else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url")
    parser.add_argument("--cafile", required=True)
    parser.add_argument("--token-file", type=Path, required=True)
    parser.add_argument("--call")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.url, args.cafile, args.token_file, args.call)))

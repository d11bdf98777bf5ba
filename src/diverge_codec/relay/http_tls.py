"""TLS for the relay's HTTP client: the CAs it trusts, and a failed handshake in words that say the fix.

``ssl`` is imported only when a function here runs (an https URL): a relay over http or stdio never loads it.

- ``default_tls()``: the system's CAs. ``SSL_CERT_FILE``/``SSL_CERT_DIR`` where set (OpenSSL's reading);
  otherwise, on macOS and Windows, the operating system's own trust store through ``truststore`` where it is
  installed (the ``[http]`` extra installs it there: a CA added to the Keychain or the Windows store is trusted,
  as the MCP SDKs' clients trust it); otherwise OpenSSL's paths, the usual bundle files, certifi's bundle.
  On Linux ``truststore`` would read the same files OpenSSL reads, so it is not used there.
- ``offer_http11(context)``: ALPN ``http/1.1``, the one protocol spoken (a server or proxy that picks by ALPN
  never expects HTTP/2 from us).
- ``failure_words(error, certificate)``: an ``ssl.SSLError`` in the relay's words, by OpenSSL's
  ``verify_code``: an unknown CA names ``--cacert``/``SSL_CERT_FILE``; a name mismatch names the names the
  certificate holds; an expired certificate its expiry date; a plain-HTTP answer to TLS says to use http://.
- ``certificate_facts(der)``: the names (DNS and IP) a certificate holds and its validity, read from its DER
  bytes (the certificate a failed handshake refused is read again over a second handshake that does not verify;
  no request is sent on it).
"""

from __future__ import annotations

import ipaddress
import os
import sys
from typing import Any

__all__ = ["CA_FILES", "certificate_facts", "default_tls", "failure_words", "offer_http11"]

CA_FILES = ("/etc/ssl/cert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/pki/tls/cert.pem",
            "/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/ca-bundle.pem")
"""Where systems keep their CA bundle, tried where OpenSSL's compiled-in paths are not there (httpcore2's list,
truststore's Linux fallbacks; the first is macOS's own)."""
NAMES_SHOWN = 4
"""Names of a mismatched certificate said at most (each cut to ``NAME_CHARS``)."""
NAME_CHARS = 64
UNKNOWN_CA = frozenset({2, 18, 19, 20, 21})
"""OpenSSL's verify codes for a chain that ends at no trusted CA (issuer unknown, self-signed, leaf unverifiable)."""
MISMATCH = frozenset({62, 64})  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
EXPIRED, NOT_YET_VALID = 10, 9
PLAIN_HTTP = ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG")
"""OpenSSL's reasons when the server's first bytes are not TLS (an http server on an https URL)."""


def default_tls() -> Any:
    """The system's CAs as an ``ssl.SSLContext`` offering ALPN ``http/1.1`` (see the module's text for the order)."""
    import ssl

    paths = ssl.get_default_verify_paths()
    chosen = os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR")
    if not chosen and sys.platform in ("darwin", "win32"):
        try:
            import truststore  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            pass
        else:
            return offer_http11(truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
    if sys.platform == "win32" or any(path and os.path.exists(path) for path in (paths.cafile, paths.capath)):
        return offer_http11(ssl.create_default_context())  # reads SSL_CERT_FILE and SSL_CERT_DIR as OpenSSL does
    for candidate in CA_FILES:
        if os.path.isfile(candidate):
            return offer_http11(ssl.create_default_context(cafile=candidate))
    try:
        import certifi  # type: ignore[import-not-found, unused-ignore]  # a python.org build without its certificates
    except ImportError:
        return offer_http11(ssl.create_default_context())
    return offer_http11(ssl.create_default_context(cafile=certifi.where()))


def offer_http11(context: Any) -> Any:
    """``context`` offering ALPN ``http/1.1`` (where the TLS library has ALPN; a stand-in without it is kept)."""
    setter = getattr(context, "set_alpn_protocols", None)
    if setter is not None:
        try:
            setter(["http/1.1"])
        except NotImplementedError:
            pass
    return context


def insecure_probe() -> Any:
    """A context that verifies nothing, for reading the certificate a verifying handshake refused (never a request)."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return offer_http11(context)


def wants_certificate(error: BaseException) -> bool:
    """Whether ``error``'s words need the refused certificate's names or dates."""
    code = getattr(error, "verify_code", None)
    return code in MISMATCH or code in (EXPIRED, NOT_YET_VALID)


def failure_words(error: BaseException, facts: tuple[list[str], str, str] | None = None) -> str:
    """An ``ssl.SSLError`` in words with the fix; ``facts`` (``certificate_facts``) the refused certificate's."""
    code = getattr(error, "verify_code", None)
    names, not_before, not_after = facts or ([], "", "")
    if code in UNKNOWN_CA:
        return ("TLS: the server's certificate is not signed by a CA this machine trusts: give its CA with "
                "--cacert FILE (or SSL_CERT_FILE)")
    if code in MISMATCH:
        held = ", ".join(name[:NAME_CHARS] for name in names[:NAMES_SHOWN]) + (" ..." if len(names) > NAMES_SHOWN else "")
        return (f"TLS: the server's certificate is not for the URL's host; it holds {held}" if held
                else "TLS: the server's certificate is not for the URL's host")
    if code == EXPIRED:
        return f"TLS: the server's certificate expired{f' on {not_after}' if not_after else ''}"
    if code == NOT_YET_VALID:
        return f"TLS: the server's certificate is not valid yet{f' (from {not_before})' if not_before else ''}"
    reason = str(getattr(error, "reason", None) or "")
    if reason.upper() in PLAIN_HTTP:
        return "TLS: the server answered in plain HTTP, not TLS: use an http:// URL"
    if code is not None:
        message = str(getattr(error, "verify_message", "") or "")[:80]
        return f"TLS: the server's certificate was refused ({message or f'verify code {code}'})"
    return f"TLS: {reason[:80] or type(error).__name__}"


def _element(der: bytes, at: int) -> tuple[int, int, int]:
    """The DER element at ``at``: its tag, where its content starts and ends (IndexError/ValueError if cut)."""
    tag, length = der[at], der[at + 1]
    at += 2
    if length & 0x80:
        count = length & 0x7F
        if not 0 < count <= 4 or at + count > len(der):
            raise ValueError("a DER length that is not one")
        length, at = int.from_bytes(der[at:at + count], "big"), at + count
    if at + length > len(der):
        raise ValueError("a DER element longer than the certificate")
    return tag, at, at + length


def _children(der: bytes, start: int, end: int) -> list[tuple[int, int, int]]:
    found = []
    while start < end:
        element = _element(der, start)
        found.append(element)
        start = element[2]
    return found


def _time(der: bytes, element: tuple[int, int, int]) -> str:
    """A UTCTime or GeneralizedTime as ``YYYY-MM-DD HH:MM:SS UTC``."""
    tag, start, end = element
    text = der[start:end].decode("ascii")
    if tag == 0x17:  # UTCTime: YYMMDDHHMMSSZ, years 50-99 are 19xx (RFC 5280)
        text = ("19" if int(text[:2]) >= 50 else "20") + text
    return f"{text[:4]}-{text[4:6]}-{text[6:8]} {text[8:10]}:{text[10:12]}:{text[12:14]} UTC"


def certificate_facts(der: bytes) -> tuple[list[str], str, str] | None:
    """A certificate's DNS and IP names (its subjectAltName, else its subject's common name), and its validity's
    start and end; None for bytes that are not a certificate as RFC 5280 lays one out."""
    try:
        _, start, end = _element(der, 0)
        _, start, end = _element(der, start)  # tbsCertificate
        fields = _children(der, start, end)
        if fields[0][0] == 0xA0:  # an explicit version
            fields = fields[1:]
        validity = _children(der, fields[3][1], fields[3][2])
        not_before, not_after = _time(der, validity[0]), _time(der, validity[1])
        names: list[str] = []
        for tag, field_start, field_end in fields[6:]:
            if tag != 0xA3:  # extensions
                continue
            for _, ext_start, ext_end in _children(der, *_element(der, field_start)[1:]):
                parts = _children(der, ext_start, ext_end)
                if der[parts[0][1]:parts[0][2]] != b"\x55\x1d\x11":  # 2.5.29.17, subjectAltName
                    continue
                general = _element(der, parts[-1][1])
                for name_tag, name_start, name_end in _children(der, general[1], general[2]):
                    value = der[name_start:name_end]
                    if name_tag == 0x82:
                        names.append(value.decode("ascii", "replace"))
                    elif name_tag == 0x87 and len(value) in (4, 16):
                        names.append(str(ipaddress.ip_address(value)))
        if not names:
            names = _common_names(der, fields[4])
        return [name if name.isprintable() else name.encode("unicode_escape").decode("ascii") for name in names], \
            not_before, not_after
    except (IndexError, ValueError, UnicodeDecodeError):
        return None


def _common_names(der: bytes, subject: tuple[int, int, int]) -> list[str]:
    names = []
    for _, set_start, set_end in _children(der, subject[1], subject[2]):
        for _, pair_start, pair_end in _children(der, set_start, set_end):
            oid, value = _children(der, pair_start, pair_end)[:2]
            if der[oid[1]:oid[2]] == b"\x55\x04\x03":  # 2.5.4.3, commonName
                names.append(der[value[1]:value[2]].decode("utf-8", "replace"))
    return names

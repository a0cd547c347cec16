"""A real HTTP(S) server on 127.0.0.1 for the web tools' tests: routes, redirects, what it saw."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

RouteFunc = Callable[[BaseHTTPRequestHandler], None]
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@dataclass
class Seen:
    path: str
    headers: dict[str, str]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    routes: dict[str, RouteFunc]
    seen: list[Seen]
    stop: threading.Event

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hung up on purpose (size and time limits) is not a failure


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_GET(self) -> None:
        self.server.seen.append(Seen(path=self.path, headers=dict(self.headers.items())))
        route = self.server.routes.get(urlsplit(self.path).path)
        if route is None:
            send(self, 404, "text/html", b"<html><body><p>No such page here.</p></body></html>")
        else:
            route(self)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def send(
    handler: BaseHTTPRequestHandler,
    status: int,
    content_type: str | None,
    body: bytes,
    headers: dict[str, str] | None = None,
) -> None:
    handler.send_response(status)
    if content_type is not None:
        handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def respond(status: int, content_type: str | None, body: bytes, **headers: str) -> RouteFunc:
    return lambda handler: send(handler, status, content_type, body, headers)


def redirect(location: str, status: int = 302) -> RouteFunc:
    return lambda handler: send(handler, status, "text/plain", b"moved", {"Location": location})


@dataclass
class Server:
    port: int
    scheme: str
    seen: list[Seen]
    routes: dict[str, RouteFunc]
    sni: list[str | None] = field(default_factory=list)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"


@contextmanager
def serve(routes: dict[str, RouteFunc], tls: ssl.SSLContext | None = None) -> Iterator[Server]:
    httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
    httpd.routes, httpd.seen, httpd.stop = routes, [], threading.Event()
    server = Server(
        port=httpd.server_address[1],
        scheme="https" if tls else "http",
        seen=httpd.seen,
        routes=routes,
    )
    if tls is not None:
        tls.sni_callback = lambda _sock, name, _ctx: server.sni.append(name)
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        httpd.stop.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def table_resolver(table: dict[str, list[str]], calls: list[tuple[str, int]] | None = None) -> Any:
    async def resolve(host: str, port: int) -> list[str]:
        if calls is not None:
            calls.append((host, port))
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve


def tls_contexts(tmp_path: Path, hostname: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a certificate for `hostname` and a client context trusting it."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.now(UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kode test CA")])
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(hours=1))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "leaf.pem", tmp_path / "leaf.key"
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    return server, client


_WATCH_IMPORT = """
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import anyio
importers = []
class _Watch:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            importers.append(threading.current_thread() is threading.main_thread())
        return None
sys.meta_path.insert(0, _Watch())
"""


def import_threads(module: str, script: str) -> str:
    """Run `script` in a fresh Python process that records, for each import of `module`,
    whether the main thread (the event loop's) made it; return what it printed.

    The script sees ``importers`` (the list of those records), ``json``, ``sys``, ``threading``,
    ``anyio``, ``BaseHTTPRequestHandler`` and ``ThreadingHTTPServer``, and ends with
    ``print(importers)``;
    ``"[False]"`` means one import, made off the main thread.
    """
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _WATCH_IMPORT.format(module=module) + script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()

"""Hostile servers on 127.0.0.1 for the outbound policy's tests (:mod:`matcher.outbound`):
the slow-loris of :mod:`bench.slow_server` at the tests' pace, a private address of this
machine, a certificate signed by itself."""

from __future__ import annotations

import socket
from contextlib import AbstractContextManager

from bench.slow_server import SlowServer
from bench.slow_server import slow_server as bench_slow_server

DRIP_S = 0.2
"""Seconds between two bytes of a slow-loris answer."""
GIVE_UP_S = 30.0
"""A slow-loris connection ends by itself after this long (so a failed test cannot hang)."""


def slow_server(speaks_first: bool = False) -> AbstractContextManager[SlowServer]:
    """:func:`bench.slow_server.slow_server` at the tests' pace (modes: see there), or with
    ``speaks_first`` one dripping an SMTP greeting."""
    return bench_slow_server(DRIP_S, GIVE_UP_S, speaks_first)


def private_address() -> str | None:
    """A private (not loopback) IPv4 address of this machine, or None when it has none."""
    import ipaddress

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # UDP: no packet sent, only a route chosen
        address = ipaddress.ip_address(probe.getsockname()[0])
    except OSError:
        return None
    finally:
        probe.close()
    return str(address) if address.is_private and not address.is_loopback else None


def self_signed(folder: str) -> tuple[str, str]:
    """A certificate for 127.0.0.1 signed by itself, and its key: ``(cert.pem, key.pem)``."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = f"{folder}/cert.pem", f"{folder}/key.pem"
    with open(cert_path, "wb") as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as out:
        out.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


def tls_slow_server(cert: str, key: str) -> AbstractContextManager[SlowServer]:
    """:func:`slow_server` over TLS (``https://127.0.0.1:PORT/MODE``)."""
    return bench_slow_server(DRIP_S, GIVE_UP_S, tls=(cert, key))

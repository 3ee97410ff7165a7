"""Hostile servers on 127.0.0.1 for the outbound policy's tests (:mod:`matcher.outbound`):
the slow-loris of :mod:`tests.servers.slow_server` at the tests' pace, a private address of this
machine, a certificate signed by itself; and the URL forms the policy is fuzzed with."""

from __future__ import annotations

import socket
from contextlib import AbstractContextManager
from typing import Any

from tests.servers.slow_server import SlowServer
from tests.servers.slow_server import slow_server as bench_slow_server

DRIP_S = 0.2
"""Seconds between two bytes of a slow-loris answer."""
GIVE_UP_S = 30.0
"""A slow-loris connection ends by itself after this long (so a failed test cannot hang)."""


def slow_server(speaks_first: bool = False) -> AbstractContextManager[SlowServer]:
    """:func:`tests.servers.slow_server.slow_server` at the tests' pace (modes: see there), or with
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


def odd_urls() -> Any:
    """A hypothesis strategy of URL forms a webhook or a page may give: odd hosts (IPv4 in
    decimal, hex, octal and short forms; bracketed IPv6 with raw or percent-encoded zones
    and IPv4-mapped; IPvFuture; percent-escapes; IDNA; labels over 63 characters; control
    characters and stray brackets), odd ports (0, huge, signs, letters, empty), userinfo
    (with ``@`` and ``:`` of its own), and paths of any text. Generated names end in
    ``.invalid`` (RFC 6761: never a real host), so that no request can leave the machine."""
    from hypothesis import strategies as st

    label = st.text("abcxyz019-_", min_size=0, max_size=70)
    ipv4 = st.sampled_from([
        "127.0.0.2", "127.1", "0x7f.1", "0177.0.0.1", "2130706433", "0", "10.0.0.1",
        "169.254.169.254", "100.100.100.200", "255.255.255.255", "1.2.3.4.5", "256.0.0.1",
    ])  # fmt: skip
    ipv6 = st.sampled_from([
        "[::1]", "[fe80::1%25lo]", "[fe80::1%lo]", "[fe80::1%25]", "[fe80::1%2525lo]",
        "[::ffff:127.0.0.1]", "[::ffff:10.0.0.1]", "[v1.x]", "[::1", "::1]", "[]", "[fd00::1]",
        "[::]", "[fe80::1%25%2f]", "[1:2:3:4:5:6:7:8:9]",
    ])  # fmt: skip
    escaped = st.sampled_from([
        "127.0.0.2%2f", "%31%32%37.0.0.1", "127.0.0.1%00", "localhost%2e", "a%40b", "%zz",
    ])  # fmt: skip
    idna = st.sampled_from(
        ["例子.测试", "xn--fiqs8s.test", "ｌｏｃａｌｈｏｓｔ", "bücher.invalid", "xn--.x"]
    )
    weird = st.text(min_size=0, max_size=20)
    dotted = st.lists(label, min_size=1, max_size=5).map(lambda ls: ".".join([*ls, "invalid"]))
    host = st.one_of(ipv4, ipv6, escaped, idna, dotted, weird, st.just("localhost"))
    port = st.one_of(
        st.just(""),
        st.integers(-5, 100_000).map(lambda n: f":{n}"),
        st.sampled_from([":", ":+80", ":0x50", ":８０", ": 80", ":80:80", ":7213"]),
    )
    userinfo = st.one_of(
        st.just(""), st.sampled_from(["user@", "u:p@", "a@b@", ":@", "%40@", "127.0.0.1@"])
    )
    scheme = st.sampled_from(["http://", "https://", "HTTP://", "http:/", "ftp://", "http:\\\\"])
    path = st.one_of(st.just("/ok"), st.text(max_size=20).map(lambda t: "/" + t))
    return st.builds(lambda *parts: "".join(parts), scheme, userinfo, host, port, path)

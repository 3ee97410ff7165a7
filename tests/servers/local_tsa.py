"""A real RFC 3161 Time-Stamp Authority for the benchmarks and tests: OpenSSL's own
(``openssl ts -reply``) behind a small HTTP server on 127.0.0.1, with a CA of its own made by
``openssl req``.

:func:`make_authority` writes a CA and a TSA certificate signed by it (extended key usage
``timeStamping``, critical, as RFC 3161 2.3 requires) and the ``openssl ts`` configuration;
:class:`TsaServer` answers each ``application/timestamp-query`` POST by running
``openssl ts -reply`` on it. Two authorities made separately have different CAs: a token
of one does not verify against the other's CA.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.servers.http_server import FixtureServer, QuietHandler

POLICY = "1.3.6.1.4.1.99999.1"
"""The test TSA's policy (an OID under an enterprise arc no one is given)."""

_CONFIG = """\
[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = {dir}
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.pem
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = {policy}
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""

_TSA_EXTENSIONS = """\
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, nonRepudiation
extendedKeyUsage = critical, timeStamping
"""


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@dataclass(frozen=True)
class Authority:
    """A TSA's files: its CA's certificate (what a verifier trusts), its own, its key and
    the ``openssl ts`` configuration."""

    dir: Path
    name: str

    @property
    def ca(self) -> Path:
        return self.dir / "ca.pem"

    @property
    def cert(self) -> Path:
        return self.dir / "tsa.pem"

    @property
    def config(self) -> Path:
        return self.dir / "tsa.cnf"

    def reply(self, query: bytes) -> bytes:
        """``openssl ts -reply`` to one DER ``TimeStampReq``: the DER ``TimeStampResp``."""
        with tempfile.TemporaryDirectory(dir=self.dir) as work:
            q, r = Path(work) / "q.tsq", Path(work) / "r.tsr"
            q.write_bytes(query)
            _openssl(
                "ts", "-reply", "-config", str(self.config), "-queryfile", str(q),
                "-out", str(r), cwd=self.dir,
            )  # fmt: skip
            return r.read_bytes()


def make_authority(root: Path, name: str = "fptrack test TSA") -> Authority:
    """A new CA and TSA under ``root`` (made if missing)."""
    root.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "3650", "-subj", f"/CN={name} CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=root,
    )  # fmt: skip
    _openssl(
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tsa.key", "-out", "tsa.csr",
        "-subj", f"/CN={name}", cwd=root,
    )  # fmt: skip
    (root / "tsa.ext").write_text(_TSA_EXTENSIONS)
    _openssl(
        "x509", "-req", "-in", "tsa.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "tsa.pem", "-days", "3650", "-extfile", "tsa.ext", cwd=root,
    )  # fmt: skip
    (root / "serial").write_text("01\n")
    (root / "tsa.cnf").write_text(_CONFIG.format(dir=root, policy=POLICY))
    return Authority(root, name)


class TsaServer(FixtureServer):
    """``authority`` answering RFC 3161 queries over HTTP on 127.0.0.1 (a free port), in a
    thread of this process; ``requests`` counts the queries answered. ``fail_with`` set to
    an HTTP status makes it answer that instead (a TSA in trouble)."""

    def __init__(self, authority: Authority) -> None:
        self.authority = authority
        self.requests = 0
        self.fail_with: int | None = None
        super().__init__()

    @property
    def tsa_url(self) -> str:
        return self.url("/tsa")

    def make_handler(self) -> type[QuietHandler]:
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if server.fail_with is not None:
                    self.send_error(server.fail_with)
                    return
                try:
                    answer = server.authority.reply(body)
                except subprocess.CalledProcessError:
                    self.send_error(400, "not a time-stamp query")
                    return
                server.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/timestamp-reply")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        return Handler

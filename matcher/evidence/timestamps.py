"""Trusted timestamps on the evidence archive (RFC 3161), one token for many WARC files.

A WARC file proves what was fetched; a Time-Stamp Authority's token proves, to anyone who
trusts the TSA rather than fptrack's clock, that it existed by the token's time. Files are
stamped in batches: a batch's **list** is the SHA-256 of each of its WARC files (their names
in the archive), sorted, one lowercase hex digest and a newline each (:func:`batch_list`),
and the TSA stamps the list's SHA-256. The list is a hash tree of depth one: a file is
covered when its digest is a line of a list whose token verifies, which anyone checks
without fptrack (``sha256sum``, ``grep``, ``openssl ts -verify -data LIST -in TOKEN
-CAfile CA``); at 10,000 files (``FPTRACK_TSA_BATCH``) a list is 650 KB, what one file's
proof costs in a bundle.

:func:`ask` sends a ``TimeStampReq`` (SHA-256, a nonce, the TSA's certificate asked for)
by HTTP POST (``application/timestamp-query``, RFC 3161 3.4; under :mod:`matcher.outbound`'s
deadline and size cap, no redirect followed, the TSA's own host and port allowed to be
internal: ``FPTRACK_TSA_URL`` is the operator's choice, as a watched site is) and
checks the answer is a granted token over that list and nonce; :func:`check` verifies a kept
token offline: its status, its signature, the signing certificate's chain to the trusted CA
certificates (``FPTRACK_TSA_CA``) at the token's time, the critical ``timeStamping`` key
usage, and that it covers the list. Parsing and verification are ``rfc3161-client``'s (pyca
``cryptography`` underneath).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import cryptography.x509
from rfc3161_client import (
    HashAlgorithm,
    PKIStatus,
    TimestampRequestBuilder,
    TimeStampResponse,
    VerificationError,
    VerifierBuilder,
    decode_timestamp_response,
)

from matcher import outbound

TIMEOUT_SECONDS = 30.0
"""How long a TSA is given to answer one request."""
MAX_ANSWER = 1 << 20
"""The most of a TSA's answer that is read (a token is a few KB)."""
QUERY_TYPE, REPLY_TYPE = "application/timestamp-query", "application/timestamp-reply"


class StampError(Exception):
    """A TSA did not give a token (unreachable, refused, or an answer that is not one)."""


class NotCovered(Exception):
    """A token, a list or a file does not verify; the message says which check failed."""


@dataclass(frozen=True)
class Token:
    """A granted token: the TSA's whole answer (DER ``TimeStampResp``), its time and serial,
    and (once :func:`check` verified it) the subject of the certificate that signed it."""

    der: bytes
    gen_time: datetime
    serial: int
    signer: str = ""


def batch_list(digests: Iterable[str]) -> bytes:
    """The list a batch's token covers: each distinct SHA-256 hex digest, sorted, a line each.

    >>> batch_list(["bb" * 32, "AA" * 32, "bb" * 32]).decode().split()  # doctest: +ELLIPSIS
    ['aaaa...', 'bbbb...']
    """
    lines = sorted({_hex64(d) for d in digests})
    return "".join(f"{d}\n" for d in lines).encode("ascii")


def list_digests(data: bytes) -> set[str]:
    """The digests a batch list holds; :class:`NotCovered` when it is not one."""
    try:
        return {_hex64(line) for line in data.decode("ascii").splitlines()}
    except (UnicodeDecodeError, ValueError) as exc:
        raise NotCovered(f"not a batch list: {exc}") from None


def list_name(data: bytes) -> str:
    """A batch's name: its list's SHA-256 (what the token's message imprint is)."""
    return hashlib.sha256(data).hexdigest()


def _hex64(digest: str) -> str:
    d = str(digest).strip().lower()
    if len(d) != 64 or any(c not in "0123456789abcdef" for c in d):
        raise ValueError(f"not a SHA-256 hex digest: {digest[:80]!r}")
    return d


def ask(url: str, data: bytes, timeout: float = TIMEOUT_SECONDS) -> Token:
    """A token over ``data`` (a batch list) from the TSA at ``url``; :class:`StampError`
    says why there is none."""
    request = TimestampRequestBuilder(hash_algorithm=HashAlgorithm.SHA256).data(data)
    query = request.nonce(nonce=True).cert_request(cert_request=True).build()
    try:
        policy = outbound.Policy(deadline=timeout, max_bytes=MAX_ANSWER).owning(url)
        answer = outbound.request(
            "POST", url, policy, body=query.as_bytes(), headers={"Content-Type": QUERY_TYPE}
        )
    except outbound.OutboundError as exc:
        raise StampError(f"TSA {url} unreachable: {exc.detail}") from None
    if answer.status != 200:
        raise StampError(f"TSA {url} answered HTTP {answer.status} {answer.reason}")
    body, kind = answer.body, answer.headers.get_content_type()
    if kind != REPLY_TYPE:
        raise StampError(f"TSA {url} answered {kind or 'no type'}, not a time-stamp reply")
    response = _decoded(body, f"TSA {url}'s answer", StampError)
    if response.status not in (PKIStatus.GRANTED, PKIStatus.GRANTED_WITH_MODS):
        said = "; ".join(response.status_string) or f"status {response.status}"
        raise StampError(f"TSA {url} refused the request: {said}")
    info = response.tst_info
    if info.nonce != query.nonce:
        raise StampError(f"TSA {url} answered another request (nonce differs)")
    if info.message_imprint.message != hashlib.sha256(data).digest():
        raise StampError(f"TSA {url}'s token covers other data than the batch list")
    return Token(body, info.gen_time, info.serial_number)


def _decoded(der: bytes, what: str, error: type[Exception]) -> TimeStampResponse:
    try:
        return decode_timestamp_response(der)
    except ValueError as exc:
        raise error(f"{what} is not a time-stamp reply RFC 3161 allows: {exc}") from None


def load_roots(path: str | Path) -> list[cryptography.x509.Certificate]:
    """The CA certificates a token must chain to (PEM, one or more), from ``path``."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise NotCovered(f"cannot read the TSA's CA certificates {path}: {exc}") from None
    return load_roots_pem(data, str(path))


def load_roots_pem(data: bytes, where: str = "the file") -> list[cryptography.x509.Certificate]:
    """:func:`load_roots` of PEM ``data``."""
    try:
        return cryptography.x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        raise NotCovered(f"{where} holds no PEM certificate: {exc}") from None


def check(der: bytes, data: bytes, roots: list[cryptography.x509.Certificate]) -> Token:
    """Verify the token ``der`` (a ``TimeStampResp``) over ``data`` offline, against the
    CA certificates ``roots``: the token's time and serial, or :class:`NotCovered` with the
    check that failed."""
    response = _decoded(der, "the token", NotCovered)
    if not roots:
        raise NotCovered("no CA certificate to check the token against")
    builder = VerifierBuilder()
    for root in roots:
        builder = builder.add_root_certificate(root)
    try:
        builder.build().verify_message(response, data)
    except VerificationError as exc:
        text = str(exc)
        if "Mismatch between messages" in text:
            raise NotCovered("the token covers other data than this batch list") from None
        if "certificate verify error" in text or "verifying certificates" in text:
            raise NotCovered(
                "the token's signature does not verify against the TSA's CA certificate"
                f" (a changed token, or one from another TSA): {text.split(': ', 1)[-1][:160]}"
            ) from None
        raise NotCovered(f"the token does not verify: {text}") from None
    info = response.tst_info
    return Token(der, info.gen_time, info.serial_number, _signer(response))


def _signer(response: TimeStampResponse) -> str:
    """The subject of the certificate that signed ``response`` (RFC 4514), when the token
    carries it ("" otherwise)."""
    serials = {signer.serial_number for signer in response.signed_data.signer_infos}
    for der in response.signed_data.certificates:
        try:
            cert = cryptography.x509.load_der_x509_certificate(der)
        except ValueError:
            continue
        if cert.serial_number in serials:
            return cert.subject.rfc4514_string()
    return ""

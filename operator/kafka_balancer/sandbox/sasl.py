"""SASL authentication on emulated brokers: PLAIN (KIP-43) and SCRAM-SHA-256/512 (KIP-84, RFC 5802).

Enabled with ``EmulatorOptions(sasl_users={"user": "password"})``. Then, as on a broker's
SASL listener, a connection may send only ApiVersions, SaslHandshake (v1) and SaslAuthenticate
until it has authenticated; anything else closes it. SCRAM credentials are salted and hashed once
at start, as Kafka stores them, so the password itself is never compared on the SCRAM path.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

from kafka_balancer.kafka.errors import error_code
from kafka_balancer.sandbox.protocol import Call
from kafka_balancer.sandbox.server import Session

log = logging.getLogger(__name__)

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_HASHES: dict[str, Callable[..., Any]] = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
SCRAM_ITERATIONS = 4096  # Kafka's minimum for SCRAM credentials


class AuthenticationFailedError(Exception):
    pass


@dataclass(frozen=True)
class _ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def _hmac(digest: Callable[..., Any], key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, digestmod=digest).digest()


def _scram_credential(mechanism: str, password: str) -> _ScramCredential:
    digest = _HASHES[mechanism]
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac(digest().name, password.encode(), salt, SCRAM_ITERATIONS)
    client_key = _hmac(digest, salted, b"Client Key")
    return _ScramCredential(salt, SCRAM_ITERATIONS, digest(client_key).digest(), _hmac(digest, salted, b"Server Key"))


def _attributes(message: bytes) -> dict[str, str]:
    out = {}
    for item in message.decode("utf-8").split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise AuthenticationFailedError(f"malformed SCRAM message attribute {item!r}")
        out[key] = value
    return out


def _scram_name(value: str) -> str:
    return value.replace("=2C", ",").replace("=3D", "=")


class _Plain:
    """RFC 4616: one client message ``authzid NUL user NUL password``."""

    def __init__(self, users: Mapping[str, str]):
        self._users = users
        self.user: str | None = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationFailedError("malformed PLAIN message")
        user, password = parts[1].decode("utf-8", "replace"), parts[2]
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password):
            raise AuthenticationFailedError(f"Authentication failed: Invalid username or password (user {user!r})")
        self.user = user
        return b"", True


class _Scram:
    """RFC 5802 server side: client-first -> server-first, client-final -> server-final."""

    def __init__(self, mechanism: str, credentials: Mapping[str, _ScramCredential]):
        self._digest = _HASHES[mechanism]
        self._credentials = credentials
        self._first_bare = b""
        self._server_first = b""
        self._nonce = ""
        self._credential: _ScramCredential | None = None
        self.user: str | None = None

    def step(self, token: bytes) -> tuple[bytes, bool]:
        if self._credential is None:
            return self._first(token), False
        return self._final(token), True

    def _first(self, token: bytes) -> bytes:
        # gs2 header "n,," (no channel binding, no authzid) then the bare message.
        header, _, rest = token.partition(b",")
        _authzid, _, bare = rest.partition(b",")
        if header not in (b"n", b"y") or not bare:
            raise AuthenticationFailedError("malformed SCRAM client-first message")
        attrs = _attributes(bare)
        user = _scram_name(attrs.get("n", ""))
        credential = self._credentials.get(user)
        if credential is None or "r" not in attrs:
            raise AuthenticationFailedError(f"Authentication failed due to invalid credentials (user {user!r})")
        self.user, self._credential, self._first_bare = user, credential, bare
        self._nonce = attrs["r"] + secrets.token_urlsafe(18)
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}".encode()
        return self._server_first

    def _final(self, token: bytes) -> bytes:
        assert self._credential is not None
        without_proof, sep, proof_part = token.rpartition(b",p=")
        attrs = _attributes(without_proof)
        if not sep or attrs.get("r") != self._nonce:
            raise AuthenticationFailedError("SCRAM client-final message has a wrong nonce or no proof")
        auth_message = self._first_bare + b"," + self._server_first + b"," + without_proof
        signature = _hmac(self._digest, self._credential.stored_key, auth_message)
        proof = base64.b64decode(proof_part)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=False))
        if len(proof) != len(signature) or not hmac.compare_digest(
            self._digest(client_key).digest(), self._credential.stored_key
        ):
            raise AuthenticationFailedError(f"Authentication failed due to invalid credentials (user {self.user!r})")
        server_signature = _hmac(self._digest, self._credential.server_key, auth_message)
        return b"v=" + base64.b64encode(server_signature)


class SaslServer:
    """The SaslHandshake and SaslAuthenticate handlers for a set of users and mechanisms."""

    def __init__(self, users: Mapping[str, str], mechanisms: tuple[str, ...] = MECHANISMS):
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown or not mechanisms:
            raise ValueError(f"sasl: mechanisms must be among {', '.join(MECHANISMS)}, got {list(mechanisms)!r}")
        if not users:
            raise ValueError("sasl: at least one user is needed, got none")
        self.mechanisms = tuple(mechanisms)
        self._users = dict(users)
        self._scram = {
            m: {u: _scram_credential(m, p) for u, p in self._users.items()} for m in mechanisms if m in _HASHES
        }

    def handshake(self, call: Call) -> Any:
        mechanism = call.body.mechanism
        session = call.session
        err = 0
        if session.authenticated:
            err = error_code("ILLEGAL_SASL_STATE")
        elif mechanism not in self.mechanisms:
            err = error_code("UNSUPPORTED_SASL_MECHANISM")
        else:
            session.sasl = _Plain(self._users) if mechanism == "PLAIN" else _Scram(mechanism, self._scram[mechanism])
        return SaslHandshakeResponse(version=call.version, error_code=err, mechanisms=list(self.mechanisms))

    def authenticate(self, call: Call) -> Any:
        session: Session = call.session
        exchange = session.sasl
        err, message, reply = 0, None, b""
        if session.authenticated or not isinstance(exchange, _Plain | _Scram):
            err, message = error_code("ILLEGAL_SASL_STATE"), "SaslAuthenticate before SaslHandshake"
        else:
            try:
                reply, done = exchange.step(bytes(call.body.auth_bytes))
            except (AuthenticationFailedError, ValueError, UnicodeDecodeError) as failure:
                err, message = error_code("SASL_AUTHENTICATION_FAILED"), str(failure)
                session.sasl = None
                session.close_after_reply = True
                log.info("broker %d: SASL authentication failed: %s", call.broker_id, failure)
            else:
                if done:
                    session.authenticated = True
                    session.sasl = None
                    log.debug("broker %d: authenticated %s", call.broker_id, exchange.user)
        return SaslAuthenticateResponse(
            version=call.version, error_code=err, error_message=message, auth_bytes=reply, session_lifetime_ms=0
        )

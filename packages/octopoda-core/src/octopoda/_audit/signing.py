"""Signed chain heads (Ed25519), with the ``[sign]`` extra (``cryptography``).

A signed head binds an agent's chain position to a key the user holds. What is signed::

    message = b"octopoda-head-v1\\n" + canonical_json({"agent": agent, "hash": hash, "seq": seq})

``signature`` and ``public_key`` (32 raw bytes) are stored and exported as lowercase hex.
Whoever rewrites or truncates the chain below a signed head cannot produce a new valid
signature without the private key, so ``verify(public_key=...)`` detects it.
"""

from typing import Any, Final, NamedTuple

from .._canonical import canonical_json
from .._errors import ConfigError, InvalidInput

__all__ = ["SignedHead", "head_message", "public_key_hex", "sign", "signature_valid"]

_DOMAIN: Final = b"octopoda-head-v1\n"
_INSTALL: Final = "pip install 'octopoda-core[sign]'"


class SignedHead(NamedTuple):
    """A chain head signed with Ed25519."""

    agent: str
    seq: int
    hash: str
    public_key: str
    signature: str
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()


def head_message(agent: str, seq: int, hash_hex: str) -> bytes:
    """The exact bytes a head signature covers."""
    return _DOMAIN + canonical_json({"agent": agent, "hash": hash_hex, "seq": seq})


def _ed25519() -> Any:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise ConfigError(f"signed audit heads need the 'sign' extra: {_INSTALL}") from None
    return ed25519


def _private_key(key: Any) -> Any:
    ed25519 = _ed25519()
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key
    if isinstance(key, (bytes, bytearray)) and len(key) == 32:
        return ed25519.Ed25519PrivateKey.from_private_bytes(bytes(key))
    raise InvalidInput(
        "a signing key is an Ed25519PrivateKey or its 32 raw private bytes;"
        " make one with cryptography's Ed25519PrivateKey.generate()"
    )


def public_key_hex(key: Any) -> str:
    """The hex of the 32 raw public-key bytes of a private key, public key, bytes or hex."""
    ed25519 = _ed25519()
    from cryptography.hazmat.primitives import serialization

    raw = serialization.Encoding.Raw
    if isinstance(key, ed25519.Ed25519PrivateKey):
        key = key.public_key()
    if isinstance(key, ed25519.Ed25519PublicKey):
        return str(key.public_bytes(raw, serialization.PublicFormat.Raw).hex())
    if isinstance(key, (bytes, bytearray)) and len(key) == 32:
        return bytes(key).hex()
    if isinstance(key, str) and len(key) == 64:
        try:
            return bytes.fromhex(key).hex()
        except ValueError:
            pass
    raise InvalidInput("a public key is an Ed25519PublicKey, its 32 raw bytes, or their hex")


def sign(key: Any, agent: str, seq: int, hash_hex: str, created_at: float) -> SignedHead:
    """Sign a head with an Ed25519 private key."""
    private = _private_key(key)
    signature = private.sign(head_message(agent, seq, hash_hex)).hex()
    return SignedHead(agent, seq, hash_hex, public_key_hex(private), signature, created_at)


def signature_valid(head: SignedHead) -> bool:
    """True when ``head.signature`` is a valid signature of the head by ``head.public_key``."""
    ed25519 = _ed25519()
    from cryptography.exceptions import InvalidSignature

    try:
        public = ed25519.Ed25519PublicKey.from_public_bytes(bytes.fromhex(head.public_key))
        public.verify(bytes.fromhex(head.signature), head_message(head.agent, head.seq, head.hash))
    except (InvalidSignature, ValueError):
        return False
    return True

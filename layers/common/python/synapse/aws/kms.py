"""KMS envelopes: users' provider API keys, and webhook signing secrets (their own key, which only the
delivery function may decrypt). The encryption context binds a ciphertext to its owner."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from botocore.exceptions import BotoCoreError, ClientError

from synapse.aws import clients as aws
from synapse.core.config import settings
from synapse.core.errors import UpstreamUnavailable
from synapse.core.state import per_container

if TYPE_CHECKING:
    from mypy_boto3_kms import KMSClient


class DecryptionRefused(Exception):
    """The ciphertext does not decrypt for this user and provider (copied, or tampered with)."""


@per_container
def client() -> KMSClient:
    return cast("KMSClient", aws.client("kms"))


def _context(user_id: str, provider: str) -> dict[str, str]:
    return {"userId": user_id, "provider": provider}


def encrypt(user_id: str, provider: str, plaintext: str) -> bytes:
    return _encrypt(settings().kms_key_id, _context(user_id, provider), plaintext, "provider keys")


def decrypt(user_id: str, provider: str, ciphertext: bytes) -> str:
    return _decrypt(_context(user_id, provider), ciphertext)


def _webhook_context(user_id: str, webhook_id: str) -> dict[str, str]:
    return {"userId": user_id, "webhook": webhook_id}


def encrypt_webhook_secret(user_id: str, webhook_id: str, secret: str) -> bytes:
    key_id = settings().webhook_kms_key_id
    return _encrypt(key_id, _webhook_context(user_id, webhook_id), secret, "webhook secrets")


def decrypt_webhook_secret(user_id: str, webhook_id: str, ciphertext: bytes) -> str:
    return _decrypt(_webhook_context(user_id, webhook_id), ciphertext)


def _encrypt(key_id: str | None, context: dict[str, str], plaintext: str, what: str) -> bytes:
    if not key_id:
        raise UpstreamUnavailable(f"No encryption key is configured for {what}.", retry_after=60)
    try:
        answer = client().encrypt(KeyId=key_id, Plaintext=plaintext.encode(), EncryptionContext=context)
    except (ClientError, BotoCoreError) as exc:
        raise UpstreamUnavailable(
            "The key service is unavailable; try again shortly.", retry_after=5
        ) from exc
    return bytes(answer["CiphertextBlob"])


def _decrypt(context: dict[str, str], ciphertext: bytes) -> str:
    try:
        answer = client().decrypt(CiphertextBlob=ciphertext, EncryptionContext=context)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("InvalidCiphertextException", "IncorrectKeyException", "AccessDeniedException"):
            raise DecryptionRefused(code) from exc
        raise UpstreamUnavailable(
            "The key service is unavailable; try again shortly.", retry_after=5
        ) from exc
    except BotoCoreError as exc:
        raise UpstreamUnavailable(
            "The key service is unavailable; try again shortly.", retry_after=5
        ) from exc
    return bytes(answer["Plaintext"]).decode()

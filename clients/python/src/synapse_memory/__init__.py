"""synapse-memory: the Python client of Synapse, long-term memory for LLM agents.

```python
from synapse_memory import Synapse

with Synapse("http://127.0.0.1:3000", token="gts_live_...") as mem:
    turn = mem.context("where do I live?", session_id="s1")
    ...  # call your LLM with turn.prompt
    mem.ingest("s1", [{"role": "user", "content": "I moved to Berlin"}])
```
"""

from synapse_memory._async import AsyncSynapse
from synapse_memory._core import UNSET, RetryPolicy
from synapse_memory._sync import Synapse
from synapse_memory.errors import (
    Conflict,
    Forbidden,
    Gone,
    InternalError,
    InvalidJSON,
    NotFound,
    PayloadTooLarge,
    QuotaExceeded,
    RateLimited,
    SynapseConnectionError,
    SynapseError,
    SynapseResponseError,
    SynapseTimeout,
    Unauthorized,
    UpstreamUnavailable,
    ValidationError,
)
from synapse_memory.models import (
    ApiKey,
    ApiKeyCreated,
    Consolidated,
    ContextResult,
    DeliveryAttempt,
    Export,
    Health,
    IdentityResult,
    IngestResult,
    Memory,
    MemoryChange,
    MemoryChanges,
    MemoryPage,
    MemoryVersion,
    Message,
    Mind,
    MindCreated,
    Proposal,
    ProposalPage,
    Proposed,
    Provider,
    RecalledMemory,
    RecallResult,
    RecentMessage,
    ScoredMemory,
    SummaryChunk,
    SummaryResult,
    Webhook,
    WebhookCreated,
)

__version__ = "0.1.0"

__all__ = [
    "UNSET",
    "ApiKey",
    "ApiKeyCreated",
    "AsyncSynapse",
    "Conflict",
    "Consolidated",
    "ContextResult",
    "DeliveryAttempt",
    "Export",
    "Forbidden",
    "Gone",
    "Health",
    "IdentityResult",
    "IngestResult",
    "InternalError",
    "InvalidJSON",
    "Memory",
    "MemoryChange",
    "MemoryChanges",
    "MemoryPage",
    "MemoryVersion",
    "Message",
    "Mind",
    "MindCreated",
    "NotFound",
    "PayloadTooLarge",
    "Proposal",
    "ProposalPage",
    "Proposed",
    "Provider",
    "QuotaExceeded",
    "RateLimited",
    "RecallResult",
    "RecalledMemory",
    "RecentMessage",
    "RetryPolicy",
    "ScoredMemory",
    "SummaryChunk",
    "SummaryResult",
    "Synapse",
    "SynapseConnectionError",
    "SynapseError",
    "SynapseResponseError",
    "SynapseTimeout",
    "Unauthorized",
    "UpstreamUnavailable",
    "ValidationError",
    "Webhook",
    "WebhookCreated",
    "__version__",
]

"""Typed models, one module per domain: `base` (enums, patterns and bounds, field types, `Model` and
`Body`, scopes, the error envelope, time helpers), `memory`, `minds`, `account` and `chat`.

Import from the domain's module (`from synapse.core.models.memory import Memory`): this file imports
nothing, so a function builds only the pydantic classes of the domains it touches (a class costs about
half a millisecond to create).
"""

"""Minds: the memory spaces of a user. Every route acts in one mind; the default one unless named."""

from __future__ import annotations

from synapse import store
from synapse.principal import Principal


def space_of(who: Principal) -> store.Space:
    """The mind a caller acts in."""
    return store.Space(who.user_id)

"""Typed models: the memory object, its enums, and request/response bodies."""

from __future__ import annotations

from enum import StrEnum


class Category(StrEnum):
    identity = "identity"
    preference = "preference"
    fact = "fact"
    project = "project"
    skill = "skill"
    mistake = "mistake"
    context = "context"
    note = "note"


class Priority(StrEnum):
    low = "low"
    normal = "normal"
    high = "high"
    critical = "critical"


PRIORITY_RANK = {Priority.low: 0, Priority.normal: 1, Priority.high: 2, Priority.critical: 3}


class Source(StrEnum):
    user = "user"
    agent = "agent"


class Role(StrEnum):
    user = "user"
    assistant = "assistant"
    system = "system"
    tool = "tool"

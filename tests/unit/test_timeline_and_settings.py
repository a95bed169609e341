"""Time on the data without AWS: the timeline index's keys, the settings body, and valid_at's dates."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from pydantic import ValidationError

from synapse.core.models.base import iso
from synapse.core.models.minds import MindIn, MindPatch
from synapse.services.memory.memories import valid_at
from synapse.store.account.minds import Mind, MindRecord
from synapse.store.keys import Space, timeline_id, timeline_pk, timeline_sk

ID_A = "0a7e4f2b-9c11-5b7a-9c1d-6f1c0c2e8f1e"
ID_B = "ff7e4f2b-9c11-5b7a-9c1d-6f1c0c2e8f1e"


def mind_in(timezone: str) -> Mind:
    record = MindRecord("m_aaaaaaaaaaaa", "trip", None, datetime(2026, 1, 1, tzinfo=UTC), timezone=timezone)
    return Mind(Space("alice", "m_aaaaaaaaaaaa"), _record=record, _read=True)


def test_timeline_places_sort_as_time_then_id_and_a_bare_moment_bounds_them() -> None:
    # Given places of memories at three moments (two at the same moment)
    early = timeline_sk(iso(datetime(2025, 12, 31, 23, 59, 59, tzinfo=UTC)), ID_B)
    tie_a = timeline_sk(iso(datetime(2026, 1, 1, tzinfo=UTC)), ID_A)
    tie_b = timeline_sk(iso(datetime(2026, 1, 1, tzinfo=UTC)), ID_B)
    late = timeline_sk(iso(datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)), ID_A)
    # When they are sorted as strings (as DynamoDB sorts a range key)
    ordered = sorted([late, tie_b, early, tie_a])
    # Then they are in time order, ties by id
    assert ordered == [early, tie_a, tie_b, late]
    # And the bare moment of 2026-01-01 sorts after everything earlier and before everything at it:
    # BETWEEN from AND to is [from, to)
    bound = iso(datetime(2026, 1, 1, tzinfo=UTC))
    assert early < bound < tie_a
    # And each place names its memory; anything else names none
    assert [timeline_id(p) for p in ordered] == [ID_B, ID_A, ID_B, ID_A]
    for bad in ("", bound, "#" + ID_A, f"{bound}#not an id", f"{bound}#{ID_A}:x"):
        assert timeline_id(bad) == "", bad


def test_timeline_partitions_are_per_mind() -> None:
    assert timeline_pk(Space("alice")) == "tl:alice:default"
    assert timeline_pk(Space("alice", "m_aaaaaaaaaaaa")) == "tl:alice:m_aaaaaaaaaaaa"
    assert timeline_pk(Space("alice")) != timeline_pk(Space("alice", "m_aaaaaaaaaaaa"))


@pytest.mark.parametrize(
    ("timezone", "day", "expected"),
    [
        ("UTC", date(2026, 12, 3), "2026-12-03T00:00:00Z"),
        ("Asia/Bangkok", date(2026, 12, 3), "2026-12-02T17:00:00Z"),
        # the day summer time starts in Berlin: midnight is still winter time (UTC+1)
        ("Europe/Berlin", date(2026, 3, 29), "2026-03-28T23:00:00Z"),
        ("America/Los_Angeles", date(2026, 1, 1), "2026-01-01T08:00:00Z"),
        # a year boundary the other way round
        ("Pacific/Auckland", date(2027, 1, 1), "2026-12-31T11:00:00Z"),
    ],
)
def test_a_date_alone_is_midnight_in_the_minds_timezone(timezone: str, day: date, expected: str) -> None:
    # Given a mind in a timezone
    mind = mind_in(timezone)
    # When a date alone is placed in time, then it is that day's 00:00 there, in UTC
    assert iso(valid_at(mind, day)) == expected  # type: ignore[arg-type]


def test_a_moment_is_kept_and_none_stays_none_without_reading_the_mind() -> None:
    # Given a mind whose record was never read (reading it here would need AWS)
    mind = Mind(Space("alice", "m_aaaaaaaaaaaa"))
    moment = datetime(2026, 12, 3, 2, 30, tzinfo=UTC)
    # When a moment or nothing is given, then it is as given, and the mind is not read
    assert valid_at(mind, moment) == moment
    assert valid_at(mind, None) is None


@pytest.mark.parametrize(
    "body",
    [
        {"timezone": "Mars/Olympus"},
        {"timezone": ""},
        {"timezone": "/etc/localtime"},
        {"timezone": "Asia/../UTC"},
        {"timezone": "x" * 65},
        {"review_agent_changes": "false"},
        {"review_agent_changes": 0},
        {"name": "   "},
    ],
)
def test_bad_settings_are_refused_by_the_body_models(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        MindPatch.model_validate(body)
    with pytest.raises(ValidationError):
        MindIn.model_validate({"name": "a mind", **body} if "name" not in body else body)


def test_settings_bodies_keep_what_was_sent() -> None:
    # When a patch sends a timezone and a null description
    patch = MindPatch.model_validate({"timezone": "Asia/Bangkok", "description": None})
    # Then both are in what was sent (null clears), and nothing else is
    assert patch.model_fields_set == {"timezone", "description"}
    assert (patch.timezone, patch.description) == ("Asia/Bangkok", None)

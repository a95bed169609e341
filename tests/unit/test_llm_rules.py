"""The offline side of synapse.ai.llm: the transient filter (`transient`), rule extraction (`facts`),
the extractive summary (`summaries`)."""

from __future__ import annotations

import pytest

from synapse.ai.facts import RuleExtractor
from synapse.ai.summaries import ExtractiveSummarizer
from synapse.ai.transient import is_transient
from synapse.core.models.base import Category, Priority, Role
from synapse.core.models.chat import ChatMessage as Message
from synapse.core.models.chat import ExistingKey, ExtractedNugget


def user(text: str) -> Message:
    return Message(role=Role.user, content=text)


def extract(*texts: str) -> list[ExtractedNugget]:
    return RuleExtractor().extract([user(t) for t in texts], [])


def slots(*texts: str) -> dict[tuple[str, str], str]:
    return {(n.category.value, n.key): n.content for n in extract(*texts)}


# --- the transient filter ------------------------------------------------------------------------------

TRANSIENT = [
    "ขอบคุณ", "ขอบคุณครับ", "ขอบคุณค่ะ", "ขอบคุณมากๆครับ", "โอเค", "โอเคครับ", "โอเคค่ะ ขอบคุณนะคะ",
    "โอเค ขอบคุณครับ", "ok", "OK", "okay", "Okay!", "555", "5555+", "ครับ", "ค่ะ", "คับ", "จ้า", "อืม",
    "อืมมม", "สวัสดี", "สวัสดีครับ", "thanks", "Thanks a lot!!", "thank you", "thx", "lol", "haha",
    "hahaha", "hi", "hello", "Hi there", "👍", "🙏😂", "👍🏻", "ok thanks!", "ok 👍", "...", "?", "", "   ",
    "got it, thanks", "I'm fine, thanks", "you're welcome",
]  # fmt: skip

NOT_TRANSIENT = [
    "thanks, and my name is Ann", "ขอบคุณครับ ผมชื่อสมชาย", "I live in Paris", "ไม่ชอบกาแฟ",
    "ok but what about tomorrow?", "hi, can you help me with Python?", "hello world program", "high",
    "ok 123", "โอเค พรุ่งนี้ประชุมสิบโมง", "555 ผมลืมรหัสผ่าน", "thanks! the deadline is Friday",
]  # fmt: skip


@pytest.mark.parametrize("text", TRANSIENT)
def test_chatter_is_transient(text: str) -> None:
    # Given a message of acknowledgements, thanks, laughter, greetings, particles or emoji only
    # When it is checked, Then it is transient
    assert is_transient(text)


@pytest.mark.parametrize("text", NOT_TRANSIENT)
def test_anything_with_content_is_not_transient(text: str) -> None:
    # Given a message with real content, even next to thanks or laughter
    # When it is checked, Then it is not transient
    assert not is_transient(text)


# --- rule extraction: English -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slot", "content"),
    [
        ("My name is Ann", ("identity", "user_name"), "Name: Ann"),
        ("my name's Ann Lee.", ("identity", "user_name"), "Name: Ann Lee"),
        ("Hi, I'm Ann", ("identity", "user_name"), "Name: Ann"),
        ("Call me Annie", ("identity", "user_nickname"), "Goes by Annie"),
        ("I live in Chiang Mai with my cat", ("identity", "user_location"), "Lives in Chiang Mai"),
        ("I'm based in Berlin", ("identity", "user_location"), "Lives in Berlin"),
        ("I work at Agoda", ("identity", "user_workplace"), "Works at Agoda"),
        ("I'm a software engineer", ("identity", "user_job"), "Job: software engineer"),
        ("I work as a nurse", ("identity", "user_job"), "Job: nurse"),
        ("I speak Thai and English", ("identity", "user_languages"), "Speaks Thai and English"),
        ("I like coffee", ("preference", "pref_coffee"), "Likes coffee"),
        ("I really love jazz", ("preference", "pref_jazz"), "Loves jazz"),
        ("I don't like spicy food", ("preference", "pref_spicy_food"), "Doesn't like spicy food"),
        ("I hate meetings", ("preference", "pref_meetings"), "Doesn't like meetings"),
        ("I prefer dark theme", ("preference", "theme"), "Prefers dark theme"),
        ("I mainly use VS Code", ("preference", "editor"), "Uses VS Code"),
        ("Please answer in Thai", ("preference", "response_language"), "Wants replies in Thai"),
        ("My favorite food is pad thai", ("preference", "favorite_food"), "Favourite food: pad thai"),
    ],
)
def test_english_facts_are_extracted(text: str, slot: tuple[str, str], content: str) -> None:
    # Given a user message stating one fact, When rules extract it
    found = slots(text)
    # Then the fact fills its stable slot, worded in English
    assert found == {slot: content}


def test_several_facts_in_one_english_message() -> None:
    # Given one message with a name, a city, a workplace and a job
    found = slots("My name is Ann, I live in Paris and I work at Google as a data scientist")
    # When extracted, Then each fact has its own nugget
    assert found == {
        ("identity", "user_name"): "Name: Ann",
        ("identity", "user_location"): "Lives in Paris",
        ("identity", "user_workplace"): "Works at Google",
        ("identity", "user_job"): "Job: data scientist",
    }


def test_im_adjectives_are_not_names() -> None:
    # Given "I'm" followed by something that is not a name, When extracted
    # Then no name nugget is made
    for text in ("I'm tired of this bug", "I'm Thai", "I'm happy with the result"):
        assert ("identity", "user_name") not in slots(text), text


# --- rule extraction: Thai ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slot", "content"),
    [
        ("ผมชื่อสมชายครับ", ("identity", "user_name"), "ชื่อ สมชาย"),
        ("ฉันชื่อ มานี ค่ะ", ("identity", "user_name"), "ชื่อ มานี"),
        ("ชื่อ สมชาย ครับ", ("identity", "user_name"), "ชื่อ สมชาย"),
        ("ชื่อเล่นชื่อต้นครับ", ("identity", "user_nickname"), "ชื่อเล่น ต้น"),
        ("ผมอยู่เชียงใหม่", ("identity", "user_location"), "อยู่ เชียงใหม่"),
        ("อาศัยอยู่ที่ลำปางค่ะ", ("identity", "user_location"), "อยู่ ลำปาง"),
        ("ผมทำงานที่ Agoda ครับ", ("identity", "user_workplace"), "ทำงานที่ Agoda"),
        ("ผมเป็นโปรแกรมเมอร์", ("identity", "user_job"), "อาชีพ โปรแกรมเมอร์"),
        ("อาชีพ ครู", ("identity", "user_job"), "อาชีพ ครู"),
        ("ชอบ Dark theme ครับ", ("preference", "theme"), "ชอบ Dark theme"),
        ("ใช้ MCP เป็นหลัก", ("preference", "main_tool"), "ใช้ MCP เป็นหลัก"),
        ("พูดภาษาไทยและอังกฤษได้", ("identity", "user_languages"), "พูดภาษาไทยและอังกฤษ"),
    ],
)
def test_thai_facts_are_extracted_and_stay_thai(text: str, slot: tuple[str, str], content: str) -> None:
    # Given a Thai user message stating one fact, When rules extract it
    found = slots(text)
    # Then the fact fills its stable slot, worded in Thai
    assert found == {slot: content}


def test_thai_likes_and_dislikes_get_stable_hashed_keys() -> None:
    # Given Thai likes and dislikes
    liked = extract("ผมชอบกาแฟมาก")
    disliked = extract("ไม่ชอบอาหารเผ็ด")
    changed = extract("ตอนนี้ไม่ชอบกาแฟแล้ว")

    # Then each is a preference, content in Thai, with an ASCII key that is the same for the same thing
    (like,) = liked
    assert (like.category, like.content, like.tags) == (
        Category.preference,
        "ชอบ กาแฟ",
        ["preference", "likes"],
    )
    (dislike,) = disliked
    assert dislike.content == "ไม่ชอบ อาหารเผ็ด"
    assert like.key.startswith("pref_") and like.key.isascii()
    assert like.key == extract("ชอบกาแฟครับ")[0].key
    # and a changed mind about the same thing updates the same key
    assert changed[0].key == like.key
    assert changed[0].content.startswith("ไม่ชอบ กาแฟ")


def test_several_facts_in_one_thai_message_after_thanks() -> None:
    # Given thanks followed by a name, a city and a workplace, separated by spaces
    found = slots("ขอบคุณครับ ผมชื่อสมชาย อยู่เชียงใหม่ ทำงานที่ SCB")
    # When extracted, Then each is its own nugget, and the thanks make no context nugget
    assert found == {
        ("identity", "user_name"): "ชื่อ สมชาย",
        ("identity", "user_location"): "อยู่ เชียงใหม่",
        ("identity", "user_workplace"): "ทำงานที่ SCB",
    }


# --- stable keys: a changed fact updates its nugget -----------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("My name is Ann", "Actually, my name is Anna"),
        ("I live in Bangkok", "I moved to Chiang Mai"),
        ("ผมอยู่กรุงเทพ", "ตอนนี้ผมย้ายไปอยู่ภูเก็ตแล้ว"),
        ("ผมชื่อสมชาย", "ผมชื่อสมศักดิ์ครับ"),
        ("I work at Agoda", "I now work for Grab"),
        ("I prefer dark theme", "I now prefer light theme"),
        ("I like dark mode", "ชอบ light theme มากกว่า"),
        ("I use vim mostly", "I switched to VS Code"),
        ("I like coffee", "I don't like coffee anymore"),
    ],
)
def test_a_changed_fact_maps_to_the_same_key(before: str, after: str) -> None:
    # Given a fact and, later, its change
    (old,) = extract(before)
    (new,) = extract(after)
    # When both are extracted, Then they share (category, key) and the contents differ
    assert (new.category, new.key) == (old.category, old.key)
    assert new.content != old.content


def test_the_later_statement_wins_within_one_batch() -> None:
    # Given two messages of one batch naming two cities, When extracted
    found = slots("I live in Bangkok", "I live in Chiang Mai now")
    # Then one location nugget holds the later city
    assert found == {("identity", "user_location"): "Lives in Chiang Mai"}


# --- the context fallback -------------------------------------------------------------------------


def test_other_content_becomes_a_context_nugget_so_nothing_is_lost() -> None:
    # Given user messages that fit no rule, in English and Thai
    nuggets = extract("I'm planning a trip to Japan next month", "พรุ่งนี้ต้องไปหาหมอฟัน")

    # When extracted, Then each becomes a low-priority context nugget with its exact text
    assert [(n.category, n.content, n.priority, n.tags, n.is_identity) for n in nuggets] == [
        (Category.context, "I'm planning a trip to Japan next month", Priority.low, ["context"], False),
        (Category.context, "พรุ่งนี้ต้องไปหาหมอฟัน", Priority.low, ["context"], False),
    ]
    assert all(n.key.startswith("context_") and 0.5 <= n.confidence <= 0.7 for n in nuggets)
    # and the same text always gets the same key (whitespace and case aside)
    assert extract("I'm planning a  trip to JAPAN next month")[0].key == nuggets[0].key


def test_a_fact_with_extra_content_keeps_the_rest_as_context() -> None:
    # Given a message with a name and unrelated content
    nuggets = extract("My name is Ann. I have a dentist appointment on Friday at 10.")
    # When extracted, Then the name is a nugget and the message is kept as context too
    assert {n.category for n in nuggets} == {Category.identity, Category.context}


def test_only_user_messages_are_read_and_transient_ones_are_skipped() -> None:
    # Given an assistant saying facts, a system message, and user chatter
    messages = [
        Message(role=Role.assistant, content="My name is Synapse and I live in the cloud"),
        Message(role=Role.system, content="You are a helpful assistant"),
        Message(role=Role.tool, content="I like JSON"),
        user("ขอบคุณครับ"),
        user("ok 👍"),
    ]
    # When extracted, Then nothing comes out
    assert RuleExtractor().extract(messages, []) == []


def test_identity_and_preference_nuggets_are_marked_for_the_identity_line() -> None:
    # Given a name and a preference, When extracted
    nuggets = extract("My name is Ann", "I prefer dark theme", "We shipped the release today")
    # Then identity and preference are marked, context is not; tags are simple
    marks = {n.key: (n.is_identity, n.tags) for n in nuggets}
    assert marks["user_name"] == (True, ["name"])
    assert marks["theme"] == (True, ["preference", "theme"])
    assert [v for k, v in marks.items() if k.startswith("context_")] == [(False, ["context"])]


def test_existing_keys_are_accepted_and_keys_are_valid() -> None:
    # Given existing keys, When a mixed conversation is extracted
    existing = [ExistingKey(category=Category.identity, key="user_name", content="Name: Ann")]
    nuggets = RuleExtractor().extract(
        [user(t) for t in ("ผมชื่อสมชาย", "ชอบกาแฟ", "I like C++ and Rust", "เมื่อวานไปเดินเล่นที่สวน")], existing
    )
    # Then every key is a valid snake_case key (the model validates it, so construction proves it)
    assert len(nuggets) == 4
    assert all(n.key.isascii() and n.key == n.key.lower() for n in nuggets)


# --- the extractive summary -----------------------------------------------------------------------


def test_extractive_summary_is_bounded_and_keeps_informative_sentences() -> None:
    # Given a long English conversation with chatter
    messages = [user("hi"), Message(role=Role.assistant, content="Hello! How can I help?")]
    for i in range(30):
        messages.append(user(f"Step {i}: we migrated service number {i} to the new cluster in Frankfurt."))
        messages.append(Message(role=Role.assistant, content="ok"))
    messages.append(user("My name is Ann and the launch date is March 3."))

    # When summarised
    summary = ExtractiveSummarizer().summarize(messages)

    # Then it is at most 600 characters, verbatim sentences, chatter left out, the key fact kept
    assert 0 < len(summary) <= 600
    assert "My name is Ann and the launch date is March 3." in summary
    lines = summary.split("\n")
    assert "ok" not in lines and "hi" not in lines
    assert all(any(line in m.content for m in messages) for line in lines)


def test_extractive_summary_stays_in_thai() -> None:
    # Given a Thai conversation
    messages = [
        user("สวัสดีครับ"),
        user("ผมชื่อสมชาย ทำงานที่ธนาคารกสิกร"),
        Message(role=Role.assistant, content="ยินดีที่ได้รู้จักครับ คุณสมชาย"),
        user("เดือนหน้าผมจะไปเที่ยวญี่ปุ่นกับครอบครัว 5 วัน"),
        user("ขอบคุณครับ"),
    ]

    # When summarised
    summary = ExtractiveSummarizer().summarize(messages)

    # Then the summary is Thai text taken from the conversation, without the greetings and thanks
    assert "ผมชื่อสมชาย" in summary
    assert "ญี่ปุ่น" in summary
    assert "สวัสดีครับ" not in summary and "ขอบคุณครับ" not in summary
    assert not any("a" <= ch.lower() <= "z" for ch in summary)
    assert len(summary) <= 600


def test_extractive_summary_of_chatter_is_empty() -> None:
    # Given chatter only, When summarised, Then the summary is empty
    assert ExtractiveSummarizer().summarize([user("ok"), user("555"), user("ขอบคุณครับ")]) == ""

"""Compression of evicted items: the seed's keep/drop rules, offline and through the LLM."""

import json
from datetime import datetime, timedelta, timezone

import litellm
import pytest

from app.llm import tokens
from app.working.compression import Said, extractive, summarise

START = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
CHAT = [
    ("user", "Hi! Good morning."),
    ("agent", "Good morning! What can I do for you today? I am here to help with anything you need, big or small."),
    ("user", "We are planning the team offsite for next month, somewhere we can reach by train from the city."),
    (
        "agent",
        "Lovely idea. There are many options: the lake district, the coast, the mountains, or a vineyard. "
        "Each has its charm, and the weather in spring is usually mild, although it can rain now and then.",
    ),
    ("user", "The budget is at most 4000 euros for twelve people, and two of them cannot eat gluten."),
    (
        "agent",
        "Noted. I looked at several venues and the prices vary a lot depending on the season and on the size of the group; "
        "some include meals and others do not, which makes comparing them a little tricky but not impossible.",
    ),
    (
        "tool",
        "venue_search: 23 venues, 11 reachable by train, 6 within budget, 4 with gluten-free catering, sorted by rating",
    ),
    ("user", "Actually, make it fourteen people, two more joined this morning."),
    (
        "agent",
        "Thanks for the update. Fourteen people it is, and the budget stays the same, so the choice narrows a bit.",
    ),
    ("user", "Let's go with the vineyard near the lake. Remind me to send the invitations on Friday."),
    (
        "agent",
        "Great, that sounds wonderful and I am sure everybody will enjoy the place, the food and the views. The vineyard "
        "has been running for three generations, its cellar tours are popular with groups, and the terrace looks over "
        "the water, which makes for a pleasant evening once the sun goes down behind the hills on the far shore.",
    ),
    ("user", "Thanks, that's all for now!"),
]
ITEMS = [
    Said(
        kind=kind,
        content=text,
        at=START + timedelta(minutes=n),
        importance={"user": 1.0, "agent": 0.6, "tool": 0.4}[kind],
    )
    for n, (kind, text) in enumerate(CHAT)
]


def source_tokens() -> int:
    return sum(tokens.count(item.content, tokenizer="cl100k_base") for item in ITEMS)


async def test_the_extractive_summary_keeps_constraints_corrections_decisions_and_tasks(settings):
    summary = await summarise(ITEMS, session_id="offsite", settings=settings)
    head, *body = summary.content.splitlines()
    assert head == "Summary of session offsite, 2026-03-02 09:00 to 2026-03-02 09:11 UTC (12 messages):"
    assert summary.method == "extractive" and summary.note is None
    assert 5 <= summary.ratio <= 10 and summary.source_tokens == source_tokens()
    kept = "\n".join(body)
    for must in (
        "at most 4000 euros",
        "cannot eat gluten",
        "fourteen people",
        "go with the vineyard",
        "send the invitations",
    ):
        assert must in kept, (must, kept)
    for chatter in ("Good morning", "that's all for now", "sounds wonderful"):
        assert chatter not in kept
    # In the order it was said, each line naming its speaker.
    assert kept.index("4000 euros") < kept.index("fourteen people") < kept.index("vineyard")
    assert all(line.startswith(("- user: ", "- assistant: ", "- tool: ")) for line in body)


def test_a_kept_sentence_is_whole_across_decimals_and_abbreviations(settings):
    said = "My GPA was 3.4 and I must send the transcript to Dr. Alvarez by Friday, e.g. before noon. Nice weather."
    summary = extractive([Said(kind="user", content=said, at=START, importance=1.0)], source_tokens=500, settings=settings)
    assert summary == "- user: My GPA was 3.4 and I must send the transcript to Dr. Alvarez by Friday, e.g. before noon."


class Scripted:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.prompts: list[list[dict]] = []

    async def __call__(self, real, *, messages, **kwargs):
        self.prompts.append(messages)
        return await real(messages=messages, mock_response=self.answer, **kwargs)


@pytest.fixture
def llm_settings(settings):
    return settings.model_copy(update={"llm_model": "openai/scripted"})


async def test_the_llm_summary_is_used_within_the_ratio(llm_settings, monkeypatch):
    body = (
        "Team offsite next month, reachable by train. Budget at most 4000 euros; fourteen people (corrected from twelve), "
        "two gluten-free. Decided: the vineyard near the lake. To do: send the invitations on Friday."
    )
    script = Scripted(json.dumps({"summary": body}))
    real = litellm.acompletion
    monkeypatch.setattr(litellm, "acompletion", lambda **kwargs: script(real, **kwargs))
    summary = await summarise(ITEMS, session_id="offsite", settings=llm_settings)
    assert summary.method == "llm:openai/scripted" and summary.content.endswith(body)
    assert summary.content.startswith("Summary of session offsite, 2026-03-02 09:00 to 2026-03-02 09:11 UTC")
    assert 5 <= summary.ratio <= 10
    system = script.prompts[0][0]["content"]
    assert "memory compressor" in system and "unfinished tasks" in system and "greetings" in system


async def test_an_llm_summary_outside_the_ratio_falls_back_to_the_extractive_one(llm_settings, monkeypatch):
    script = Scripted(json.dumps({"summary": " ".join(item.content for item in ITEMS)}))  # no compression at all
    real = litellm.acompletion
    monkeypatch.setattr(litellm, "acompletion", lambda **kwargs: script(real, **kwargs))
    summary = await summarise(ITEMS, session_id="offsite", settings=llm_settings)
    assert summary.method == "extractive" and "outside" in summary.note
    assert 5 <= summary.ratio <= 10

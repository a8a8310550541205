"""Compression of evicted working memory into one episodic summary (seed 001 3.2).

The summary opens with a line naming the session and the time range it covers; its body
shrinks the evicted text by a ratio between `compression_min_ratio` and `compression_max_ratio`
(5:1 to 10:1 by default), counted in tokens. With an LLM configured, the seed's keep/drop prompt writes it; an answer outside the
ratio, or none, falls back to the offline extractive summary, which keeps whole sentences
that state preferences, constraints, decisions, open tasks and corrections (the cue lists
are data: lexicon/summary_cues.json), in the order they were said.
"""

import json
import math
import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path

from pydantic import BaseModel, Field

from app.core.settings import Settings
from app.llm import tokens
from app.llm.client import ask_json
from app.text import cjk_characters, sentences

_CUES = Path(__file__).parent / "lexicon" / "summary_cues.json"
SPEAKERS = {"user": "user", "agent": "assistant", "tool": "tool"}

SYSTEM_PROMPT = """You are a memory compressor. Compress the conversation history below into a summary of at most {words} words.
Keep:
1. preferences and constraints the user stated explicitly
2. key parameters and decisions that were confirmed
3. unfinished tasks and to-dos
4. important errors and their corrections
Drop:
- greetings and unrelated chatter
- repeated confirmations
- intermediate reasoning
Write in the language of the conversation. Answer with a JSON object: {{"summary": "<the summary>"}}."""


@dataclass(frozen=True, slots=True)
class Said:
    """One evicted item, as the compressor needs it."""

    kind: str  # user | agent | tool
    content: str
    at: datetime
    importance: float


@dataclass(frozen=True, slots=True)
class Summary:
    content: str  # the heading line, then the body
    tokens: int  # of the body: what the ratio is about
    source_tokens: int
    start: datetime
    end: datetime
    method: str  # "extractive" or "llm:<model>"
    note: str | None = None

    @property
    def ratio(self) -> float:
        return round(self.source_tokens / self.tokens, 2) if self.tokens else 0.0


class _Answer(BaseModel):
    summary: str = Field(min_length=1)


@dataclass(frozen=True)
class _Cues:
    kinds: tuple[tuple[float, re.Pattern[str], re.Pattern[str]], ...]
    fillers: tuple[re.Pattern[str], ...]
    other_weight: float


def _english_cue(cue: str) -> str:
    """A whole word or phrase (plural, -ed and -ing allowed), or with a trailing * a word beginning."""
    if cue.endswith("*"):
        return re.escape(cue[:-1])
    return re.escape(cue) + r"(?:s|es|d|ed|ing)?(?![\w'])"


@cache
def _cues() -> _Cues:
    data = json.loads(_CUES.read_text(encoding="utf-8"))
    kinds = tuple(
        (
            kind["weight"],
            re.compile(r"(?<![\w'])(?:" + "|".join(_english_cue(cue) for cue in kind["en"]) + ")", re.IGNORECASE),
            re.compile("|".join(re.escape(cue) for cue in kind["zh"])),
        )
        for kind in data["kinds"]
    )
    fillers = tuple(
        re.compile(pattern, re.IGNORECASE) for language in ("en", "zh") for pattern in data["fillers"][language]
    )
    return _Cues(kinds=kinds, fillers=fillers, other_weight=data["other_weight"])


def _weight(sentence: str) -> float | None:
    """The weight of the sentence's best cue; None for a sentence too short to matter without one."""
    cues = _cues()
    for weight, english, chinese in cues.kinds:
        if english.search(sentence) or chinese.search(sentence):
            return weight
    if not cjk_characters(sentence) and len(sentence.split()) < 3:
        return None
    return cues.other_weight


def _filler(text: str) -> bool:
    stripped = text.strip()
    return any(pattern.match(stripped) for pattern in _cues().fillers)


def header(*, session_id: str, start: datetime, end: datetime, count: int) -> str:
    """What a summary says about itself: the session and the time range it covers."""
    span = f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
    return f"Summary of session {session_id}, {span} ({count} messages):"


def bounds(source_tokens: int, settings: Settings) -> tuple[int, int]:
    """The fewest and most tokens a summary of `source_tokens` may have."""
    most = max(1, math.floor(source_tokens / settings.compression_min_ratio))
    fewest = min(most, math.ceil(source_tokens / settings.compression_max_ratio))
    return fewest, most


@dataclass(frozen=True, slots=True)
class _Sentence:
    item: int
    position: int
    text: str
    score: float


def _sentences(items: list[Said]) -> list[_Sentence]:
    found = []
    for index, item in enumerate(items):
        if _filler(item.content):
            continue
        for position, text in enumerate(sentences(item.content)):
            weight = None if _filler(text) else _weight(text)
            if weight is not None:
                # The user's own words weigh most (the seed keeps what the user stated); among equals,
                # later before earlier, since corrections come later.
                found.append(_Sentence(index, position, text, weight + 0.3 * item.importance + 0.001 * index))
    return found


def _render(items: list[Said], chosen: list[_Sentence]) -> str:
    lines: list[str] = []
    last_item = None
    for sentence in sorted(chosen, key=lambda s: (s.item, s.position)):
        joiner = "" if cjk_characters(sentence.text[:1]) else " "
        if sentence.item == last_item:
            lines[-1] += joiner + sentence.text
        else:
            lines.append(f"- {SPEAKERS[items[sentence.item].kind]}: {sentence.text}")
        last_item = sentence.item
    return "\n".join(lines)


def extractive(items: list[Said], *, source_tokens: int, settings: Settings) -> str:
    """The best-scored sentences that fit the ratio's upper bound, in the order they were said."""
    tokenizer = settings.context_tokenizer
    _, most = bounds(source_tokens, settings)
    ranked = sorted(_sentences(items), key=lambda s: s.score, reverse=True)
    used = 0
    chosen: list[_Sentence] = []
    for sentence in ranked:
        # A sentence joins the line of an item already quoted; otherwise it opens one.
        opens = all(other.item != sentence.item for other in chosen)
        line = f"- {SPEAKERS[items[sentence.item].kind]}: {sentence.text}\n" if opens else f" {sentence.text}"
        cost = tokens.count(line, tokenizer=tokenizer)
        if used + cost <= most:
            chosen.append(sentence)
            used += cost
    if not chosen and ranked:  # not even the best sentence fits whole: keep its beginning
        best = ranked[0]
        prefix = f"- {SPEAKERS[items[best.item].kind]}: "
        room = max(most - tokens.count(prefix + "…", tokenizer=tokenizer), 1)
        chosen = [
            _Sentence(best.item, best.position, tokens.clip(best.text, room, tokenizer=tokenizer) + "…", best.score)
        ]
    text = _render(items, chosen)
    # Joined lines can count differently from their parts: drop the weakest until it fits.
    while tokens.count(text, tokenizer=tokenizer) > most and len(chosen) > 1:
        chosen.remove(min(chosen, key=lambda s: s.score))
        text = _render(items, chosen)
    return text


def _history(items: list[Said]) -> str:
    return "\n".join(f"[{item.at:%Y-%m-%d %H:%M}] {SPEAKERS[item.kind]}: {item.content}" for item in items)


async def summarise(items: list[Said], *, session_id: str, settings: Settings) -> Summary:
    """One summary of evicted items (in the order they were said)."""
    tokenizer = settings.context_tokenizer
    start, end = min(item.at for item in items), max(item.at for item in items)
    head = header(session_id=session_id, start=start, end=end, count=len(items))
    source_tokens = sum(tokens.count(item.content, tokenizer=tokenizer) for item in items)
    fewest, most = bounds(source_tokens, settings)
    note = None
    if settings.llm_model:
        exchange = await ask_json(
            model=settings.llm_model,
            system=SYSTEM_PROMPT.format(words=max(int(most * 0.7), 10)),
            user=_history(items),
            schema=_Answer,
            timeout_seconds=settings.llm_timeout_seconds,
            retries=settings.llm_retries,
        )
        if exchange.answer is not None:
            body = exchange.answer.summary.strip()
            count = tokens.count(body, tokenizer=tokenizer)
            if fewest <= count <= most:
                return Summary(f"{head}\n{body}", count, source_tokens, start, end, method=f"llm:{settings.llm_model}")
            note = f"llm:{settings.llm_model} wrote {count} tokens, outside {fewest}-{most}; the extractive summary is used"
        else:
            note = f"llm:{settings.llm_model} gave no usable answer ({exchange.error}); the extractive summary is used"
    body = extractive(items, source_tokens=source_tokens, settings=settings)
    count = tokens.count(body, tokenizer=tokenizer)
    return Summary(f"{head}\n{body}", count, source_tokens, start, end, method="extractive", note=note)

"""LLM extraction (seed 003 3.1): a window of messages in, key / query / value memories out.

The prompt is the seed's extraction prompt, with what hindsight knows added so that an update
reuses the key it updates: the namespace's keys in use and its memories nearest to the window.
The answer is checked item by item: a key not shaped `<namespace>:<subject>:<attribute>` drops
its memory (counted apart), as does a memory without text or naming no message of the window.
"""

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from app.llm.client import ask_json

SYSTEM_PROMPT = """You are a memory extractor. Extract structured memories from the conversation below.
Answer with JSON only, in this shape:
{"memories": [{"key": "namespace:subject:attribute", "query": "what intent should find this memory",
  "value": "the memory itself, one self-contained sentence", "confidence": 0.0-1.0,
  "memory_type": "episodic|semantic", "message_id": "id of the message it comes from"}]}
Rules:
1. Extract only facts that were stated; lower the confidence of anything uncertain.
2. Every key starts with the namespace given, then the subject (usually `user`), then the attribute,
   e.g. "<namespace>:user:allergy". Use lower-case words joined by underscores, no spaces.
3. When a fact updates one of the known keys or memories, reuse that exact key, so the new value replaces the old.
4. One message may yield several memories; greetings and small talk yield none.
5. semantic: lasting facts about the user (preferences, relationships, where they live or work);
   episodic: events that happened at a time (include the date in the value).
6. If nothing is worth remembering, answer {"memories": []}."""


class Answer(BaseModel):
    memories: list[Any] = Field(default_factory=list)


class Item(BaseModel):
    key: str = Field(min_length=1, max_length=400)
    query: str | None = Field(default=None, max_length=1_000)
    value: str = Field(min_length=1)
    confidence: float = Field(default=0.8, ge=0, le=1)
    memory_type: Literal["episodic", "semantic"] = "semantic"
    message_id: str | None = None


@dataclass(frozen=True, slots=True)
class WindowMessage:
    message_id: str
    role: str
    content: str
    at: str  # ISO time, as the model reads it


@dataclass
class Extracted:
    items: list[Item] = field(default_factory=list)
    malformed_keys: int = 0
    invalid: int = 0
    error: str | None = None  # no usable answer: the caller falls back to rules
    prompt: str | None = None
    response: str | None = None


def key_pattern(namespace: str) -> re.Pattern[str]:
    """`<namespace>:<subject>:<attribute>[:...]`, segments of word characters, dots and dashes."""
    return re.compile(rf"^{re.escape(namespace)}(?::[\w.\-]+){{2,}}$")


def _user_prompt(
    namespace: str, window: list[WindowMessage], known_keys: list[str], nearest: list[dict[str, Any]]
) -> str:
    return json.dumps(
        {
            "namespace": namespace,
            "known_keys": known_keys,
            "known_memories": nearest,
            "conversation": [
                {"message_id": message.message_id, "role": message.role, "at": message.at, "content": message.content}
                for message in window
            ],
        },
        ensure_ascii=False,
    )


async def extract(
    *,
    model: str,
    namespace: str,
    window: list[WindowMessage],
    known_keys: list[str],
    nearest: list[dict[str, Any]],
    max_chars: int,
    timeout_seconds: float,
    retries: int,
) -> Extracted:
    exchange = await ask_json(
        model=model,
        system=SYSTEM_PROMPT,
        user=_user_prompt(namespace, window, known_keys, nearest),
        schema=Answer,
        timeout_seconds=timeout_seconds,
        retries=retries,
    )
    result = Extracted(prompt=exchange.prompt, response=exchange.response, error=exchange.error)
    if exchange.answer is None:
        return result
    keys = key_pattern(namespace)
    ids = {message.message_id for message in window}
    for raw in exchange.answer.memories:
        try:
            item = Item.model_validate(raw)
        except ValidationError:
            result.invalid += 1
            continue
        if not keys.match(item.key):
            result.malformed_keys += 1
        elif not item.value.strip() or len(item.value) > max_chars or (item.message_id not in ids):
            result.invalid += 1
        else:
            result.items.append(item)
    return result

"""Structured JSON calls through litellm: temperature 0, a timeout, a bounded retry, and a
schema check. Every exchange keeps the full prompt and the raw answer for the logs."""

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

import litellm
from pydantic import BaseModel, ValidationError

Answer = TypeVar("Answer", bound=BaseModel)
Item = TypeVar("Item")


@dataclass(frozen=True, slots=True)
class Exchange(Generic[Answer]):
    prompt: str
    response: str | None
    answer: Answer | None
    error: str | None  # why no valid answer came back, after every attempt


@dataclass(frozen=True)  # no slots: a slotted generic dataclass breaks on Verdict[X](...)
class Verdict(Generic[Item]):
    """What a rules-or-LLM step decided (judgements, lesson drafts), who decided, and the LLM
    exchange if there was one."""

    items: list[Item]
    decided_by: str
    prompt: str | None = None
    response: str | None = None
    note: str | None = None  # why the LLM's answer was not used
    fell_back: bool = False  # the rules decided because the LLM could not


class UnusableAnswer(ValueError):
    """A schema-valid answer that still cannot be used; the message says why."""


async def ask_json(
    *, model: str, system: str, user: str, schema: type[Answer], timeout_seconds: float, retries: int
) -> Exchange[Answer]:
    """Ask for a JSON object matching `schema`; retry on timeouts, errors and invalid JSON."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    prompt = json.dumps(messages, ensure_ascii=False)
    raw: str | None = None
    error = "no attempt made"
    for _ in range(retries + 1):
        try:
            completion = await asyncio.wait_for(
                litellm.acompletion(
                    model=model,
                    messages=messages,
                    temperature=0,
                    timeout=timeout_seconds,
                    response_format={"type": "json_object"},
                ),
                timeout=timeout_seconds,
            )
            raw = completion.choices[0].message.content or ""
            return Exchange(prompt=prompt, response=raw, answer=schema.model_validate_json(raw), error=None)
        except (TimeoutError, asyncio.TimeoutError):
            error = f"timed out after {timeout_seconds}s"
        except ValidationError as invalid:
            error = f"answer did not match the schema: {invalid.errors()[0]['msg']}"
        except Exception as failure:  # litellm raises provider-specific errors; all mean "no answer"
            error = f"{type(failure).__name__}: {failure}"
    return Exchange(prompt=prompt, response=raw, answer=None, error=error)


async def ask_or_fall_back(
    *,
    model: str,
    system: str,
    user: str,
    schema: type[Answer],
    timeout_seconds: float,
    retries: int,
    read: Callable[[Answer], list[Item]],
    fallback: Callable[[], Awaitable[Verdict[Item]]],
) -> Verdict[Item]:
    """The LLM's verdict, read from its answer; or, when no usable answer came back, the
    fallback's, noting why and keeping the exchange for the logs."""
    exchange = await ask_json(
        model=model, system=system, user=user, schema=schema, timeout_seconds=timeout_seconds, retries=retries
    )
    error = exchange.error
    if exchange.answer is not None:
        try:
            items = read(exchange.answer)
        except UnusableAnswer as unusable:
            error = str(unusable)
        else:
            return Verdict(items, decided_by=f"llm:{model}", prompt=exchange.prompt, response=exchange.response)
    fallen_back = await fallback()
    return replace(
        fallen_back,
        prompt=exchange.prompt,
        response=exchange.response,
        note=f"llm:{model} gave no usable answer ({error}); {fallen_back.decided_by} decided",
        fell_back=True,
    )

"""Structured JSON calls through litellm: temperature 0, a timeout, a bounded retry, and a
schema check. Every exchange keeps the full prompt and the raw answer for the logs."""

import asyncio
import json
import os
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

# Never fetch the model cost map over the network: this service must run offline.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402  (the variable above must be set before the import)

Answer = TypeVar("Answer", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Exchange(Generic[Answer]):
    prompt: str
    response: str | None
    answer: Answer | None
    error: str | None  # why no valid answer came back, after every attempt


NO_USABLE_ANSWER = "gave no usable answer"


def fallback_note(model: str, error: str | None, *, decided_by: str) -> str:
    """What the logs say when the rules decided because the LLM could not."""
    return f"llm:{model} {NO_USABLE_ANSWER} ({error}); {decided_by} decided"


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

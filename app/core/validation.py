"""Input rules every request shares, whatever its fields: values PostgreSQL and Python can hold.
A value past them would fail deep in a query (a 500, or a batch item failing half way); here it
is a 422 problem naming the field, before anything is stored."""

import json
import math
import re
from datetime import date, datetime, timedelta, timezone
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field, Strict, field_validator
from pydantic_core import PydanticCustomError

from app.core.settings import settings

# PostgreSQL text and jsonb refuse NUL; a lone UTF-16 surrogate (JSON allows "\ud800") has no UTF-8 form.
_UNSTORABLE_TEXT = re.compile("[\x00\ud800-\udfff]")
INT4_MAX = 2**31 - 1
# Whitespace as Python's str.isspace() has it, spelled out for regex patterns: `\s` means another
# set in each of JSON Schema's dialect (ECMA-262), Python's re and pydantic's Rust engine.
WHITESPACE = r"\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# A pattern (unanchored, so "contains"): text that is not blank, as str.strip() judges it.
NOT_BLANK = f"[^{WHITESPACE}]"


def _why_unstorable(item: Any) -> str | None:
    if isinstance(item, str) and _UNSTORABLE_TEXT.search(item):
        return "text must not contain NUL (U+0000) or unpaired surrogate characters"
    # jsonb has no NaN or Infinity, which Python's JSON parser accepts.
    if isinstance(item, float) and not math.isfinite(item):
        return "numbers must be finite"
    return None


def unstorable(value: Any, *, max_depth: int) -> tuple[str, str] | None:
    """(error type, reason) if the service cannot store `value`, naming where inside it (keys
    included) the first offending part sits; None if it can. Nesting past `max_depth` levels is
    refused too: the JSON encoders on the way out stop at 255, and every reader pays for depth.
    Iterative: JSON may nest deeper than the stack."""
    pending: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while pending:
        path, item = pending.pop()
        kind, reason = "unstorable_value", _why_unstorable(item)
        if reason is None and isinstance(item, (dict, list)) and len(path) >= max_depth:
            kind, reason = "json_too_deep", f"nested deeper than {max_depth} levels"
        if reason:
            where = ".".join(_UNSTORABLE_TEXT.sub("\ufffd", str(part)) for part in path)
            return kind, f"{where}: {reason}" if where else reason
        if isinstance(item, dict):
            for key, inner in item.items():
                pending += [((*path, key), key), ((*path, key), inner)]
        elif isinstance(item, list):
            pending += [((*path, index), inner) for index, inner in enumerate(item)]
    return None


def json_size(value: Any) -> int:
    """Bytes of the value as compact UTF-8 JSON, as it would be stored."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode())


def storable(value: Any) -> Any:
    if found := unstorable(value, max_depth=settings.max_json_depth):
        raise PydanticCustomError(*found)
    return value


class RequestBody(BaseModel):
    """Base of every request body: unknown fields refused, everything in it storable."""

    model_config = ConfigDict(extra="forbid")

    # Every field, before its own checks, whatever it nests (models, lists, free-form dicts).
    @field_validator("*", mode="before")
    @classmethod
    def _storable(cls, value: Any) -> Any:
        return storable(value)


StorableText = Annotated[str, AfterValidator(storable)]


def _key_count(value: Any) -> int:
    count, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            count += len(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return count


def _bounded_object(value: dict[str, Any]) -> dict[str, Any]:
    if _key_count(value) > settings.max_metadata_keys:
        raise PydanticCustomError("too_many_keys", f"more than {settings.max_metadata_keys} keys (all levels counted)")
    if json_size(value) > settings.max_metadata_bytes:
        raise PydanticCustomError("too_large", f"larger than {settings.max_metadata_bytes} bytes as JSON")
    return value


# Free-form JSON a memory carries (metadata, source): every read returns it, so it is bounded.
BoundedObject = Annotated[
    dict[str, Any], AfterValidator(_bounded_object), Field(json_schema_extra={"maxProperties": settings.max_metadata_keys})
]


def _whole(value: Any) -> Any:
    # JSON Schema counts 2.0 an integer, and schema-driven clients send it so; strict int would not.
    return int(value) if isinstance(value, float) and value.is_integer() else value


def integer(**bounds: int) -> Any:
    """A request integer as JSON types it: pydantic's lax mode would also take "5" or true.
    The bounds go before the validator: after it, pydantic leaves them out of an optional field's schema."""
    return Annotated[int, Field(**bounds), BeforeValidator(_whole), Strict()]


# A request number as JSON types it (an integer is one too), never "0.5" or false.
Number = Annotated[float, Strict()]


def _timestamp_text(value: Any) -> Any:
    # JSON carries date-times as text; pydantic would otherwise read a number as Unix time.
    if not isinstance(value, (str, datetime)):
        raise PydanticCustomError("datetime_type", "Input should be an RFC 3339 date-time string")
    return value


def _inside_edge_days(value: datetime) -> datetime:
    if value.date() in (date.min, date.max):
        raise PydanticCustomError("datetime_range", "Input should fall between 0001-01-02 and 9999-12-30")
    return value


# Python (and so the driver) holds instants of years 1 to 9999 in UTC. A time written on the
# first or last of those days can fall outside once its offset applies (0001-01-01T00:00+01:00),
# so those two days are refused whole: a rule the schema states, as a pattern.
Timestamp = Annotated[
    AwareDatetime,
    BeforeValidator(_timestamp_text),
    AfterValidator(_inside_edge_days),
    Field(json_schema_extra={"pattern": "^(?!0001-01-01|9999-12-31)"}),
]


def _not_ahead(value: datetime) -> datetime:
    now = datetime.now(timezone.utc)
    if value > now + timedelta(seconds=settings.max_clock_skew_seconds):
        raise PydanticCustomError(
            "datetime_ahead",
            f"Input should not be more than {settings.max_clock_skew_seconds:g} seconds in the future",
        )
    return min(value, now)


# When something happened, by the client's clock: never later than now. A time ahead within the
# clock skew is taken as now, so it cannot rank after writes the server makes later (a keyed
# memory from the future would stay active beside its successors and hide from every search).
PastTimestamp = Annotated[Timestamp, AfterValidator(_not_ahead)]

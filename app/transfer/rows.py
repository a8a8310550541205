"""Table rows to JSON and back, column by column, checked against the table's own types.

An export line is `{"type": ..., "row": {...}}` (a memory also carries its `versions`, an event
its payload's `full_text`). Identity keys (versions, relations, events) are left out: the
importing database numbers them. Derived columns are left out and recomputed: a memory's
lexemes, the hashes of contents. Everything else goes as it is stored, vectors included, so an
import reproduces every field."""

import math
import re
from datetime import datetime
from typing import Any
from uuid import UUID

from pgvector.sqlalchemy import Vector
from sqlalchemy import Boolean, Column, DateTime, Float, Integer, Table, Text
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR
from sqlalchemy.dialects.postgresql import UUID as PG_UUID

from app.core.errors import Unprocessable
from app.core.validation import unstorable
from app.models import (
    EventPayload,
    Memory,
    MemoryRelation,
    MemoryVersion,
    Reflection,
    RevisionLog,
    TaskEvent,
    TaskReview,
)

# Exported per kind: the table, and the columns left out (numbered or derived on import).
KINDS: dict[str, tuple[Table, frozenset[str]]] = {
    "memory": (Memory.__table__, frozenset({"lexemes", "content_hash"})),
    "version": (MemoryVersion.__table__, frozenset({"id", "memory_id"})),
    "relation": (MemoryRelation.__table__, frozenset({"id"})),
    "revision": (RevisionLog.__table__, frozenset()),
    "lesson": (Reflection.__table__, frozenset({"lesson_hash"})),
    "event": (TaskEvent.__table__, frozenset({"id"})),
    "review": (TaskReview.__table__, frozenset()),
}
PAYLOAD = EventPayload.__table__
UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MAX_TEXT_CHARS = 1_000_000


def columns(kind: str) -> list[Column]:
    table, left_out = KINDS[kind]
    return [column for column in table.columns if column.name not in left_out]


def to_json(value: Any) -> Any:
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "tolist"):  # a vector
        return [float(x) for x in value.tolist()]
    return value


def dump(kind: str, row: Any) -> dict[str, Any]:
    return {column.name: to_json(row[column.name]) for column in columns(kind)}


def _bad(where: str, why: str) -> Unprocessable:
    return Unprocessable(f"{where}: {why}", errors=[{"loc": [where], "msg": why, "type": "import"}])


def _parse(column: Column, value: Any, where: str) -> Any:
    kind = column.type
    if value is None:
        if not column.nullable:
            raise _bad(where, "must not be null")
        return None
    if isinstance(kind, PG_UUID):
        try:
            return UUID(value)
        except (TypeError, ValueError, AttributeError):
            raise _bad(where, "must be a UUID") from None
    if isinstance(kind, DateTime):
        try:
            parsed = datetime.fromisoformat(value)
        except (TypeError, ValueError):
            raise _bad(where, "must be an ISO 8601 time") from None
        if parsed.tzinfo is None:
            raise _bad(where, "must carry a time zone")
        return parsed
    if isinstance(kind, Boolean):
        if not isinstance(value, bool):
            raise _bad(where, "must be true or false")
        return value
    if isinstance(kind, Integer):  # BigInteger too
        if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
            raise _bad(where, "must be a 32-bit integer")
        return value
    if isinstance(kind, Float):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _bad(where, "must be a finite number")
        return float(value)
    if isinstance(kind, Vector):
        if not isinstance(value, list) or not 0 < len(value) <= 2_000:
            raise _bad(where, "must be a list of at most 2000 numbers")
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) for x in value):
            raise _bad(where, "must hold finite numbers only")
        return value
    if isinstance(kind, JSONB):
        if (problem := unstorable(value, max_depth=32)) is not None:
            raise _bad(where, problem[1])
        return value
    if isinstance(kind, (Text, TSVECTOR)):
        if not isinstance(value, str) or len(value) > MAX_TEXT_CHARS:
            raise _bad(where, f"must be text of at most {MAX_TEXT_CHARS} characters")
        if (problem := unstorable(value, max_depth=32)) is not None:
            raise _bad(where, problem[1])
        return value
    raise _bad(where, "cannot be imported")  # a column type this module does not know


def load(kind: str, row: Any, where: str) -> dict[str, Any]:
    """The row's values, typed for the table; 422 naming the line and field on anything else."""
    if not isinstance(row, dict):
        raise _bad(where, "row must be an object")
    known = {column.name: column for column in columns(kind)}
    if unknown := sorted(set(row) - set(known)):
        raise _bad(where, f"unknown fields: {', '.join(unknown[:5])}")
    if missing := [
        name
        for name, column in known.items()
        if name not in row and not column.nullable and column.server_default is None
    ]:
        raise _bad(where, f"missing fields: {', '.join(missing[:5])}")
    return {name: _parse(known[name], value, f"{where}.{name}") for name, value in row.items()}


def texts(kind: str, row: dict[str, Any]) -> dict[str, Any]:
    """The row's text and JSON values: what the sensitive-data guard reads."""
    readable = {}
    for column in columns(kind):
        value = row.get(column.name)
        if value is not None and isinstance(column.type, (Text, JSONB)) and column.name not in ("payload_hash",):
            readable[column.name] = value
    return readable

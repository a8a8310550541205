"""How a memory row is built from text: normal form, hash, and a new active row."""

import hashlib
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from app.models import Memory
from app.text import normalise, same_numbers

__all__ = ["content_hash", "new_memory", "normalise", "same_numbers"]


def content_hash(content: str) -> str:
    return hashlib.sha256(normalise(content).encode()).hexdigest()


def _expiry(created_at: datetime, ttl_seconds: int | None) -> datetime | None:
    """When the memory expires: never without a TTL, nor when that would fall past year 9999,
    beyond what Python can hold (a memory imported with a date near it)."""
    if not ttl_seconds:
        return None
    try:
        return created_at + timedelta(seconds=ttl_seconds)
    except OverflowError:
        return None


def new_memory(
    *,
    namespace: str,
    content: str,
    embedding: np.ndarray,
    embedding_model: str,
    created_at: datetime,
    updated_at: datetime,
    key: str | None = None,
    query_hint: str | None = None,
    memory_type: str = "semantic",
    confidence: float = 1.0,
    importance: float = 0.5,
    session_id: str | None = None,
    source: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
    ttl_seconds: int | None = None,
) -> Memory:
    return Memory(
        namespace=namespace,
        key=key,
        content=content,
        content_hash=content_hash(content),
        query_hint=query_hint,
        memory_type=memory_type,
        embedding=embedding,
        embedding_model=embedding_model,
        embedding_dim=int(embedding.shape[0]),
        confidence=confidence,
        importance=importance,
        session_id=session_id,
        source=source or {},
        metadata_=metadata or {},
        ttl_seconds=ttl_seconds,
        expires_at=_expiry(created_at, ttl_seconds),
        created_at=created_at,
        updated_at=updated_at,
    )

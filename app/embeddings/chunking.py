"""Long texts as several windows of one memory.

A model sees the first `max_chars` of a text; past that, words are invisible to the vector
route. With `chunks > 1` a passage longer than that is also cut into windows of `max_chars`
(cut at whitespace, overlapping by OVERLAP characters so a phrase across a cut is whole in one),
up to `chunks` windows in all. The memory's own vector stays its prefix's (as with `chunks = 1`);
each later window gets a vector of its own in `memory_chunks` (app/embeddings/repository.py),
and the vector route scores a memory by its best window (app/recall/relevance.py,
`CHUNK_SHARE`). The lexical route reads the full text. Queries are never cut."""

from dataclasses import dataclass

import numpy as np

from app.embeddings.provider import EmbeddingProvider

OVERLAP = 64


def split(text: str, *, max_chars: int, chunks: int) -> list[str]:
    """Up to `chunks` windows of at most `max_chars`; the first is the text's own prefix."""
    if chunks <= 1 or len(text) <= max_chars:
        return [text[:max_chars]]
    pieces: list[str] = []
    start = 0
    while start < len(text) and len(pieces) < chunks:
        end = start + max_chars
        if end < len(text):
            cut = text.rfind(" ", start + max_chars // 2, end)
            end = cut if cut > start else end
        pieces.append(text[start:end])
        if end >= len(text):
            break
        start = max(end - OVERLAP, start + 1)
    return pieces


@dataclass(frozen=True, slots=True)
class Embedded:
    vectors: np.ndarray  # one row per text: its prefix's vector, the memory's own
    chunks: list[np.ndarray]  # per text, a row per later window (none for a short text)


async def embed(embedder: EmbeddingProvider, texts: list[str], *, max_chars: int, chunks: int) -> Embedded:
    """The texts' own vectors and their later windows', in one request to the embedder (its
    passage lane batches them together)."""
    later = [split(text, max_chars=max_chars, chunks=chunks)[1:] for text in texts]
    vectors = await embedder.embed_passages([*texts, *(piece for pieces in later for piece in pieces)])
    rows, start = [], len(texts)
    for pieces in later:
        rows.append(vectors[start : start + len(pieces)])
        start += len(pieces)
    return Embedded(vectors=vectors[: len(texts)], chunks=rows)

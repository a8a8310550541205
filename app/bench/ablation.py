"""One ablation row per relevance component: the service searched again with that component
switched off (`-name`: its constant set to the neutral value) or an off-by-default one switched
on (`+name value`), or a constant at another value (`name value`: the sweeps constants were
chosen by, on the tuning part), everything else as configured. Used by the
LoCoMo and LongMemEval suites; read-only searches, so every variant sees the same namespace."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from app.recall import relevance, repository, scoring


@dataclass(frozen=True)
class Variant:
    constants: tuple[tuple[ModuleType, str, Any], ...] = ()
    request: dict[str, Any] = field(default_factory=dict)  # fields added to each search

    @contextmanager
    def applied(self) -> Iterator[None]:
        saved = [(module, name, getattr(module, name)) for module, name, _ in self.constants]
        try:
            for module, name, value in self.constants:
                setattr(module, name, value)
            yield
        finally:
            for module, name, value in saved:
                setattr(module, name, value)


VARIANTS: dict[str, Variant] = {
    "-lexical (dense only)": Variant(((relevance, "LEXICAL_SHARE", 0.0),)),
    "-dense (lexical only)": Variant(((relevance, "LEXICAL_SHARE", 1.0),)),
    "-neighbour context": Variant(((relevance, "CONTEXT_WEIGHT", 0.0),)),
    "-speaker boost": Variant(((relevance, "SPEAKER_BOOST", 1.0),)),
    "-session lift": Variant(((relevance, "SESSION_LIFT", 0.0),)),
    "-neighbour lift": Variant(((relevance, "NEIGHBOUR_LIFT", 0.0),)),
    "neighbour lift added to own": Variant(((relevance, "NEIGHBOUR_LIFT_REPLACES", False),)),
    "-time window lift": Variant(((relevance, "TIME_LIFT", 0.0),)),
    "-relevance floor": Variant(((scoring, "RELEVANCE_FLOOR", 0.0),)),
    "lexical share 0.4": Variant(((relevance, "LEXICAL_SHARE", 0.4),)),
    "lexical share 0.6": Variant(((relevance, "LEXICAL_SHARE", 0.6),)),
    "lexical share 0.7": Variant(((relevance, "LEXICAL_SHARE", 0.7),)),
    "session lift 0.15": Variant(((relevance, "SESSION_LIFT", 0.15),)),
    "+session diversity 0.1": Variant(((relevance, "SESSION_DIVERSITY", 0.1),)),
    "+session diversity 0.25": Variant(((relevance, "SESSION_DIVERSITY", 0.25),)),
    "-recency": Variant(request={"weights": {"recency": 0.0}}),
    "recency not by relevance": Variant(((scoring, "RECENCY_RELEVANCE_POWER", 0.0),)),
    "recency by relevance^2": Variant(((scoring, "RECENCY_RELEVANCE_POWER", 2.0),)),
    "-chunks (own vector only)": Variant(((relevance, "CHUNK_SHARE", 0.0),)),
    "chunk share 0.5": Variant(((relevance, "CHUNK_SHARE", 0.5),)),
    "-bm25 (ts_rank, no IDF)": Variant(((repository, "LEXICAL_BM25", False),)),
    "bm25 b 0.3": Variant(((repository, "BM25_B", 0.3),)),
    "bm25 b 0": Variant(((repository, "BM25_B", 0.0),)),
}


def keep(fragments: list[str]) -> None:
    """Only the rows whose names contain one of these fragments (a bounded run)."""
    for name in [name for name in VARIANTS if not any(fragment in name for fragment in fragments)]:
        del VARIANTS[name]

"""Revision in hindsight: when a write changes what older memories mean, find them
(triggers), ask a judge, and supersede, merge or link them, with every step logged and
reversible.

Every change a revision makes is recorded in memory_versions with changed_by
"revision:<id>" and takes effect at the triggering memory's own time, so `as_of` search and
rollback can replay history exactly.
"""

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from uuid import UUID

import numpy as np
from sqlalchemy import inspect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from app.core.errors import VersionConflict
from app.core.metrics import count_revision
from app.core.settings import Settings
from app.embeddings.provider import EmbeddingProvider
from app.memories import records
from app.memories import repository as memories
from app.memories.sensitive import find_sensitive
from app.memories.trust import kind_of, trust_of
from app.models import Memory, RevisionLog
from app.revisions import repository
from app.revisions.judgement import Candidate, JudgedMemory, Judgement
from app.revisions.judges import Judge, Ruling
from app.revisions.rules import merge
from app.revisions.signals import change_cue, is_future_plan

ACTIONS = ("CONFLICT", "REFINE", "DUPLICATE")
STALE_RETRIES = 3
# A neighbour scan reads this many rows more than the triggers need: rows of other types, later
# times, or superseded since the scan are passed over there.
SCAN_SPARE = 8


def tag(revision: RevisionLog) -> str:
    return f"revision:{revision.id}"


@dataclass(frozen=True, slots=True)
class Triggered:
    memory: Memory
    similarity: float
    trigger: str  # "strong" | "weak" | "periodic"


@dataclass(frozen=True, slots=True)
class Scan:
    """A write's one neighbour scan (the nearest active memories of the namespace, any type),
    which deduplication and the triggers share; `complete` if it read every such memory."""

    rows: list[tuple[Memory, float]]
    complete: bool


@dataclass(slots=True)
class Context:
    """What a revision run needs besides the session. With `defer` set (async mode), a
    write hands its revision to the queue, in its own transaction, instead of running it;
    `review_later` is handed a namespace whose periodic review fell due, inside the transaction
    that made it due (app.namespaces.tracking), to queue it or start it after the commit."""

    judge: Judge
    embedder: EmbeddingProvider
    settings: Settings
    defer: Callable[[AsyncSession, UUID], Awaitable[None]] | None = None
    review_later: Callable[[Session, str], None] | None = None


def _judged(memory: Memory) -> JudgedMemory:
    return JudgedMemory(
        id=memory.id,
        content=memory.content,
        memory_type=memory.memory_type,
        key=memory.key,
        created_at=memory.created_at,
        source=kind_of(memory.source),
        confidence=memory.confidence,
    )


def outranked(new: Memory, old: Memory, settings: Settings) -> str | None:
    """Why a new memory may not replace an older one on its own: it comes from a less trusted
    source, or is clearly less confident. Such a revision waits for review."""
    if trust_of(new.source, settings) < trust_of(old.source, settings):
        return f"a {kind_of(new.source)} memory does not replace a {kind_of(old.source)} memory on its own"
    if new.confidence < old.confidence - settings.revision_confidence_margin:
        return f"the new memory is clearly less confident ({new.confidence:.2f} against {old.confidence:.2f})"
    return None


def _cooling(memory: Memory, *, at: datetime, settings: Settings) -> bool:
    return memory.revised_at is not None and abs(at - memory.revised_at) < timedelta(
        seconds=settings.revision_cooldown_seconds
    )


_RUN_AGAIN_WHOLE = "hindsight.changes_run_again_whole"


@contextmanager
def run_again_whole(session: AsyncSession) -> Iterator[None]:
    """Inside, the caller holds a savepoint of its own around what may change memories, and
    runs all of it again, from fresh reads, when one was changed by another writer meanwhile
    (a `VersionConflict`, at most `STALE_RETRIES` times): a change takes no savepoint of its
    own there, two statements fewer, and raises the conflict instead of retrying alone."""
    session.info[_RUN_AGAIN_WHOLE] = True
    try:
        yield
    finally:
        session.info.pop(_RUN_AGAIN_WHOLE, None)


async def _change(
    session: AsyncSession,
    memory: Memory,
    mutate: Callable[[Memory], bool],
    *,
    changed_by: str,
    at: datetime,
    then: tuple[Memory, Callable[[Memory], bool]] | None = None,
) -> bool:
    """Apply `mutate` (which says whether it still applies) and, if it does, `then`'s change to
    a second memory, and save both at once; on a concurrent change re-read them and try again
    (unless the caller runs everything again: `run_again_whole`)."""
    changed = [memory] if then is None else [memory, then[0]]

    async def save() -> bool:
        if not mutate(memory):
            return False
        if then is not None:
            then[1](then[0])
        await memories.save_changes(session, changed, changed_by=changed_by, at=at)
        return True

    if session.info.get(_RUN_AGAIN_WHOLE):
        return await save()
    for attempt in range(STALE_RETRIES):
        try:
            async with session.begin_nested():
                return await save()
        except VersionConflict:
            for stale in changed:
                await session.refresh(stale)
            if attempt == STALE_RETRIES - 1:
                raise
    return False


def _supersede(new: Memory, *, at: datetime) -> Callable[[Memory], bool]:
    def mutate(old: Memory) -> bool:
        if old.status not in ("active", "uncertain"):
            return False
        old.status, old.superseded_by, old.revised_at = "superseded", new.id, at
        return True

    return mutate


def _make_uncertain(memory: Memory) -> bool:
    if memory.status != "active":
        return False
    memory.status = "uncertain"
    return True


async def _hold(
    session: AsyncSession, revision: RevisionLog, new: Memory, old: Memory, *, uncertain: bool
) -> None:
    """Keep a judgement for review instead of applying it: both memories stay, linked, a
    likely update as `related` so search prefers the newer, a likely merge or restatement as
    `coexists`; a new memory that is outranked (less trusted, less confident) is also marked
    uncertain until the review."""
    kind = "related" if revision.decision == "CONFLICT" else "coexists"
    memories.hold_edge(session, source=new.id, target=old.id, kind=kind, revision_id=revision.id)
    if uncertain:
        await _change(session, new, _make_uncertain, changed_by=tag(revision), at=new.created_at)


def _set(**fields) -> Callable[[Memory], bool]:
    def mutate(memory: Memory) -> bool:
        for name, value in fields.items():
            setattr(memory, name, value)
        return True

    return mutate


async def log_revision(
    session: AsyncSession,
    new: Memory,
    *,
    trigger: str,
    status: str,
    new_content: str | None = None,
    fell_back: bool = False,
    **fields,
) -> RevisionLog:
    """Log (and count) a revision caused by `new`; `new_content` when the log must record
    text the memory does not hold yet (a manual revise, logged before the change)."""
    count_revision(trigger=trigger, decision=fields.get("decision"), fell_back=fell_back)
    return repository.add(
        session,
        namespace=new.namespace,
        trigger=trigger,
        new_memory_id=new.id,
        new_content=new.content if new_content is None else new_content,
        status=status,
        **fields,
    )


# --- actions -----------------------------------------------------------------------------


async def _apply_conflict(
    session: AsyncSession, revision: RevisionLog, new: Memory, old: Memory, *, at: datetime
) -> None:
    # The replacing memory is not cooled down: the next update in a chain must reach it.
    if await _change(session, old, _supersede(new, at=at), changed_by=tag(revision), at=at, then=(new, _set(supersedes=old.id))):
        memories.hold_edge(session, source=new.id, target=old.id, kind="supersedes", revision_id=revision.id)


async def _apply_duplicate(
    session: AsyncSession,
    revision: RevisionLog,
    new: Memory,
    old: Memory,
    *,
    at: datetime,
    settings: Settings,
) -> None:
    """Keep one: the more trusted, else the established memory, unless only the restatement
    carries a key (the key is what later same-key updates find it by)."""
    new_trust, old_trust = trust_of(new.source, settings), trust_of(old.source, settings)
    if new_trust != old_trust:
        kept, folded = (new, old) if new_trust > old_trust else (old, new)
    else:
        kept, folded = (new, old) if new.key and not old.key else (old, new)
    if await _change(session, folded, _supersede(kept, at=at), changed_by=tag(revision), at=at, then=(kept, _set(revised_at=at))):
        memories.hold_edge(session, source=kept.id, target=folded.id, kind="supersedes", revision_id=revision.id)


def _merged_text(judged: str | None, old: Memory, new: Memory, settings: Settings) -> str | None:
    """What a REFINE stores: the judge's merged text, else the rules' merge, if either is usable."""
    return _usable_merge(judged, settings) or _usable_merge(merge(old.content, new.content), settings)


def _joins_parts(content: str, old: Memory, new: Memory, *, model: str) -> bool:
    """Whether a merged text is the new memory's own text (an extension) or the rules' joining of
    the two texts, both memories embedded by `model`: its vector is then taken from theirs
    (`_from_parts`), not from the model."""
    joined = content == new.content.strip() or content == merge(old.content, new.content)
    return joined and old.embedding_model == new.embedding_model == model


async def _from_parts(session: AsyncSession, content: str, old: Memory, new: Memory, *, model: str) -> np.ndarray | None:
    """A merged memory's vector without the model, when its text allows: the new memory's own
    when the merge keeps the new text, else the normalised mean of the two memories' vectors
    when it joins both texts. The model's vector of two joined statements lies close to that
    mean (cosine 0.98 median, 0.91 at the least, over the consecutive memories of the updates
    benchmark's tuning split), and embedding it would cost about two passages of CPU each
    merge and, for a quick judge, letting the namespace lock go to wait for it. None when the
    model has to embed it: another text (an LLM judge's rewording), or a part embedded by
    another model."""
    if not _joins_parts(content, old, new, model=model):
        return None
    found = await memories.embeddings_of(session, [old.id, new.id])
    vectors = {memory_id: np.asarray(vector, dtype=np.float32) for memory_id, vector in found.items()}
    if content == new.content.strip():
        return vectors.get(new.id)
    if old.id not in vectors or new.id not in vectors:
        return None
    joined = vectors[old.id] + vectors[new.id]
    return joined / np.linalg.norm(joined)


def _usable_merge(merged: str | None, settings: Settings) -> str | None:
    """A judge's merged text is stored only if a write of it would be accepted."""
    if not merged or not merged.strip() or len(merged) > settings.max_content_chars or find_sensitive(merged):
        return None
    return merged


async def _apply_refine(
    session: AsyncSession,
    revision: RevisionLog,
    new: Memory,
    old: Memory,
    *,
    at: datetime,
    context: Context,
    merged_vectors: Mapping[str, np.ndarray],
) -> None:
    """One merged memory replaces both; when no merged text could be stored (too long, or holding
    sensitive data), both stay, linked as coexisting."""
    content = _merged_text(revision.merged_content, old, new, context.settings)
    if content is None:
        memories.hold_edge(session, source=new.id, target=old.id, kind="coexists", revision_id=revision.id)
        revision.decision = "COEXIST"
        revision.note = "; ".join(filter(None, [revision.note, "no merged text could be stored, so both stay"]))
        return
    embedding = merged_vectors.get(content)
    if embedding is None:  # from the two memories' vectors, else not embedded with the ruling (applied later)
        embedding = await _from_parts(session, content, old, new, model=context.embedder.name)
    if embedding is None:
        embedding = (await context.embedder.embed_passages([content]))[0]
    merged = records.new_memory(
        namespace=new.namespace,
        content=content,
        embedding=embedding,
        embedding_model=context.embedder.name,
        created_at=at,
        updated_at=datetime.now(timezone.utc),
        key=new.key or old.key,
        memory_type=new.memory_type if new.memory_type == old.memory_type else "semantic",
        confidence=max(new.confidence, old.confidence),
        importance=max(new.importance, old.importance),
        session_id=new.session_id,
        # A merge is as trustworthy as the less trusted of what it merges.
        source={
            "revision_id": str(revision.id),
            "kind": kind_of(min((new.source, old.source), key=lambda source: trust_of(source, context.settings))),
        },
        metadata={**old.metadata_, **new.metadata_},
    )
    merged.supersedes = old.id
    merged = await memories.insert(session, merged)
    memories.add_version(session, merged, changed_by=tag(revision), at=at)
    revision.merged_memory_id = merged.id
    revision.merged_content = content
    for replaced in (old, new):
        if await _change(session, replaced, _supersede(merged, at=at), changed_by=tag(revision), at=at):
            memories.hold_edge(session, source=merged.id, target=replaced.id, kind="refines", revision_id=revision.id)


async def apply(
    session: AsyncSession,
    revision: RevisionLog,
    new: Memory,
    old: Memory,
    *,
    context: Context,
    merged_vectors: Mapping[str, np.ndarray] | None = None,
) -> None:
    """Apply a judgement; `merged_vectors` holds the embeddings of merged texts computed with
    the ruling, before the lock was taken."""
    at = new.created_at
    # Settled before the actions (a REFINE that falls back to COEXIST changes it again); a new log
    # row is written behind, after them, as it ends.
    revision.status = "applied" if revision.decision != "UNRELATED" else "logged"
    revision.resolved_at = datetime.now(timezone.utc)
    if revision.decision == "CONFLICT":
        await _apply_conflict(session, revision, new, old, at=at)
    elif revision.decision == "DUPLICATE":
        await _apply_duplicate(session, revision, new, old, at=at, settings=context.settings)
    elif revision.decision == "REFINE":
        await _apply_refine(
            session, revision, new, old, at=at, context=context, merged_vectors=merged_vectors or {}
        )
    elif revision.decision == "COEXIST":
        memories.hold_edge(session, source=new.id, target=old.id, kind="coexists", revision_id=revision.id)


# --- triggers and judgement ------------------------------------------------------------------


async def _same_key(
    session: AsyncSession, new: Memory, olds: list[Memory], *, context: Context
) -> list[RevisionLog]:
    """A newer memory with the key of an active one replaces it, no judge asked."""
    revisions = []
    for old in olds:
        episodic = old.memory_type == "episodic"
        held = None if episodic else outranked(new, old, context.settings)
        revision = await log_revision(
            session,
            new,
            trigger="same_key",
            status="pending",
            old_memory_id=old.id,
            similarity=None,
            decision="COEXIST" if episodic else "CONFLICT",
            reason="same key" + ("; an episodic memory is history and is linked, not superseded" if episodic else ""),
            confidence=1.0,
            judge="rules",
            note=held,
        )
        if held:
            await _hold(session, revision, new, old, uncertain=True)
        else:
            await apply(session, revision, new, old, context=context)
        revisions.append(revision)
    return revisions


async def triggered(
    session: AsyncSession,
    new: Memory,
    *,
    embedding: np.ndarray,
    context: Context,
    exclude: list[UUID],
    periodic: bool = False,
    scanned: Scan | None = None,
    judged: set[UUID] | None = None,
) -> list[Triggered]:
    """The nearest active semantic/working memories of the namespace worth judging: above the
    strong threshold, or, when the new text carries a correction cue, the nearest few. Only
    memories no newer than this one: a memory never revises what was written after it (an
    import of an old fact, a deferred job that runs late). Read from `scanned` (a neighbour scan
    made under the same lock hold: rows this hold has superseded since are passed over) when it
    holds them all, else scanned here; what the memory was `judged` against before, when read
    already, else read here."""
    settings = context.settings
    wanted = max(settings.strong_trigger_candidates, settings.weak_trigger_candidates)
    excluded = {new.id, *exclude}
    nearest = None
    if scanned is not None:
        nearest = [
            (memory, similarity)
            for memory, similarity in scanned.rows
            if memory.id not in excluded
            and memory.status == "active"
            and memory.memory_type in repository.REVISABLE_TYPES
            and memory.created_at <= new.created_at
        ][:wanted]
        if len(nearest) < wanted and not scanned.complete:
            nearest = None  # others may rank beyond what the scan read
    if nearest is None:
        nearest = await memories.nearest_active(
            session,
            namespace=new.namespace,
            embedding=embedding,
            limit=wanted,
            exclude=list(excluded),
            memory_types=repository.REVISABLE_TYPES,
            not_after=new.created_at,
            approximate=memories.namespace_size(session, new.namespace) > settings.neighbour_scan_exact_max,
        )
    cue = change_cue(new.content)
    if judged is None:
        # A memory not stored yet was judged against nothing.
        judged = (await repository.judged_against(session, [new.id]))[new.id] if inspect(new).persistent else set()
    best = nearest[0][1] if nearest else 0.0
    chosen: list[Triggered] = []
    for rank, (memory, similarity) in enumerate(nearest):
        if memory.id in judged or _cooling(memory, at=new.created_at, settings=settings):
            continue
        strong = similarity >= max(settings.strong_trigger_threshold, best - settings.strong_trigger_margin)
        if rank < settings.strong_trigger_candidates and strong:
            chosen.append(Triggered(memory, similarity, "periodic" if periodic else "strong"))
        elif cue and rank < settings.weak_trigger_candidates and similarity >= settings.weak_trigger_floor:
            chosen.append(Triggered(memory, similarity, "periodic" if periodic else "weak"))
    return chosen


def _guarded(judgement: Judgement, new: Memory, old: Memory) -> tuple[Judgement, str | None]:
    """Rails no judge may cross: history is never superseded, plans never replace facts."""
    if judgement.decision not in ACTIONS:
        return judgement, None
    if old.memory_type == "episodic":
        reason = "an episodic memory is history: linked, not superseded"
    elif is_future_plan(new.content) and not is_future_plan(old.content):
        reason = "a plan for the future does not replace a current fact"
    else:
        return judgement, None
    softened = Judgement(memory_id=judgement.memory_id, decision="COEXIST", confidence=judgement.confidence, reason=judgement.reason)
    return softened, reason


@dataclass(frozen=True, slots=True)
class Ruled:
    """A judge's ruling on a memory's candidates, asked with no lock held, with what it was
    asked about (each candidate's id and version) and the embeddings of the merged texts its
    REFINEs would store."""

    seen: tuple[tuple[UUID, int, str], ...]
    ruling: Ruling
    merged_vectors: dict[str, np.ndarray]


def _seen(triggered: list[Triggered]) -> tuple[tuple[UUID, int, str], ...]:
    return tuple((item.memory.id, item.memory.version, item.trigger) for item in triggered)


def still_holds(ruled: Ruled | None, triggered: list[Triggered]) -> bool:
    """The ruling was made on exactly these candidates and none changed since (the optimistic lock)."""
    return ruled is not None and ruled.seen == _seen(triggered)


def _merged_texts(new: Memory, triggered: list[Triggered], ruling: Ruling, *, context: Context) -> list[str]:
    """The texts the ruling's REFINEs would store that the model has to embed, each once: they
    are embedded before it is applied (a text joining the two memories' is not: `_from_parts`).
    A REFINE under the confidence threshold is held, not applied (`judge_and_apply`): its merge
    is embedded if it is ever applied."""
    texts = []
    settings = context.settings
    for item, judgement in zip(triggered, ruling.items, strict=True):
        if (
            judgement.decision == "REFINE"
            and judgement.confidence >= settings.revision_confidence_threshold
            and (content := _merged_text(judgement.merged_content, item.memory, new, settings))
            and not _joins_parts(content, item.memory, new, model=context.embedder.name)
        ):
            texts.append(content)
    return list(dict.fromkeys(texts))


async def _ask(new: Memory, triggered: list[Triggered], *, context: Context) -> Ruling:
    return await context.judge.rule(
        _judged(new), [Candidate(memory=_judged(item.memory), similarity=item.similarity) for item in triggered]
    )


async def rule(new: Memory, triggered: list[Triggered], *, context: Context) -> Ruled:
    """Ask the judge about the candidates and embed any merged text its REFINEs would store:
    the slow part of a revision, which no lock may be held across."""
    ruling = await _ask(new, triggered, context=context)
    texts = _merged_texts(new, triggered, ruling, context=context)
    vectors = list(await context.embedder.embed_passages(texts)) if texts else []
    return Ruled(_seen(triggered), ruling, dict(zip(texts, vectors, strict=True)))


async def rule_under_lock(new: Memory, triggered: list[Triggered], *, context: Context) -> Ruled | None:
    """The ruling a quick judge (the rules) makes with the namespace lock held; None when it has
    to be made with the lock let go (`rule`): the judge is slow, or a REFINE it rules needs its
    merged text embedded."""
    if context.judge.slow:
        return None
    ruling = await _ask(new, triggered, context=context)
    if _merged_texts(new, triggered, ruling, context=context):
        return None
    return Ruled(_seen(triggered), ruling, {})


async def judge_and_apply(
    session: AsyncSession,
    new: Memory,
    triggered: list[Triggered],
    *,
    context: Context,
    ruled: Ruled | None = None,
) -> list[RevisionLog]:
    """Apply the judge's ruling on the candidates: `ruled` if it still holds, else asked now."""
    if not triggered:
        return []
    if not still_holds(ruled, triggered):
        ruled = await rule(new, triggered, context=context)
    ruling = ruled.ruling
    threshold = context.settings.revision_confidence_threshold
    # A new memory may supersede several outdated ones, but once it is folded away (a
    # restatement, or merged) nothing else it said needs acting on: the surest judgement wins.
    by_confidence = sorted(zip(triggered, ruling.items, strict=True), key=lambda pair: -pair[1].confidence)
    folded = False
    revisions = []
    for item, judgement in by_confidence:
        judgement, softened = _guarded(judgement, new, item.memory)
        confident = judgement.confidence >= threshold
        takes_action = judgement.decision in ACTIONS
        # A restatement folds into what it restates whoever said it; anything else a less
        # trusted or less confident memory would do waits for review.
        held = outranked(new, item.memory, context.settings) if takes_action and judgement.decision != "DUPLICATE" else None
        notes = [note for note in (ruling.note, softened, held) if note]
        if takes_action and folded:
            notes.append("the new memory was already folded into another")
        elif takes_action and not confident and not held:
            notes.append(f"confidence {judgement.confidence:.2f} is under the threshold {threshold:.2f}: both stay, linked")
        revision = await log_revision(
            session,
            new,
            trigger=item.trigger,
            status="pending",
            old_memory_id=item.memory.id,
            similarity=item.similarity,
            decision=judgement.decision,
            reason=judgement.reason,
            confidence=judgement.confidence,
            # Shown in /debug/revisions and applied later: kept only if a write of it would be.
            merged_content=_usable_merge(judgement.merged_content, context.settings),
            judge=ruling.decided_by,
            llm_prompt=ruling.prompt,
            llm_response=ruling.response,
            note="; ".join(notes) or None,
            fell_back=ruling.fell_back,
        )
        revisions.append(revision)
        if takes_action and folded:
            revision.status = "logged"
        elif takes_action and (held or not confident):
            await _hold(session, revision, new, item.memory, uncertain=bool(held))
        else:
            await apply(session, revision, new, item.memory, context=context, merged_vectors=ruled.merged_vectors)
            folded = folded or judgement.decision in ("DUPLICATE", "REFINE")
    return revisions


@dataclass(frozen=True, slots=True)
class Triggers:
    """What a memory's write-time triggers found: the active memories with its key (replaced
    with no judge asked) and the candidates to judge."""

    same_key: list[Memory]
    candidates: list[Triggered]


async def find_triggers(
    session: AsyncSession, new: Memory, *, embedding: np.ndarray, context: Context, scanned: Scan | None = None
) -> Triggers:
    """The write-time triggers of a memory, stored or about to be (the namespace lock is held)."""
    if new.source.get("revision_id"):
        return Triggers([], [])  # a revision's own output never re-triggers revision
    olds = []
    if new.key:
        olds = await repository.active_with_key(
            session, namespace=new.namespace, key=new.key, exclude=new.id, not_after=new.created_at
        )
    candidates = await triggered(
        session, new, embedding=embedding, context=context, exclude=[old.id for old in olds], scanned=scanned
    )
    return Triggers(olds, candidates)


async def revise_new_memory(
    session: AsyncSession,
    new: Memory,
    *,
    embedding: np.ndarray,
    context: Context,
    triggers: Triggers | None = None,
    ruled: Ruled | None = None,
) -> list[RevisionLog]:
    """Run every write-time trigger for a memory just stored (the namespace lock is held), with
    the triggers found and the ruling made on them beforehand when given."""
    if triggers is None:
        triggers = await find_triggers(session, new, embedding=embedding, context=context)
    revisions = await _same_key(session, new, triggers.same_key, context=context)
    revisions += await judge_and_apply(session, new, triggers.candidates, context=context, ruled=ruled)
    return revisions


@dataclass(frozen=True, slots=True)
class Reviewed:
    """What a review read about one of its memories under the namespace lock: its vector, its
    neighbour scan and the memories it was judged against before."""

    embedding: np.ndarray
    scan: Scan
    judged: set[UUID]


async def read_for_review(session: AsyncSession, pending: list[Memory], *, context: Context) -> dict[UUID, Reviewed | None]:
    """The candidates of several memories a review has to judge, read at once (four
    statements, not four a memory). None for a memory no longer active; the rows come back
    fresh."""
    if not pending:
        return {}
    settings = context.settings
    namespace = pending[0].namespace
    approximate = memories.namespace_size(session, namespace) > settings.neighbour_scan_exact_max
    # Through the index, how deep the scan goes depends on its limit: it asks for what
    # `triggered` would, so it finds the same candidates (fewer left after a supersede in this
    # hold are read again there). An exact scan reads spare rows instead.
    limit = max(settings.strong_trigger_candidates, settings.weak_trigger_candidates) + (0 if approximate else SCAN_SPARE)
    scans = await memories.nearest_active_each(
        session,
        namespace=namespace,
        probes=[memory.id for memory in pending],
        limit=limit,
        memory_types=repository.REVISABLE_TYPES,
        approximate=approximate,
    )
    embeddings = await memories.embeddings_of(session, list(scans))
    judged = await repository.judged_against(session, list(scans))
    return {
        memory.id: Reviewed(embeddings[memory.id], Scan(scans[memory.id], complete=len(scans[memory.id]) < limit), judged[memory.id])
        if memory.id in scans
        else None
        for memory in pending
    }


async def needs_review(session: AsyncSession, memory: Memory, reviewed: Reviewed, *, context: Context) -> bool:
    """Whether a review has a candidate to judge for this memory, from what `read_for_review`
    read; no lock is needed to find none (`revise_stored` reads the candidates again under it)."""
    if memory.status != "active":
        return False  # superseded (or held for review) earlier in this pass
    candidates = await triggered(
        session,
        memory,
        embedding=reviewed.embedding,
        context=context,
        exclude=[],
        periodic=True,
        scanned=reviewed.scan,
        judged=reviewed.judged,
    )
    return bool(candidates)


async def revise_stored(
    session: AsyncSession, memory: Memory, *, embedding: np.ndarray, context: Context, periodic: bool = False
) -> list[RevisionLog]:
    """Revise a memory already stored (the queue's worker, a review). Its candidates are read
    under the namespace lock and judged there by a quick judge; a slow judge, or a merge to
    embed, gets the lock released (the transaction commits: call it with nothing else pending)
    and the ruling is applied under the lock again if the candidates still stand; else judged
    again, the last attempt under the lock. The lock is held on return."""
    ruled = None
    attempts = context.settings.revision_judge_attempts
    for attempt in range(attempts):
        await memories.lock_namespace(session, memory.namespace)
        await session.refresh(memory)
        if memory.status != "active":
            return []
        if periodic:
            candidates = await triggered(session, memory, embedding=embedding, context=context, exclude=[], periodic=True)
            found = Triggers([], candidates)
        else:
            found = await find_triggers(session, memory, embedding=embedding, context=context)
        if found.candidates and attempt < attempts - 1 and not still_holds(ruled, found.candidates):
            ruled = await rule_under_lock(memory, found.candidates, context=context)
            if ruled is None:
                await session.commit()  # releases the lock while the judge thinks or a merge is embedded
                ruled = await rule(memory, found.candidates, context=context)
                continue
        return await revise_new_memory(session, memory, embedding=embedding, context=context, triggers=found, ruled=ruled)
    return []  # not reached: the last attempt applies

from functools import partial
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from app.core.background import Background
from app.core.dependencies import Sessions
from app.namespaces.tracking import after_commit
from app.revisions import queue
from app.revisions.operations import periodic_review
from app.revisions.service import Context


def _review_after_commit(background: Background, sessions: Sessions, context: Context, session: Session, namespace: str) -> None:
    """Inline mode: the review starts once the write that made it due has committed, in the
    background, never inside the client's write."""

    def start() -> None:
        background.start(("review", namespace), partial(periodic_review, sessions, namespace=namespace, context=context))

    after_commit(session, start)


def context_of(state: Any) -> Context:
    """The revision context of an app's state (requests, and jobs running beside them)."""
    context = Context(judge=state.judge, embedder=state.embedder, settings=state.settings)
    if state.settings.revision_mode == "async":
        context.defer, context.review_later = queue.defer, queue.defer_review
    else:
        context.review_later = partial(_review_after_commit, state.background, state.sessions, context)
    return context


def get_revision_context(request: Request) -> Context:
    return context_of(request.app.state)


RevisionContextDep = Annotated[Context, Depends(get_revision_context)]

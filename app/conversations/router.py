from fastapi import APIRouter, status
from fastapi.responses import JSONResponse

from app.conversations import service
from app.conversations.messages import Runtime
from app.conversations.schemas import ConversationResult, ConversationWrite
from app.core.auth import AccessDep
from app.core.dependencies import SessionsDep
from app.core.errors import RateLimited, Unprocessable, problem_responses
from app.idempotency.middleware import IDEMPOTENT
from app.jobs.dependencies import JobsDep
from app.jobs.schemas import JobAccepted, JobOut
from app.memories.dependencies import WriteRateDep
from app.memories.write_rate import writer
from app.revisions.dependencies import RevisionContextDep

router = APIRouter(prefix="/v1/conversations", tags=["conversations"])


@router.post(
    "",
    response_model=ConversationResult,
    responses={
        202: {"model": JobAccepted, "description": "A long conversation continues as a job: poll `GET /v1/jobs/{id}`."},
        **problem_responses(Unprocessable, RateLimited),
    },
    dependencies=[IDEMPOTENT],
)
async def remember_conversation(
    body: ConversationWrite,
    context: RevisionContextDep,
    sessions: SessionsDep,
    jobs: JobsDep,
    access: AccessDep,
    write_rate: WriteRateDep,
) -> JSONResponse:
    """Keep every message as an episodic memory, extract keyed memories from them and update the
    session's working memory; conversations longer than the inline limit run as a job (202)."""
    access.check(body.namespace)
    async with sessions() as session:
        await write_rate.admit(session, [writer(access, body.session_id, body.namespace)])
    outcome = await service.remember(Runtime(sessions=sessions, context=context), body, jobs=jobs)
    if isinstance(outcome, ConversationResult):
        return JSONResponse(outcome.model_dump(mode="json"))
    accepted = JobAccepted(job=JobOut.of(outcome))
    return JSONResponse(
        accepted.model_dump(mode="json"),
        status_code=status.HTTP_202_ACCEPTED,
        headers={"Location": f"/v1/jobs/{outcome.id}"},
    )

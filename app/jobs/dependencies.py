from typing import Annotated

from fastapi import Depends, Request

from app.jobs.runner import JobRunner


def get_jobs(request: Request) -> JobRunner:
    return request.app.state.jobs


JobsDep = Annotated[JobRunner, Depends(get_jobs)]

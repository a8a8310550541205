from typing import Annotated

from fastapi import Depends, Request

from app.memories.write_rate import WriteRate


def get_write_rate(request: Request) -> WriteRate:
    return request.app.state.write_rate


WriteRateDep = Annotated[WriteRate, Depends(get_write_rate)]

from typing import Annotated

from fastapi import Path

from app.memories.schemas import NAMESPACE_PATTERN

NamespacePath = Annotated[
    str, Path(min_length=1, max_length=200, pattern=NAMESPACE_PATTERN, description="The namespace, e.g. `user:u1`.")
]

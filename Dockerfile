# One image runs the API, the MCP gateway, the revision worker and migrations.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /srv/hindsight
COPY pyproject.toml constraints.txt README.md alembic.ini ./
COPY app ./app
COPY migrations ./migrations
RUN pip install --no-cache-dir -c constraints.txt .

EXPOSE 8000
# The same entry point as `make run`: migrate, then serve.
CMD ["python", "-m", "app", "serve", "--host", "0.0.0.0", "--port", "8000"]

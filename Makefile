# Two commands matter: `make run` (serve the API and the MCP gateway) and `make test`.
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed-stamp
# litellm must never fetch its model cost map: this service runs offline.
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install run test bench load fuzz

$(INSTALLED): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $(INSTALLED)

install: $(INSTALLED)

# In the foreground until Ctrl-C (or SIGTERM to the API): the gateway calls the API started here.
# WORKERS=N serves N API processes on the port; the first process migrates once before they start.
run: install
	@$(PY) -m app serve $(if $(WORKERS),--workers $(WORKERS)) & api=$$!; \
	$(PY) -m app.gateway --api-url "$$($(PY) -m app api-url)" & gateway=$$!; \
	trap 'kill $$api $$gateway 2>/dev/null' INT TERM EXIT; \
	wait $$api

test: install
	$(PY) -m pytest -q

# The evaluation data is found at ../shared/bench; DATA=DIR points elsewhere.
bench: install
	$(PY) -m app.bench $(if $(DATA),--data $(DATA))

# N clients against the real service on its own database; FAULT=1 kills PostgreSQL mid-run;
# WORKERS=N runs the same load against one API process, then N on the same database.
load: install
	$(PY) -m app.bench.load $(if $(CLIENTS),--clients $(CLIENTS)) $(if $(SECONDS),--seconds $(SECONDS)) $(if $(FAULT),--fault) $(if $(WORKERS),--workers $(WORKERS))

# schemathesis against the running service's OpenAPI schema; SEED, EXAMPLES (per operation) and SCENARIOS (stateful) vary the run.
fuzz: install
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[fuzz]'
	$(PY) -m app.bench.fuzz $(if $(SEED),--seed $(SEED)) $(if $(EXAMPLES),--max-examples $(EXAMPLES)) $(if $(SCENARIOS),--scenarios $(SCENARIOS))

# Two commands matter: `make run` (serve the API and the MCP gateway) and `make test`.
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed-stamp
# litellm must never fetch its model cost map: this service runs offline.
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install run test chromium bench load fuzz

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

test: install chromium
	$(PY) -m pytest -q

# The viewer's browser tests drive the system's Chromium through Playwright (no browser is
# downloaded): on Debian the package is installed when missing; elsewhere install it by hand,
# or point HINDSIGHT_TEST_CHROMIUM at a Chromium binary.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
chromium:
	@if [ -n "$$HINDSIGHT_TEST_CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		exit 0; \
	elif [ -r /etc/debian_version ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's chromium for the viewer's browser tests"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "The viewer's browser tests need Chromium: install your system's chromium package" \
			"(or set HINDSIGHT_TEST_CHROMIUM to a Chromium binary), then run make test again." >&2; \
		exit 1; \
	fi

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

"""hindsight: long-term memory for LLM agents that corrects itself after the fact."""

import os
from importlib.metadata import version

# litellm fetches its model cost map over the network at import unless told not to; hindsight
# runs offline, and every module importing litellm is inside this package, so this runs first.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# The installed distribution's version: what the API and the MCP gateway report.
__version__ = version("hindsight")

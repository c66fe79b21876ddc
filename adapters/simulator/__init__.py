"""A faithful local stand-in for the Anthropic Messages and Message Batches HTTP API.

The real `anthropic` SDK talks to it through `base_url`, either in-process (`sim_client`, `SimTransport`)
or over loopback HTTP (`serve`, `run_server_forever`). `Simulator` is the deterministic logic; `Scenario`
holds its knobs; `ManualClock` is a fake clock for tests.
"""

from .answers import MARKERS, count_input_tokens, forced_outcome
from .cli import add_arguments, scenario_from_args
from .clock import ManualClock
from .logic import BatchView, LogEntry, Simulator
from .scenario import BATCH_OUTCOMES, CREATE_FAULTS, DEFAULT_MODELS, SYNC_FAULTS, Scenario
from .server import ServerHandle, run_server_forever, serve
from .transport import DEFAULT_BASE_URL, SimTransport, sim_client
from .wire import SimRequest, SimResponse

__all__ = [
    "BATCH_OUTCOMES",
    "CREATE_FAULTS",
    "DEFAULT_BASE_URL",
    "DEFAULT_MODELS",
    "MARKERS",
    "SYNC_FAULTS",
    "BatchView",
    "LogEntry",
    "ManualClock",
    "Scenario",
    "ServerHandle",
    "SimRequest",
    "SimResponse",
    "SimTransport",
    "Simulator",
    "add_arguments",
    "count_input_tokens",
    "forced_outcome",
    "run_server_forever",
    "scenario_from_args",
    "serve",
    "sim_client",
]

"""The live runner: tasks x policy x proposer, every attempt recorded to a trace."""

from live.runner.config import PROFILE_MODES, RunConfig, load_config_file
from live.runner.runner import LiveRunner, RunResult, TaskSummary, run_live

__all__ = ["PROFILE_MODES", "LiveRunner", "RunConfig", "RunResult", "TaskSummary",
           "load_config_file", "run_live"]

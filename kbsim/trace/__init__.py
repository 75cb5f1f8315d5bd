"""Trace datasets (schema v1): pyarrow schemas, durable writer, validating reader, merge."""

from kbsim.trace.merge import merge_traces
from kbsim.trace.reader import TraceData, TraceError, load_trace, validate_trace
from kbsim.trace.schema import (
    KERNELS_SCHEMA,
    RESULTS_SCHEMA,
    SCHEMA_VERSION,
    STATUSES,
    STEPS_SCHEMA,
)
from kbsim.trace.synthetic_trace import write_synthetic_trace
from kbsim.trace.writer import TraceWriter

__all__ = [
    "KERNELS_SCHEMA",
    "RESULTS_SCHEMA",
    "SCHEMA_VERSION",
    "STATUSES",
    "STEPS_SCHEMA",
    "TraceData",
    "TraceError",
    "TraceWriter",
    "load_trace",
    "merge_traces",
    "validate_trace",
    "write_synthetic_trace",
]

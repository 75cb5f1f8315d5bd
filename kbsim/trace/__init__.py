"""Trace datasets (schema v1): pyarrow schemas, durable writer, validating reader, merge."""

from kbsim.trace.schema import (
    KERNELS_SCHEMA,
    RESULTS_SCHEMA,
    SCHEMA_VERSION,
    STATUSES,
    STEPS_SCHEMA,
)

__all__ = ["KERNELS_SCHEMA", "RESULTS_SCHEMA", "SCHEMA_VERSION", "STATUSES", "STEPS_SCHEMA"]

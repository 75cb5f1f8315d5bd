"""The gold-vs-gold check: a task's k0 judged against its own reference, as any candidate is.

- `live.gold.load`: loading a benchmark's tasks behind their checks (parent side): the cache,
  the checks in parallel sandboxed workers with their retries, plain-script runs of failures,
  ``Skipped`` records; one `GoldLoad` holds a load's state;
- `live.gold.judge`: one task's check in a worker (``gold_check_in_worker``, per-shape
  verdicts; one `Judgement` per check);
- `live.gold.cache`: the on-disk cache of check results and its key;
- `live.gold.suite`: ``kernelband tasks check``: every task's k0 through the evaluator, and the
  machine's reference timings.

The package imports the evaluator's pieces it runs on (`live.evaluator`) and the records of a
load (`live.tasks.skips`), never a task source; a source imports it (`live.tasks.tritonbench`).
This module imports nothing, so that importing one part does not import the others
(`tests/live/test_import_layers.py`).
"""

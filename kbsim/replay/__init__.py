"""Replay: policies x tasks x seeds against recorded or synthetic environments, compiled.

- `sweep.run_sweep(policies, envs, seeds, steps, out=...)`: the Python entry point (Parquet
  results, summary, progress bar);
- `engine`: the numba episode loop, compiled per (policy family, env kind) (`compiled_worker`);
- `chunks`: runs a chunk of episodes on worker threads (`run_chunk`), compiles workers first;
- the policy RNG every live run and replay must use: `kbsim.rng.policy_rng(seed, task_id)`;
- `record.record_trace`: the live step loop over an environment, writing a trace;
- `presets`: named policy grids (paper-ablation, baselines, k-sweep); `summary`: the table.
"""

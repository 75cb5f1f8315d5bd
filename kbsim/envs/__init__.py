"""Replay environments, compiled to one array type (`data.EnvData`).

- `synthetic.build_synthetic(spec)`: planted clusters, Lipschitz constant, noise, failures,
  a planted roofline (floor runtime; `roofline=0` disables it), exact means (spec strings
  documented in `kbsim.envs.synthetic`);
- `tape.build_tape(steps, kernels, on_exhaust=...)`: recorded outcomes in order; ratios drawn
  from a stand-in tape bounded by the same floor (NOTE D47);
- `fitted.build_fitted(steps, kernels, knn=...)`: a nearest-neighbour model, unlimited horizon,
  children never faster than the task's fastest recorded correct runtime (NOTE D46);
- `registry.build_env(name, source)`: the one name -> builder map (`ENVIRONMENTS`: tape, fitted,
  synthetic); the CLI, the demo and sim-to-real build through it, and its `kind` is what the
  replay engine is compiled for;
- `recorded.load_tables(paths)`: a trace's (steps, kernels) tables, validated;
- `reveal`: when a replayed v2 sees Nsight Compute signatures (issue 15): the tape and fitted
  builders take ``reveals=`` (`kbsim.trace.reveals.load_reveals`) and ``reveal=`` (``recorded``,
  ``delays``, ``lag:N``, ``at-once``), the roofline signature shown until then;
- `step`: the compiled env interface (`env_init`, `env_step`, `env_on_add`, `env_reveal_hw`).
"""

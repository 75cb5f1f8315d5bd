"""Replay environments, compiled to one array type (`data.EnvData`).

- `synthetic.build_synthetic(spec)`: planted clusters, Lipschitz constant, noise, failures,
  exact means (spec strings documented in `kbsim.envs.synthetic`);
- `tape.build_tape(steps, kernels, on_exhaust=...)`: recorded outcomes in order;
- `fitted.build_fitted(steps, kernels, knn=...)`: a nearest-neighbour model, unlimited horizon;
- `recorded.load_tables(paths)`: a trace's (steps, kernels) tables, validated;
- `step`: the compiled env interface (`env_init`, `env_step`, `env_on_add`, `env_reveal_hw`).
"""

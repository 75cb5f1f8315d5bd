"""live: the kernel lab (tasks, evaluator, profiler), proposers, runner and backends."""

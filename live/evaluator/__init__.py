"""evaluator."""

"""analysis: regret and bound checks, Lipschitz and covering estimates, cluster validity,
tables, plots and the HTML report."""

"""Results: a solved plan as plain data (PlanResult), its JSON, baselines and comparisons."""

"""Physics: memory fit, KV cache, replicas and goodput at an SLO. Pure: no solver, no files."""

"""Candidates: every workload × offer × precision × parallelism config, the dropped ones with reasons."""

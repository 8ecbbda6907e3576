"""The planning loop: usage logs, load tests and occupancy fed back into the plan."""

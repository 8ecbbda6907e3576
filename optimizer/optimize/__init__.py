"""Optimize: the contract calendar, the integer program, the solvers, the solve strategy and its Solution."""

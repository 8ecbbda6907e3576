"""Optimize: the contract calendar, the integer program, the solvers, the solve strategy and its named steps (steps/),
the work they did (work.py) and its Solution."""

"""The named steps of a solve, in the order strategy.py runs them:
relax → round → search → settle → tidy → price.
Each takes what it works on and the SolvePolicy it reads (run.py's Run, or a `policy` argument), so it can be run
and tested alone."""

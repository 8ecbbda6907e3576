"""Studies: one plan solved many times to answer a question about it.

    value    what deciding under uncertainty is worth (the mean-scenario plan, each scenario's regret) and what
             one more MW or rack position would save: side solves the pipeline runs with each plan
    sweep    the plan solved at many points, each a few inputs moved (sensitivity), on optimizer.parallel's engines

value sits below the pipeline (solve_plan runs it), sweep above it (each point is a solve_plan); this module
imports neither, so importing one does not load the other.
"""

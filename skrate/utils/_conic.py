"""Settings for the small convex problems skrate hands to cvxpy."""

# Clarabel, named: cvxpy's default choice depends on its version and on the solvers installed
# (ECOS with a FutureWarning in cvxpy 1.4), and Clarabel's default tolerances (1e-8) leave
# the optimum of a small problem up to about 1e-7 off, visibly so next to closed forms.
CLARABEL = dict(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)

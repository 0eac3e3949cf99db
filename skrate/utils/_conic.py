"""Settings for the small convex problems skrate hands to cvxpy."""

# Tolerances for Clarabel, which skrate names rather than leave the choice to cvxpy (ECOS with
# a FutureWarning in cvxpy 1.4): its defaults (1e-8) leave the optimum of a small problem up to
# about 1e-7 off, visibly so next to closed forms.
CLARABEL_TOLERANCES = dict(tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)

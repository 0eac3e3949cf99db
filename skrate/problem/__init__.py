"""The compiled problem: rates of a model as one sparse matrix product."""

from ._cells import CellMatrix, CellVectors
from ._compile import RateData, RateProblem, compile_expressions, compile_factored, compile_problem, expand_constraints
from ._evaluate import (constraint_rows, constraint_violation, evaluate_term, ratio_value, report_rows,
                        reported_rates, violation_rows, zero_denominator_reason)
from ._feasibility import least_largest, least_violation, ratio_bound_out_of_range
from ._groups import GroupTable
from ._margins import confidence_margins, excess_in_own_units, in_own_units, simultaneous_margins, tightened

__all__ = ["CellMatrix", "CellVectors", "GroupTable", "least_largest", "least_violation", "ratio_bound_out_of_range", "confidence_margins", "simultaneous_margins", "in_own_units", "excess_in_own_units", "tightened", "constraint_rows", "constraint_violation", "evaluate_term", "ratio_value", "report_rows", "reported_rates", "violation_rows", "zero_denominator_reason", "RateData", "RateProblem", "compile_expressions", "compile_factored", "compile_problem", "expand_constraints"]

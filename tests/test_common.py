"""scikit-learn's estimator checks over every public skrate estimator."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skrate.utils import all_estimators


def _instances():
    """Every estimator with default parameters, plus configurations that change the code path."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skrate import (AUCClassifier, ConstrainedClassifier, DROClassifier, DRORegressor, MetricOptimizer,
                        TrimmedClassifier, TrimmedRegressor)

    extra = [
        ConstrainedClassifier(constraints="tpr >= 0.6", solution="best", max_iter=200),
        ConstrainedClassifier(constraints=["ppr >= 0.3"], model="mlp", batch_size=16, solution="last", max_iter=100),
        ConstrainedClassifier(estimator=LogisticRegression(), solver="oracle_proxy_lagrangian",
                              constraints="tpr >= 0.6", solution="best"),
        ConstrainedClassifier(estimator=make_pipeline(StandardScaler(), HistGradientBoostingClassifier(max_iter=5)),
                              solver="oracle_lagrangian", constraints="ppr >= 0.3", max_iter=5),
        MetricOptimizer(metric="f1", max_iter=100),
        MetricOptimizer(metric="g_mean", solver="three_player", max_iter=100),
        MetricOptimizer(metric="g_mean", estimator=LogisticRegression()),
        AUCClassifier(solver="exact"),
        AUCClassifier(solver="spam", penalty="elasticnet", max_iter=5),
        DRORegressor(divergence="kl", solver="sgd"),
        DROClassifier(divergence="kl", solver="sgd"),
        TrimmedClassifier(solver="alternating"),
        TrimmedRegressor(variance_reduction="svrg", block="random", penalty="l1"),
    ]
    return [cls() for _, cls in all_estimators()] + extra


def test_estimators_are_discovered():
    import skrate

    names = {name for name, _ in all_estimators()}
    exported = {n for n in skrate.__all__ if n.endswith(("Classifier", "Regressor", "Optimizer"))}
    assert names == exported


@parametrize_with_checks(_instances())
def test_sklearn_compatible(estimator, check):
    check(estimator)

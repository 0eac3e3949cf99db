"""scikit-learn's estimator checks over every public skrate estimator."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skrate.utils import all_estimators


def _instances():
    """Every estimator with default parameters, plus configurations that change the code path."""
    from sklearn.linear_model import LogisticRegression

    from skrate import ConstrainedClassifier

    extra = [
        ConstrainedClassifier(constraints="tpr >= 0.6", solution="best", max_iter=200),
        ConstrainedClassifier(constraints=["ppr >= 0.3"], model="mlp", batch_size=16, solution="last", max_iter=100),
        ConstrainedClassifier(estimator=LogisticRegression(), solver="oracle_proxy_lagrangian",
                              constraints="tpr >= 0.6", solution="best"),
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

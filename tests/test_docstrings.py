"""The public API's docstrings: their examples run, and they follow numpydoc.

Every name a package exports (its ``__all__``), and the public methods and properties its
classes define, are read here; the API reference documents the same names.
"""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest
from numpydoc.validate import validate

PACKAGES = ["skrate", "skrate.rates", "skrate.generalized", "skrate.metrics",
            "skrate.model_selection", "skrate.datasets", "skrate.problem", "skrate.models",
            "skrate.solutions", "skrate.solvers", "skrate.exceptions", "skrate.utils"]

# numpydoc's checks held to: parameters documented (PR01, PR02) and described (PR07), a
# Returns section where a value is returned (RT01), sections in order (GL07), See Also entries
# described (SA04), a one-line summary (SS01), no unknown sections (GL06)
CHECKS = {"PR01", "PR02", "PR07", "RT01", "GL06", "GL07", "SA04", "SS01"}


def _public_names() -> list[str]:
    names = []
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or callable(obj)):
                continue  # constants carry their type's docstring
            names.append(f"{package}.{name}")
            if not inspect.isclass(obj):
                continue
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if inspect.isfunction(member) or isinstance(member, (property, classmethod,
                                                                      staticmethod)):
                    names.append(f"{package}.{name}.{attr}")
    return sorted(set(names))


def _modules_with_examples() -> list[str]:
    """The packages and the modules defining their exports, those whose docstrings hold examples."""
    modules = set(PACKAGES)
    for package in PACKAGES:
        for name in importlib.import_module(package).__all__:
            owner = getattr(getattr(importlib.import_module(package), name), "__module__", None)
            if owner and owner.startswith("skrate"):
                modules.add(owner)
    finder = doctest.DocTestFinder()
    return sorted(m for m in modules
                  if any(t.examples for t in finder.find(importlib.import_module(m), m)))


@pytest.mark.parametrize("name", _public_names())
def test_public_docstring_follows_numpydoc(name):
    errors = [f"{code}: {message}" for code, message in validate(name)["errors"] if code in CHECKS]
    assert not errors, f"{name}:\n" + "\n".join(errors)


@pytest.mark.parametrize("name", [n for n in _public_names() if n.count(".") == 1
                                  and inspect.isclass(getattr(importlib.import_module("skrate"), n[7:]))])
def test_estimator_attributes_are_described(name):
    """Every fitted attribute an estimator lists says what it holds (numpydoc does not check it)."""
    from numpydoc.docscrape import ClassDoc

    blank = [a.name for a in ClassDoc(getattr(importlib.import_module("skrate"), name[7:]))["Attributes"]
             if not "".join(a.desc).strip()]
    assert not blank, f"{name}: attributes without a description: {blank}"


def test_every_public_package_is_read():
    """A package added to the API reference is added here too."""
    import pathlib

    api = pathlib.Path(__file__).parents[1] / "doc" / "api.rst"
    if not api.exists():  # an installed copy without the docs
        pytest.skip("doc/api.rst is not next to the tests")
    documented = {line.split("::")[1].strip() for line in api.read_text().splitlines()
                  if line.startswith(".. automodule::")}
    assert documented <= set(PACKAGES), sorted(documented - set(PACKAGES))


def test_every_exported_name_is_in_the_api_reference():
    """skrate.rates.f1 and skrate.problem.least_largest were exported but not in the reference."""
    import pathlib
    import re

    api = pathlib.Path(__file__).parents[1] / "doc" / "api.rst"
    if not api.exists():  # an installed copy without the docs
        pytest.skip("doc/api.rst is not next to the tests")
    text = api.read_text()
    documented = set(re.findall(r"^\.\. [\w:]+:: ([\w.]+)", text, re.M))
    listed = set(re.findall(r"``([\w.]+)``", text))  # aliases named in the prose (``coverage``)
    missing = [f"{package}.{name}" for package in PACKAGES for name in importlib.import_module(package).__all__
               if f"{package}.{name}" not in documented and name not in listed]
    assert not missing, missing


@pytest.mark.parametrize("module_name", _modules_with_examples())
def test_docstring_examples_run(module_name):
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, module_name) if t.examples]
    assert tests
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {module_name}"


def _resolve(name: str):
    package = max((p for p in PACKAGES if name.startswith(p + ".")), key=len)
    obj = importlib.import_module(package)
    for part in name[len(package) + 1:].split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", [n for n in _public_names() if inspect.isfunction(_resolve(n))])
def test_sparse_hints_agree_with_docstrings(name):
    """A parameter documented as taking a sparse matrix is annotated so, and only such a one:
    ``X: ArrayLike`` for ``{array-like, sparse matrix}`` made type checkers flag valid calls."""
    from numpydoc.docscrape import FunctionDoc

    func = _resolve(name)
    hints = {k: str(p.annotation) for k, p in inspect.signature(func).parameters.items()
             if p.annotation is not inspect.Parameter.empty}
    wrong = [f"{p.name}: documented {p.type!r}, annotated {hints[p.name]!r}"
             for p in FunctionDoc(func)["Parameters"] if p.name in hints
             and ("sparse" in p.type) != ("sp.spmatrix" in hints[p.name])]
    assert not wrong, f"{name}: " + "; ".join(wrong)


def test_package_ships_its_type_hints():
    """PEP 561: without the ``py.typed`` marker, type checkers ignore an installed package's hints."""
    from importlib.resources import files

    assert files("skrate").joinpath("py.typed").is_file()

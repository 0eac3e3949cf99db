"""Datasets: the bundled COMPAS copy and fetch_adult's cache, download and checksum paths (no network)."""

import hashlib
import re

import numpy as np
import pytest

from skrate.datasets import fetch_adult, load_compas
from skrate.datasets import _adult

TRAIN = """\
39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K
50, Self-emp-not-inc, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, Male, 0, 0, 13, United-States, >50K
38, Private, 215646, HS-grad, 9, Divorced, Handlers-cleaners, Not-in-family, Black, Female, 0, 0, 40, United-States, <=50K
53, ?, 234721, 11th, 7, Married-civ-spouse, ?, Husband, Black, Male, 0, 0, 40, United-States, <=50K
28, Private, 338409, Bachelors, 13, Married-civ-spouse, Prof-specialty, Wife, Black, Female, 0, 0, 40, Cuba, >50K

"""
TEST = """\
|1x3 Cross validator
25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, 0, 40, United-States, <=50K.
44, Private, 160323, Some-college, 10, Married-civ-spouse, Machine-op-inspct, Husband, Black, Male, 7688, 0, 40, United-States, >50K.
18, ?, 103497, Some-college, 10, Never-married, ?, Own-child, White, Female, 0, 0, 30, United-States, <=50K.
34, Federal-gov, 245487, 7th-8th, 4, Married-civ-spouse, Transport-moving, Husband, Amer-Indian-Eskimo, Male, 0, 0, 45, Mexico, <=50K.
"""


def _write(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adult.data").write_text(TRAIN)
    (folder / "adult.test").write_text(TEST)
    return folder


def test_fetch_adult_reads_a_folder_holding_the_files(tmp_path):
    folder = _write(tmp_path / "uci")
    train = fetch_adult(folder)
    assert train.data.shape[0] == 4  # the row with '?' is dropped
    np.testing.assert_array_equal(train.target, [0, 1, 0, 1])
    np.testing.assert_array_equal(train.groups["race"], ["White", "White", "Black", "Black"])
    np.testing.assert_array_equal(train.groups["sex"], ["Male", "Male", "Female", "Female"])
    assert "fnlwgt" not in train.feature_names and "UCI Adult" in train.DESCR
    age = train.data[:, train.feature_names.index("age")]
    ages = np.array([39, 50, 38, 28.0])
    np.testing.assert_allclose(age, (ages - ages.mean()) / ages.std())
    test = fetch_adult(folder, subset="test")
    assert test.data.shape == (3, train.data.shape[1])
    np.testing.assert_array_equal(test.target, [0, 1, 0])  # trailing '.' stripped
    np.testing.assert_allclose(test.data[:, train.feature_names.index("age")], (np.array([25, 44, 34]) - ages.mean()) / ages.std())
    # Categories unseen in training (Federal-gov, Mexico, Amer-Indian-Eskimo) encode as all zeros.
    work = [i for i, name in enumerate(train.feature_names) if name.startswith("workclass=")]
    np.testing.assert_array_equal(test.data[2, work], 0)
    both = fetch_adult(folder, subset="all", as_frame=True)
    assert both.data.shape[0] == 7 and list(both.groups.columns) == ["sex", "race"]
    assert both.frame["income"].tolist() == [0, 1, 0, 1, 0, 1, 0]
    with pytest.raises(ValueError, match="subset must be"):
        fetch_adult(folder, subset="validation")


def _serve(tmp_path, monkeypatch, train=TRAIN, checksum=None):
    source = _write(tmp_path / "remote")
    (source / "adult.data").write_text(train)
    remote = {}
    for name in ("adult.data", "adult.test"):
        digest = hashlib.sha256((source / name).read_bytes()).hexdigest()
        remote[name] = ((source / name).as_uri(), checksum or digest)
    monkeypatch.setattr(_adult, "REMOTE", remote)


def test_fetch_adult_downloads_once_and_caches(tmp_path, monkeypatch):
    _serve(tmp_path, monkeypatch)
    home = tmp_path / "home"
    first = fetch_adult(home)
    assert (home / "skrate_adult" / "adult.data").read_text() == TRAIN
    # A second call reads the cache: any attempt to download now fails.
    monkeypatch.setattr(_adult.urllib.request, "urlopen", lambda *a, **k: pytest.fail("downloaded twice"))
    second = fetch_adult(home)
    np.testing.assert_array_equal(first.data, second.data)


def test_fetch_adult_rejects_a_corrupt_download(tmp_path, monkeypatch):
    _serve(tmp_path, monkeypatch, checksum="0" * 64)
    home = tmp_path / "home"
    with pytest.raises(OSError, match="SHA-256 .* expected 0000"):
        fetch_adult(home)
    assert not list((home / "skrate_adult").iterdir())  # nothing cached, no partial file left


def test_fetch_adult_without_download(tmp_path):
    with pytest.raises(OSError, match="download_if_missing=False"):
        fetch_adult(tmp_path, download_if_missing=False)
    # a data_home holding one of the two files: the error names the one it lacks
    (tmp_path / "adult.data").write_text(TRAIN)
    with pytest.raises(OSError, match=rf"not in {re.escape(str(tmp_path))} \(missing adult.test\) nor in "):
        fetch_adult(tmp_path, download_if_missing=False)


def test_fetch_adult_reads_a_data_home_given_with_a_tilde(tmp_path, monkeypatch):
    # '~/adult' holding both files was looked up unexpanded, then downloaded into
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "adult").mkdir()
    (tmp_path / "adult" / "adult.data").write_text(TRAIN)
    (tmp_path / "adult" / "adult.test").write_text(TEST)
    assert fetch_adult("~/adult", download_if_missing=False).data.shape[0] > 0


def test_fetch_adult_names_an_unusable_file(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "adult.data").write_text("a,b,c\n1,2,3\n")
    (folder / "adult.test").write_text(TEST)
    with pytest.raises(ValueError, match=r"adult.data: 2 line\(s\) do not hold the 15 UCI Adult fields .* line 1"):
        fetch_adult(folder)
    (folder / "adult.data").write_text("\n".join(TRAIN.splitlines()[3:4]) + "\n")  # only a row with '?'
    with pytest.raises(ValueError, match="adult.data holds no complete row"):
        fetch_adult(folder)


def test_fetch_adult_refuses_a_truncated_or_edited_file(tmp_path):
    # rows without the 15 fields were dropped without a word, and a label cut to '>5' read as <=50K
    folder = _write(tmp_path / "cut")
    (folder / "adult.data").write_text(TRAIN.rstrip()[:-2] + "\n")  # the last row ends in '>5'
    with pytest.raises(ValueError, match=r"adult.data: 1 line\(s\) .* the first at line 5: the file is truncated"):
        fetch_adult(folder)
    lines = TRAIN.splitlines()
    lines[1] = lines[1].replace("Bachelors,", "Bachelors, extra,")
    (folder / "adult.data").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="the first at line 2"):
        fetch_adult(folder)
    lines = TRAIN.splitlines()
    lines[0] = lines[0].replace("39,", "thirty-nine,")
    (folder / "adult.data").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"adult.data: the column 'age' holds a value that is no number"):
        fetch_adult(folder)
    lines[0] = lines[0].replace("thirty-nine,", "nan,")
    (folder / "adult.data").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"adult.data: the column 'age' holds a value that is no finite number"):
        fetch_adult(folder)
    (folder / "adult.data").write_bytes(TRAIN.replace("Cuba", "Cuba\xe9").encode("latin-1"))
    with pytest.raises(ValueError, match=r"adult.data is not the UCI Adult text file \(not UTF-8"):
        fetch_adult(folder)


def test_fetch_adult_reads_a_file_with_a_byte_order_mark(tmp_path):
    plain = fetch_adult(_write(tmp_path / "plain"))
    marked = _write(tmp_path / "bom")
    (marked / "adult.data").write_text("\ufeff" + TRAIN, encoding="utf-8")
    np.testing.assert_array_equal(fetch_adult(marked).data, plain.data)


@pytest.mark.parametrize("failure", ["offline", "cut"])
def test_fetch_adult_says_what_a_failed_download_missed(tmp_path, monkeypatch, failure):
    import http.client
    import urllib.error

    _serve(tmp_path, monkeypatch)

    def fail(*args, **kwargs):
        if failure == "offline":
            raise urllib.error.URLError("Name or service not known")
        raise http.client.IncompleteRead(b"")  # a transfer cut off: no OSError

    monkeypatch.setattr(_adult.urllib.request, "urlopen", fail)
    home = tmp_path / "home"
    with pytest.raises(OSError, match=r"Could not download adult.data from file:.*"
                                      r"download adult.data and adult.test from .* place them in data_home"):
        fetch_adult(home)
    assert not list((home / "skrate_adult").iterdir())


def test_fetch_adult_data_home_is_a_folder_and_a_lookup_creates_none(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(NotADirectoryError, match="data_home=.*afile' is a file"):
        fetch_adult(afile)
    typo = tmp_path / "nofolder" / "deeper"
    with pytest.raises(OSError, match="download_if_missing=False"):
        fetch_adult(typo, download_if_missing=False)
    assert not (tmp_path / "nofolder").exists()


def test_load_compas_bunch():
    data = load_compas()
    assert data.data.shape == (5278, len(data.feature_names))
    assert set(np.unique(data.target)) == {0, 1}
    assert set(data.groups) == {"race", "sex"} and set(np.unique(data.groups["race"])) == {"African-American", "Caucasian"}
    assert "ProPublica" in data.DESCR
    framed = load_compas(as_frame=True)
    assert framed.data.shape == data.data.shape and list(framed.groups.columns) == ["race", "sex"]
    np.testing.assert_array_equal(framed.target.to_numpy(), data.target)
    assert framed.frame.shape[0] == 5278

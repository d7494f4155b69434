"""benchmarks/mxnet_unittests: the mxnet -> mxref alias, the per-test recorder and the counting."""
import importlib
import pathlib
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOOL = ROOT / "benchmarks" / "mxnet_unittests"


@pytest.fixture
def tool(monkeypatch):
    monkeypatch.syspath_prepend(str(TOOL))
    return importlib.import_module("run")


@pytest.fixture
def suite(tmp_path):
    """A small suite in MXNet's style: one file that imports, one that does not."""
    (tmp_path / "test_fake.py").write_text(textwrap.dedent("""
        import mxnet as mx
        from mxnet.test_utils import assert_almost_equal

        def test_ones():
            assert_almost_equal(mx.nd.ones((2, 3)).asnumpy().sum(), 6.0)

        def test_same_module_object():
            import mxref
            import mxnet.ndarray
            assert mxnet.ndarray is mxref.ndarray and mx.nd.NDArray is mxref.nd.NDArray

        def test_no_import_warnings():
            # mxref's function-level relative imports must not warn under the alias
            import warnings
            import mxnet.ndarray.ndarray
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                mx.nd.ones((2, 3)).reshape((-1,)).asnumpy()
            assert not [str(x.message) for x in w]

        def test_wrong():
            assert mx.nd.zeros((1,)).asnumpy()[0] == 1, "zeros is not one"

        def test_skipped():
            import pytest
            pytest.skip("not here")
    """))
    (tmp_path / "test_missing.py").write_text("import mxnet.no_such_module\n\ndef test_a():\n    pass\n")
    return tmp_path


def test_alias_runs_tests_against_mxref_and_records_each_outcome(tool, suite):
    res = tool.run_file(sys.executable, str(suite), "test_fake.py", True, str(ROOT), 60, 300)
    outcomes = {k.split("::")[1]: v["outcome"] for k, v in res["tests"].items()}
    assert outcomes == {"test_ones": "passed", "test_same_module_object": "passed",
                        "test_no_import_warnings": "passed", "test_wrong": "failed",
                        "test_skipped": "skipped"}
    assert "zeros is not one" in res["tests"]["test_fake.py::test_wrong"]["reason"]


def test_a_module_mxref_lacks_fails_to_import_under_its_mxnet_name(tool, suite):
    res = tool.run_file(sys.executable, str(suite), "test_missing.py", True, str(ROOT), 60, 300)
    assert res["tests"] == {}
    assert "No module named 'mxnet.no_such_module'" in res["collect_errors"]["test_missing.py"]


def test_counting_uses_mxnet_passes_as_the_denominator(tool, monkeypatch):
    baseline = {"a.py": {"passed": ["a.py::t1", "a.py::t2", "a.py::t3", "a.py::t4"]}}
    results = {"a.py": {"collect_errors": {}, "tests": {
        "a.py::t1": {"outcome": "passed"}, "a.py::t2": {"outcome": "failed", "reason": "E   boom"},
        "a.py::t3": {"outcome": "failed", "reason": "E   differs"}, "a.py::t5": {"outcome": "passed"}}}}
    monkeypatch.setattr(tool, "DIFFERENCES", {"a.py::t3": "on purpose"})
    (row,) = tool.compare(baseline, results)
    # t5 passes only under mxref and is not counted; t4 was not collected at all.
    assert (row["mxnet"], row["mxref"]) == (4, 1)
    assert row["differ"] == [("a.py::t3", "on purpose")]
    assert row["failures"] == [("a.py::t2", "E   boom"), ("a.py::t4", "not collected")]
    text = tool.table([row])
    assert "| `a.py` | 4 | 1 | 1 | 25% |" in text and "**25.0%**" in text


def test_every_listed_file_is_in_the_committed_baseline(tool):
    import json
    baseline = json.loads((TOOL / "baseline_mxnet_1.9.1.json").read_text())
    assert set(tool.list_files()) <= set(baseline)

"""docs/walkthrough/NN_*.md (one layer per page, driven by hand) are executable: each page's python
blocks run in order in one namespace and their asserts hold; its links point at files that exist,
and every ``mxref/...`` path it names exists. Each page also runs in a subprocess with
``MXREF_ENABLE_EXT=0``, so the pure-Python twins of the Cython paths are walked through as well."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
WALKTHROUGH = ROOT / "docs" / "walkthrough"
PAGES = sorted(WALKTHROUGH.glob("[0-9][0-9]_*.md"))
IDS = [p.stem for p in PAGES]


def blocks(path: pathlib.Path):
    """``(first line number, code)`` of every fenced python block."""
    text = path.read_text()
    return [(text[:m.start()].count("\n") + 2, m.group(1))
            for m in re.finditer(r"```python\n(.*?)```", text, re.S)]


def run_page(path: pathlib.Path) -> None:
    """Execute the page's blocks in order in one namespace."""
    scope = {"__name__": f"walkthrough_{path.stem}"}
    for line, code in blocks(path):
        # Pad with newlines so tracebacks show the line number inside the markdown file.
        exec(compile("\n" * (line - 1) + code, str(path), "exec"), scope)


def test_the_pages_are_there():
    """The six numbered pages exist, in reading order, with an index beside them."""
    assert [p.name for p in PAGES] == ["01_engine.md", "02_storage.md", "03_invoke.md",
                                       "04_graph_and_passes.md", "05_autograd.md", "06_distributed.md"]
    assert (WALKTHROUGH / "README.md").exists()


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_page_has_steps_and_checks(path):
    """A page is a walkthrough only if it does several steps and asserts what they show."""
    found = blocks(path)
    assert len(found) >= 4, f"{path.name}: {len(found)} python blocks"
    asserts = sum(len(re.findall(r"^\s*assert\b", code, re.M)) for _, code in found)
    assert asserts >= 5, f"{path.name}: {asserts} asserts"


@pytest.fixture
def threaded_engine():
    """The pages show the default engine; a suite run under ``MXNET_ENGINE_TYPE=NaiveEngine``
    switches to it for the page and back afterwards."""
    from mxref import engine
    old = engine.get().name
    if old != "ThreadedEnginePerDevice":
        engine.set_engine("ThreadedEnginePerDevice")
    yield
    if engine.get().name != old:
        engine.set_engine(old)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_page_runs(path, threaded_engine):
    """Every block runs; a failing assert reports the markdown file and line."""
    run_page(path)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_page_runs_pure_python(path):
    """The same page with every Cython fast path replaced by its Python twin, in a fresh process."""
    if os.environ.get("MXREF_ENABLE_EXT") == "0":
        pytest.skip("this run is already pure Python (test_page_runs covers it)")
    env = dict(os.environ, MXREF_ENABLE_EXT="0")
    env.pop("MXREF_ENFORCE_EXT", None)
    env.pop("MXNET_ENGINE_TYPE", None)        # the pages show the default engine
    code = ("import pathlib, sys; sys.path.insert(0, sys.argv[1]); import test_walkthrough as t; "
            "t.run_page(pathlib.Path(sys.argv[2]))")
    proc = subprocess.run([sys.executable, "-c", code, str(pathlib.Path(__file__).parent), str(path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


@pytest.mark.parametrize("path", [*PAGES, WALKTHROUGH / "README.md"], ids=[*IDS, "README"])
def test_links_resolve(path):
    """Relative links name files that exist (relative to the page)."""
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", path.read_text()):
        assert (path.parent / target).exists(), f"{path.name} links to missing {target}"


@pytest.mark.parametrize("path", [*PAGES, WALKTHROUGH / "README.md"], ids=[*IDS, "README"])
def test_named_source_paths_exist(path):
    """Every ``mxref/...`` or ``tests/...`` path a page names is a file or folder of the repository."""
    named = re.findall(r"(?<![\w/.])((?:mxref|tests)/[\w/.]*\w)", path.read_text())
    assert any(p.startswith("mxref/") for p in named), f"{path.name} names no file of mxref to open"
    missing = sorted({p for p in named if not (ROOT / p).exists()})
    assert not missing, f"{path.name} names paths that do not exist: {missing}"

"""Ctrl-C at a wait: the KeyboardInterrupt propagates at once, operations queued and not started
are cancelled (their outputs carry a "cancelled by KeyboardInterrupt" error instead of running),
and the process exits without draining them. Each case runs in a subprocess that gets a real
SIGINT while its main thread waits behind a blocked op; only a hard timeout bounds it."""
import os
import subprocess
import sys
import textwrap

import pytest

import mxref as mx
from mxref.base import MXNetError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARD_TIMEOUT = 120            # seconds; a hang fails the test instead of the suite
N_QUEUED = 4000

pytestmark = pytest.mark.timeout(2 * HARD_TIMEOUT)

PROGRAM = textwrap.dedent(r"""
    import atexit, os, signal, sys, threading, time
    ran = [0]
    # Registered before mxref's own exit hook, so it runs after the engine was drained at exit.
    atexit.register(lambda: print(f"AT_EXIT ran={ran[0]}", flush=True))
    import mxref as mx
    from mxref.base import MXNetError

    mode, core, wait_kind, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    eng = mx.engine.get()
    assert eng.describe()["core"] == core, eng.describe()
    cpu = mx.cpu()
    gate, first = threading.Event(), eng.new_variable()
    eng.push_sync(lambda r: gate.wait(60), cpu, (), (first,), name="blocker")

    def count(rctx):
        ran[0] += 1

    outs = []
    for i in range(n):
        # Half wait in the one worker's queue behind the blocker, half on its variable.
        out = eng.new_variable()
        outs.append(out)
        eng.push_sync(count, cpu, (first,) if i % 2 else (), (out,), name="queued")

    def interrupt():
        while eng._sleepers == 0 and not waiting_var.is_set():   # main thread is in the wait
            time.sleep(0.001)
        time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)
        if wait_kind == "none":
            # The exit hook cancels the queue; only then may the running op finish.
            while eng.errors.epoch == 0:
                time.sleep(0.001)
            gate.set()

    waiting_var = threading.Event()
    threading.Thread(target=interrupt, daemon=True).start()
    if wait_kind == "none":            # Ctrl-C in plain Python code, never caught
        waiting_var.set()
        time.sleep(60)
        sys.exit(4)
    try:
        if wait_kind == "all":
            eng.wait_for_all()
        else:
            waiting_var.set()          # wait_for_var blocks on a lock, not on _sleepers
            eng.wait_for_var(outs[-1])
    except KeyboardInterrupt:
        print(f"INTERRUPTED ran={ran[0]}", flush=True)
        gate.set()                     # the op already running finishes; nothing else should
        if mode == "unhandled":
            raise
    else:
        print("NOT INTERRUPTED", flush=True)
        sys.exit(3)
    eng.wait_for_all()                 # the cancellation is not a pending error
    for out in (outs[0], outs[1], outs[-1]):
        try:
            eng.wait_for_var(out)
        except MXNetError as exc:
            assert "cancelled by KeyboardInterrupt" in str(exc), exc
        else:
            raise AssertionError("a cancelled op's output read as valid")
    box = []
    later = eng.new_variable()
    eng.push_sync(lambda r: box.append(1), cpu, (), (later,), name="after")
    eng.wait_for_var(later)
    assert box == [1]
    eng.push_sync(lambda r: box.append(2), cpu, (), (outs[0],), name="overwrite")
    eng.wait_for_var(outs[0])          # overwritten: clean again
    print(f"USABLE ran={ran[0]} box={box}", flush=True)
""")


def _run(mode, core, wait_kind):
    env = dict(os.environ, MXNET_ENGINE_TYPE="ThreadedEnginePerDevice",
               MXNET_CPU_WORKER_NTHREADS="1", PYTHONPATH=ROOT)
    env.pop("MXREF_ENFORCE_EXT", None)
    if core == "python":
        env["MXREF_ENABLE_EXT"] = "0"
    else:
        env.pop("MXREF_ENABLE_EXT", None)
    try:
        proc = subprocess.run([sys.executable, "-c", PROGRAM, mode, core, wait_kind, str(N_QUEUED)],
                              cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=HARD_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the interrupted process did not exit within {HARD_TIMEOUT} s:\n{exc.stdout}\n"
                    f"{exc.stderr}")
    return proc


def _cores():
    cores = ["python"]
    try:
        from mxref._ext import engine_core  # noqa: F401
        cores.append("cython")
    except ImportError:
        pass
    return cores


@pytest.mark.parametrize("core", _cores())
@pytest.mark.parametrize("wait_kind", ["all", "var"])
def test_interrupt_cancels_queued_ops_and_the_engine_stays_usable(core, wait_kind):
    """SIGINT during wait_for_all / wait_for_var: KeyboardInterrupt at the wait, none of the
    queued ops runs (during the wait, after it, or at exit), their outputs raise "cancelled",
    and new work (also overwriting a cancelled output) runs."""
    proc = _run("handled", core, wait_kind)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "INTERRUPTED ran=0" in out and "USABLE ran=0 box=[1, 2]" in out, out + proc.stderr
    assert "AT_EXIT ran=0" in out, out + proc.stderr


@pytest.mark.parametrize("core", _cores())
@pytest.mark.parametrize("wait_kind", ["all", "none"])
def test_an_unhandled_interrupt_exits_without_running_the_queue(core, wait_kind):
    """The KeyboardInterrupt left uncaught, raised at wait_for_all or in plain Python code (then
    the exit hook cancels): the process ends without running the thousands of queued ops."""
    proc = _run("unhandled", core, wait_kind)
    out = proc.stdout
    assert wait_kind == "none" or "INTERRUPTED ran=0" in out, out + proc.stderr
    assert "AT_EXIT ran=0" in out, out + proc.stderr
    assert "KeyboardInterrupt" in proc.stderr
    assert proc.returncode != 0


def test_naive_engine_an_interrupted_op_propagates_and_fails_its_outputs():
    """The naive engine runs each op at push: a KeyboardInterrupt inside it propagates from the
    push at once (it is not turned into an op error raised later), and the op's outputs carry a
    KeyboardInterrupt error; the engine stays usable."""
    from mxref.engine.naive import NaiveEngine  # noqa: PLC0415
    eng = NaiveEngine()
    out = eng.new_variable()

    def interrupted(rctx):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        eng.push_sync(interrupted, mx.cpu(), (), (out,), name="long_op")
    eng.wait_for_all()               # reported by the interrupt itself: not pending
    with pytest.raises(MXNetError, match="long_op.*KeyboardInterrupt"):
        eng.wait_for_var(out)
    box = []
    eng.push_sync(lambda r: box.append(1), mx.cpu(), (), (out,))
    eng.wait_for_var(out)
    assert box == [1]

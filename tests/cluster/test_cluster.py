"""A 2-host cluster of network namespaces (``mxref.tools.cluster``): jobs across hosts, bytes on the
links, bandwidth limits, partitions, and a ``down`` that leaves nothing behind.

Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and mpiexec; skipped otherwise. The tests use their
own prefixes and subnets (``cluster_support.py``), so they never touch a user's cluster.
"""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cluster_support import PREFIX, needs_cluster, prefix, subnet
from mpi_support import ROOT

from mxref.tools import cluster, hostfile, netns

HERE = Path(__file__).resolve().parent
PY = sys.executable
MARK = f"{PREFIX}mark"
H0, H1 = f"{PREFIX}h0", f"{PREFIX}h1"

pytestmark = needs_cluster


def job_env(folder):
    return dict(os.environ, PYTHONPATH=f"{ROOT}:{ROOT / 'tests' / 'mpi_programs'}",
                MXREF_CLUSTER_DIR=str(folder), MXREF_TEST_REPORT_DIR=str(folder / "reports"),
                MXREF_KV_TIMEOUT="60")


def reports(folder):
    out = "".join(p.read_text() for p in sorted((folder / "reports").iterdir()))
    shutil.rmtree(folder / "reports")
    (folder / "reports").mkdir()
    return out


def start(cmd, **kw):
    """Popen in a session of its own, so ``stop`` can kill the launcher and its mpiexec together
    (a timed-out mpiexec whose proxies vanished would otherwise wait forever)."""
    return subprocess.Popen(cmd, start_new_session=True, text=True, **kw)


def stop(proc, timeout):
    """Wait for ``proc``; past ``timeout`` SIGKILL its whole session and raise TimeoutExpired."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise


def launch(folder, args, timeout=120, **env):
    """``python -m mxref.tools.launch --hostfile hosts.txt ARGS`` with the job environment."""
    proc = start([PY, "-m", "mxref.tools.launch", "--hostfile", str(folder / "hosts.txt"), *args],
                 env=dict(job_env(folder), **env), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = stop(proc, timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.timeout(120)
def test_hosts_have_their_own_names_shm_and_pids(hosts):
    """Each host has its own hostname, /dev/shm and pid 1 (else MPI would share memory across them)."""
    state, folder = hosts
    outs = []
    for h in state["hosts"]:
        proc = subprocess.run([PY, "-m", "mxref.tools.cluster", "--state-dir", str(folder), "exec", h["name"],
                               "--", "sh", "-c", f"hostname; touch /dev/shm/{MARK}; ls /dev/shm; "
                               "cat /proc/1/comm"], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout.split())
    h0, h1 = state["hosts"]
    assert outs == [[h0["name"], MARK, "sleep"], [h1["name"], MARK, "sleep"]]
    assert not os.path.exists(f"/dev/shm/{MARK}")
    assert hostfile.read(str(folder / "hosts.txt")).placement(3) == [h0["addr"], h1["addr"], h0["addr"]]


@pytest.mark.timeout(120)
def test_dist_sync_closed_forms_with_server_and_workers_on_different_hosts(hosts):
    """kv_sync.py (each worker pushes rank+1, every pull sees the sum) over 2 hosts: rank 0 (the
    server) on h0, worker 0 on h1, worker 1 on h0; worker 0's traffic crosses h1's link."""
    state, folder = hosts
    before = cluster.link_bytes(state)[H1]
    proc = launch(folder, ["-n", "2", "-s", "1", "--", PY, "tests/mpi_programs/kv_sync.py"])
    text = reports(folder)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "worker 0 of 2: OK" in text and "worker 1 of 2: OK" in text, text + proc.stderr
    after = cluster.link_bytes(state)[H1]
    assert after["sent"] - before["sent"] > 200_000 and after["received"] - before["received"] > 200_000


@pytest.mark.timeout(120)
def test_plain_mpiexec_with_the_hostfile_and_printed_options(hosts):
    """``mpiexec -f hosts.txt`` with the options the hostfile's comment lists starts ranks on both hosts."""
    state, folder = hosts
    cmd = [shutil.which("mpiexec", path=str(Path(PY).parent)), "-f", str(folder / "hosts.txt"),
           *cluster.mpiexec_options(state), "-n", "2", PY, "-c",
           "import socket, os; from report import report; report(socket.gethostname())"]
    proc = subprocess.run(cmd, env=dict(job_env(folder), **cluster.mpi_env(state)), cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert reports(folder).split() == [H0, H1]


def expected_model(world, iters=4):
    model = np.zeros(4)
    for it in range(iters):
        grad = sum(np.arange(4.0) * (r + 1) + it for r in range(world))
        model = model * 0.5 + grad + float(world - 1 + it)
    return model


@pytest.mark.timeout(180)
def test_robust_allreduce_survives_a_kill_on_each_host(hosts):
    """Rank 0 (on h0) killed at iteration 1 and rank 1 (on h1) at iteration 2: both restarted on
    their hosts, and every rank ends with the failure-free model."""
    state, folder = hosts
    proc = launch(folder, ["-n", "2", "--engine", "robust", "--max-restarts", "2", "--", PY,
                           str(HERE / "robust_hosts.py")], KILL_AT="0:1,1:2")
    text = reports(folder)
    assert proc.returncode == 0, proc.stderr
    assert "worker 0 exited with -9" in proc.stderr and "worker 1 exited with -9" in proc.stderr
    lines = sorted(text.splitlines())
    assert len(lines) == 2, text
    want = " ".join(map(str, expected_model(2).tolist()))
    for rank, line in enumerate(lines):
        assert line == f"rank {rank} host {PREFIX}h{rank} attempt 1 version 4 model {want}", line


@pytest.mark.timeout(120)
def test_link_counters_match_the_protocols_bytes(hosts):
    """One worker (h1) and one server (h0), a 1M-float key: init + 3 pushes up, 3 pulls down.
    The veth counts what TCP hands it: segments of up to 64 KiB (segmentation offload) with one
    set of headers each, so the payload plus well under 1%, and MPI's start-up: within 10%."""
    state, folder = hosts
    n = 1 << 20
    before = cluster.link_bytes(state)[H1]
    proc = launch(folder, ["-n", "1", "-s", "1", "--", PY, str(HERE / "kv_bytes.py")], KV_BYTES_N=str(n))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"worker 0 on {H1}: OK" in reports(folder)
    after = cluster.link_bytes(state)[H1]
    want_sent, want_received = 4 * n * 4, 3 * 4 * n
    sent, received = after["sent"] - before["sent"], after["received"] - before["received"]
    assert abs(sent - want_sent) < 0.1 * want_sent, (sent, want_sent)
    assert abs(received - want_received) < 0.1 * want_received, (received, want_received)


@pytest.mark.timeout(120)
def test_a_100mbit_limit_makes_50mb_take_at_least_4s_each_way(hosts):
    """With h1 limited to 100 Mbit/s, 50 MB h0->h1 and 50 MB h1->h0 (at once) each take >= 4 s
    (50e6 * 8 / 100e6; framing only adds to it), and the limit is lifted afterwards."""
    state, folder = hosts
    h0, h1 = state["hosts"]
    cluster.set_limit(H1, "100mbit", folder)
    try:
        def on(host, *args):
            return subprocess.Popen([PY, "-m", "mxref.tools.cluster", "--state-dir", str(folder), "exec",
                                     host["name"], "--", PY, str(HERE / "sink.py"), *map(str, args)],
                                    stdout=subprocess.PIPE, text=True)
        sinks = [on(h1, "listen", h1["addr"], 7001), on(h0, "listen", h0["addr"], 7002)]
        senders = [on(h0, "send", h1["addr"], 7001, 50_000_000), on(h1, "send", h0["addr"], 7002, 50_000_000)]
        times = [float(p.communicate(timeout=60)[0]) for p in senders]
        assert all(p.wait(timeout=30) == 0 for p in sinks + senders)
        assert min(times) >= 4.0, times
    finally:
        cluster.set_limit(H1, "unlimited", folder)
    assert "tbf" not in netns.run("tc", "qdisc", "show", "dev", H1).stdout


@pytest.mark.timeout(60)
def test_a_link_taken_down_partitions_the_host_until_it_comes_back(hosts):
    state, folder = hosts
    probe = ("import socket, sys\ntry:\n    socket.create_connection(('%s', 9), timeout=1.5)\n"
             "except ConnectionRefusedError:\n    print('reached')\nexcept OSError as e:\n"
             "    print('unreachable', type(e).__name__)\n" % state["hosts"][1]["addr"])

    def probe_from_h0():
        return subprocess.run([PY, "-m", "mxref.tools.cluster", "--state-dir", str(folder), "exec",
                               H0, "--", PY, "-c", probe], capture_output=True, text=True,
                              timeout=30).stdout
    assert probe_from_h0().startswith("reached")         # port 9 closed: refused, so h1 answered
    cluster.set_link(H1, False, folder)
    try:
        assert probe_from_h0().startswith("unreachable")
        assert cluster.load(folder)["hosts"][1]["link"] == "down"
    finally:
        cluster.set_link(H1, True, folder)
    assert probe_from_h0().startswith("reached")


def wait_for(path, text, proc, timeout=60):
    """Until ``path`` holds ``text`` (a rank's report), failing early if the job ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return path.read_text()
        if proc.poll() is not None:
            raise AssertionError(f"the job ended (exit {proc.returncode}) before {path.name} said {text!r}: "
                                 + proc.communicate()[0])
        time.sleep(0.05)
    raise AssertionError(f"{path.name} never said {text!r}")


@pytest.mark.timeout(120)
def test_a_partition_longer_than_the_timeout_fails_the_round_naming_worker_and_host(hosts):
    """h1 (worker 0, MPI rank 1) cut off while the job runs: within MXREF_KV_TIMEOUT=2 s the
    server ends the round with an error naming that worker and rank, the other worker gets it, and
    the launcher's exit line says which host rank 1 ran on."""
    state, folder = hosts
    flag = folder / "partition-timeout"
    env = dict(job_env(folder), MXREF_KV_TIMEOUT="60", PARTITION_TIMEOUT_FILE=str(flag))
    proc = start([PY, "-m", "mxref.tools.launch", "--hostfile", str(folder / "hosts.txt"), "-n", "2",
                  "-s", "1", "--", PY, str(HERE / "kv_partition.py")], env=env, cwd=ROOT,
                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    report = folder / "reports" / "rank2"                  # worker 1, on h0 with the server
    try:
        wait_for(report, "running", proc)
        flag.with_suffix(".tmp").write_text("2")
        flag.with_suffix(".tmp").rename(flag)             # every rank now times out after 2 s
        cluster.set_link(H1, False, folder)
        text = wait_for(report, "error", proc)
    finally:
        cluster.set_link(H1, True, folder)
        output = stop(proc, 60)[0]
        reports(folder)
        flag.unlink(missing_ok=True)
    assert proc.returncode != 0
    assert "worker 0 (MPI rank 1) did not push within MXREF_KV_TIMEOUT=2s" in text, text
    assert f"MPI rank 1 = worker 0 on {H1} ({state['hosts'][1]['addr']})" in output, output


@pytest.mark.timeout(60)
def test_down_cleans_up_after_an_up_that_crashed_midway(tmp_path, monkeypatch):
    """An ``up`` killed after its first host (simulated: the second holder fails and up's own
    cleanup is skipped) leaves things behind; ``down`` in a fresh process removes all of it, and
    a second ``down`` is a no-op."""
    real = netns.start_holder
    calls = []

    def failing(ns, name):
        calls.append(name)
        if len(calls) == 2:
            raise KeyboardInterrupt("crash")
        return real(ns, name)
    monkeypatch.setattr(netns, "start_holder", failing)
    monkeypatch.setattr(cluster, "down", lambda *a, **k: [])
    mine = prefix("c")
    with pytest.raises(KeyboardInterrupt):
        cluster.up(2, str(tmp_path / "hosts.txt"), "1gbit", subnet(1), mine, tmp_path)
    made = [n for n in netns.netns_names() + netns.link_names() if n.startswith(mine)]
    assert sorted(made) == sorted([f"{mine}br"] + [f"{mine}h{i}" for i in (0, 0, 1, 1)])
    holder = cluster.load(tmp_path)["hosts"][0]["init"]
    assert netns.in_netns(holder, f"{mine}h0")
    for _ in range(2):
        proc = subprocess.run([PY, "-m", "mxref.tools.cluster", "--state-dir", str(tmp_path), "down"],
                              capture_output=True, text=True, timeout=30, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert proc.returncode == 0, proc.stderr
    assert not [n for n in netns.netns_names() + netns.link_names() if n.startswith(mine)]
    assert not os.path.exists(f"/proc/{holder}") or not netns.in_netns(holder, f"{mine}h0")
    assert "removed nothing" in proc.stdout and cluster.load(tmp_path) is None


@pytest.mark.timeout(60)
def test_up_refuses_clearly_without_privileges_and_on_a_taken_subnet(tmp_path):
    """Without CAP_NET_ADMIN/CAP_SYS_ADMIN (dropped with setpriv) ``up`` exits 2 and says why; a
    subnet that overlaps a route of this machine is refused before anything is made."""
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv to drop capabilities")
    mine = prefix("p")
    cmd = [PY, "-m", "mxref.tools.cluster", "--state-dir", str(tmp_path), "up", "-n", "1", "--prefix",
           mine, "--subnet", subnet(2), "--hostfile", str(tmp_path / "h.txt")]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(["setpriv", "--bounding-set=-net_admin,-sys_admin", *cmd], capture_output=True,
                          text=True, timeout=30, env=env)
    assert proc.returncode == 2 and "needs root (missing CAP_NET_ADMIN and CAP_SYS_ADMIN)" in proc.stderr
    route = netns.run("ip", "-o", "-4", "route", "show").stdout.split()
    taken = next((w for w in route if "/" in w), None)
    if taken is not None:
        with pytest.raises(cluster.ClusterError, match="overlaps the route"):
            cluster.up(1, str(tmp_path / "h.txt"), subnet=taken, prefix=mine, folder=tmp_path)
    assert not [n for n in netns.netns_names() + netns.link_names() if n.startswith(mine)]


@pytest.mark.timeout(60)
def test_down_in_a_finally_leaves_nothing_when_the_body_fails(tmp_path):
    """The pattern every test here uses: a body that fails midway, ``down`` in ``finally``; after
    it ``ip netns list`` and ``ip link`` show no name of the cluster and its holders are gone."""
    mine = prefix("d")
    with pytest.raises(RuntimeError, match="midway"):
        try:
            state = cluster.up(3, str(tmp_path / "hosts.txt"), "100mbit", subnet(3), mine, tmp_path)
            assert len([n for n in netns.netns_names() if n.startswith(mine)]) == 3
            raise RuntimeError("the test body fails midway")
        finally:
            cluster.down(tmp_path)
    names = netns.run("ip", "netns", "list").stdout + netns.run("ip", "link").stdout
    assert mine not in names
    assert not any(os.path.exists(f"/proc/{h['init']}") and netns.in_netns(h["init"], h["netns"])
                   for h in state["hosts"])

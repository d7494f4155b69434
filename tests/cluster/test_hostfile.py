"""Hostfiles, the launcher's cluster path and the cluster's argument checks: no privileges needed."""
import json
import sys

import pytest

from mxref.tools import cluster, hostfile, launch, netns


def fake_cluster(tmp_path):
    """A cluster record and its hostfile, as ``up`` writes them (nothing is made)."""
    state = {"prefix": "mxfake-", "bridge": "mxfake-br", "bridge_addr": "10.78.20.1", "iface": "mxfake-eth",
             "state_dir": str(tmp_path), "exec": str(tmp_path / "exec"),
             "hosts": [{"name": f"mxfake-h{i}", "addr": f"10.78.20.{i + 2}", "netns": f"mxfake-h{i}"}
                       for i in range(2)]}
    (tmp_path / "cluster.json").write_text(json.dumps(state))
    path = tmp_path / "hosts.txt"
    hostfile.write(str(path), [(h["addr"], 1) for h in state["hosts"]], state=str(tmp_path / "cluster.json"),
                   comments=("a comment",))
    return state, str(path)


def test_hostfile_parsing_and_hydra_placement(tmp_path):
    path = tmp_path / "h"
    path.write_text("# real machines\nnode1:3\nnode2   # two slots? no: one\n\nnode3:2\n")
    hf = hostfile.read(str(path))
    assert hf.hosts == [("node1", 3), ("node2", 1), ("node3", 2)] and hf.cluster() is None
    assert hf.placement(8) == ["node1"] * 3 + ["node2", "node3", "node3", "node1", "node1"]
    path.write_text("node1:zero\n")
    with pytest.raises(ValueError, match=r"h:1: expected 'host' or 'host:slots'"):
        hostfile.read(str(path))
    path.write_text("# nothing\n")
    with pytest.raises(ValueError, match="lists no hosts"):
        hostfile.read(str(path))


def test_a_cluster_hostfile_gives_mpiexec_the_cluster_options(tmp_path):
    state, path = fake_cluster(tmp_path)
    args = launch._parse(["-n", "2", "-s", "1", "--hostfile", path, "--", "python", "x.py"])
    cmd = launch.mpi_command(args)
    guard = [sys.executable, "-m", "mxref.tools.rank_guard", "--"]
    assert cmd[1:] == ["-f", path, "-launcher", "ssh", "-launcher-exec", state["exec"], "-iface", "mxfake-br",
                       "-n", "3", *guard, "python", "x.py"]
    assert launch.cluster_plan(args)[1] == {"FI_PROVIDER": "tcp", "FI_TCP_IFACE": "mxfake-eth",
                                            "UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "mxfake-eth"}
    assert launch.placement_text(args) == (
        "ranks were on: MPI rank 0 = server 0 on mxfake-h0 (10.78.20.2), MPI rank 1 = worker 0 on "
        "mxfake-h1 (10.78.20.3), MPI rank 2 = worker 1 on mxfake-h0 (10.78.20.2)")
    # a hostfile of real machines: plain mpiexec -f (ssh), nothing added
    real = tmp_path / "real"
    real.write_text("node1:2\n")
    args = launch._parse(["-n", "2", "--hostfile", str(real), "--", "p"])
    assert launch.mpi_command(args)[1:] == ["-f", str(real), "-n", "2", *guard, "p"]


def test_robust_runs_enter_the_hosts_and_refuse_real_machines(tmp_path):
    state, path = fake_cluster(tmp_path)
    args = launch._parse(["-n", "3", "--engine", "robust", "--hostfile", path, "--", "python", "w.py"])
    tracker_host, place = launch.robust_placement(args)
    assert tracker_host == "10.78.20.1"
    prefix, env = place(2)
    assert prefix == [state["exec"], "10.78.20.2", "--"] and env == {"MXREF_BIND_HOST": "10.78.20.2"}
    assert place(1)[1] == {"MXREF_BIND_HOST": "10.78.20.3"}
    assert not any("SECRET" in word for word in prefix)        # the secret travels in the environment
    real = tmp_path / "real"
    real.write_text("node1:2\n")
    with pytest.raises(SystemExit, match="needs hosts made by python -m mxref.tools.cluster"):
        launch.robust_placement(launch._parse(["-n", "2", "--engine", "robust", "--hostfile", str(real),
                                               "--", "p"]))
    (tmp_path / "cluster.json").unlink()
    with pytest.raises(ValueError, match="is the cluster up"):
        launch.robust_placement(args)


def test_rates_and_plans_are_checked_before_anything_is_made(tmp_path):
    assert netns.parse_rate("100mbit") == 100_000_000 and netns.parse_rate("1gbit") == 10**9
    assert netns.parse_rate("2.5Mbit") == 2_500_000 and netns.parse_rate("unlimited") is None
    with pytest.raises(ValueError, match="expected a number with kbit"):
        netns.parse_rate("fast")
    assert netns.tbf_burst(100_000_000) == 256 * 1024 and netns.tbf_burst(10**10) == 12_500_000
    with pytest.raises(cluster.ClusterError, match="longer than 15 characters"):
        cluster._plan(2, "a-very-long-prefix-", "10.76.21.0/24", None, tmp_path)
    with pytest.raises(cluster.ClusterError, match="private IPv4 network with room"):
        cluster._plan(8, "mxt-", "10.76.21.0/29", None, tmp_path)
    with pytest.raises(cluster.ClusterError, match="private IPv4"):
        cluster._plan(2, "mxt-", "8.8.8.0/24", None, tmp_path)
    plan = cluster._plan(2, "mxt-", "10.76.21.0/24", 10**9, tmp_path)
    assert plan["bridge_addr"] == "10.76.21.1" and [h["addr"] for h in plan["hosts"]] == ["10.76.21.2",
                                                                                          "10.76.21.3"]


def test_exec_names_the_hosts_it_has(tmp_path, capsys):
    state, _ = fake_cluster(tmp_path)
    assert netns.exec_main([str(tmp_path / "cluster.json"), "-x", "nohost", "true"]) == 255
    err = capsys.readouterr().err
    assert "no host 'nohost' in this cluster; it has mxfake-h0 (10.78.20.2), mxfake-h1" in err
    state["hosts"][0]["init"] = 0
    (tmp_path / "cluster.json").write_text(json.dumps(state))
    assert netns.exec_main([str(tmp_path / "cluster.json"), "mxfake-h0", "--", "true"]) == 255
    assert "has no running holder" in capsys.readouterr().err

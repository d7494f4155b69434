"""Memory planning: mxref's plan against MXNet 1.9.1's ``Total N MB allocated`` on the same symbols.

The symbols are built by MXNet 1.9.1 itself (in a subprocess of ``/work/venvs/mxnet191``), bound
with ``simple_bind`` and measured with ``debug_str()``; their JSON is then loaded by mxref, which
builds the same training graph (gradient pass, head-gradient hints, external gradient arrays),
infers shapes and runs ``plan_memory``. Per model and mode it prints MXNet's figure, mxref's, the
no-sharing figure, the lower bound (largest set of entries alive at once) and the ratios.

Run::

    .venv/bin/python benchmarks/bench_memory_planning.py            # all models
    .venv/bin/python benchmarks/bench_memory_planning.py --models mlp lenet
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root

MXNET_PYTHON = os.environ.get("MXNET191_PYTHON", "/work/venvs/mxnet191/bin/python")

# (model, mode, batch); mode "train_mirror" is training with MXNET_BACKWARD_DO_MIRROR=1
CASES = [
    ("mlp", "infer", 1), ("mlp", "infer", 64), ("mlp", "train", 32),
    ("lenet", "infer", 1), ("lenet", "infer", 64), ("lenet", "train", 32),
    ("vgg16", "infer", 1), ("vgg16", "infer", 64), ("vgg16", "train", 32),
    ("resnet50", "infer", 1), ("resnet50", "infer", 64), ("resnet50", "train", 32),
    ("resnet50", "train_mirror", 32),
    ("deep_mlp", "infer", 1024), ("deep_mlp", "train", 1024),
]


# ---------------------------------------------------------------------------------------------
# Model builders: plain MXNet 1.x symbol code, run by MXNet 1.9.1 (``mx`` is the module).
# ---------------------------------------------------------------------------------------------

def mlp(mx):
    h = mx.sym.Variable("data")
    for i, n in enumerate((128, 64)):
        h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=n, name=f"fc{i + 1}"),
                              act_type="relu", name=f"relu{i + 1}")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=10, name="fc3"), name="softmax")


def deep_mlp(mx):
    h = mx.sym.Variable("data")
    for i in range(24):
        h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=2048, name=f"fc{i}"),
                              act_type="relu", name=f"relu{i}")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=10, name="fc_out"), name="softmax")


def lenet(mx):
    h = mx.sym.Variable("data")
    for i, nf in enumerate((20, 50)):
        h = mx.sym.Convolution(h, kernel=(5, 5), num_filter=nf, name=f"conv{i + 1}")
        h = mx.sym.Activation(h, act_type="tanh", name=f"tanh{i + 1}")
        h = mx.sym.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2), name=f"pool{i + 1}")
    h = mx.sym.Flatten(h, name="flatten")
    h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=500, name="fc1"), act_type="tanh",
                          name="tanh3")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=10, name="fc2"), name="softmax")


def vgg16(mx):
    h = mx.sym.Variable("data")
    for i, (reps, nf) in enumerate(zip((2, 2, 3, 3, 3), (64, 128, 256, 512, 512))):
        for j in range(reps):
            h = mx.sym.Convolution(h, kernel=(3, 3), pad=(1, 1), num_filter=nf, name=f"conv{i + 1}_{j + 1}")
            h = mx.sym.Activation(h, act_type="relu", name=f"relu{i + 1}_{j + 1}")
        h = mx.sym.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2), name=f"pool{i + 1}")
    h = mx.sym.Flatten(h, name="flatten")
    for name in ("6", "7"):
        h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=4096, name="fc" + name),
                              act_type="relu", name="relu" + name)
        h = mx.sym.Dropout(h, p=0.5, name="drop" + name)
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=1000, name="fc8"), name="softmax")


def resnet50(mx):
    """ResNet-50 v1 (post-activation bottleneck units with BatchNorm), ImageNet layout."""
    def conv_bn(x, nf, kernel, stride, pad, name, relu=True):
        x = mx.sym.Convolution(x, num_filter=nf, kernel=kernel, stride=stride, pad=pad, no_bias=True,
                               name=name + "_conv")
        x = mx.sym.BatchNorm(x, fix_gamma=False, eps=2e-5, momentum=0.9, name=name + "_bn")
        return mx.sym.Activation(x, act_type="relu", name=name + "_relu") if relu else x

    h = conv_bn(mx.sym.Variable("data"), 64, (7, 7), (2, 2), (3, 3), "stem")
    h = mx.sym.Pooling(h, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", name="stem_pool")
    for stage, (units, nf) in enumerate(zip((3, 4, 6, 3), (256, 512, 1024, 2048))):
        for unit in range(units):
            name = f"stage{stage + 1}_unit{unit + 1}"
            stride = (2, 2) if unit == 0 and stage > 0 else (1, 1)
            b = conv_bn(h, nf // 4, (1, 1), stride, (0, 0), name + "_a")
            b = conv_bn(b, nf // 4, (3, 3), (1, 1), (1, 1), name + "_b")
            b = conv_bn(b, nf, (1, 1), (1, 1), (0, 0), name + "_c", relu=False)
            short = h if unit > 0 else conv_bn(h, nf, (1, 1), stride, (0, 0), name + "_sc", relu=False)
            h = mx.sym.Activation(b + short, act_type="relu", name=name + "_relu")
    h = mx.sym.Pooling(h, global_pool=True, kernel=(7, 7), pool_type="avg", name="pool")
    h = mx.sym.Flatten(h, name="flatten")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=1000, name="fc"), name="softmax")


MODELS = {"mlp": (mlp, (784,)), "deep_mlp": (deep_mlp, (2048,)), "lenet": (lenet, (1, 28, 28)),
          "vgg16": (vgg16, (3, 224, 224)), "resnet50": (resnet50, (3, 224, 224))}
NO_GRAD = ("data", "softmax_label")   # Module's convention: inputs and labels get no gradient


# ---------------------------------------------------------------------------------------------
# MXNet 1.9.1 side (runs in the subprocess)
# ---------------------------------------------------------------------------------------------

def run_mxnet(cases):
    import mxnet as mx  # noqa: PLC0415 - only in the MXNet subprocess
    results = []
    for model, mode, batch in cases:
        build, in_shape = MODELS[model]
        sym = build(mx)
        shapes = {"data": (batch,) + in_shape, "softmax_label": (batch,)}
        train = mode.startswith("train")
        os.environ["MXNET_BACKWARD_DO_MIRROR"] = "1" if mode == "train_mirror" else "0"
        req = {n: ("null" if (n in NO_GRAD or not train) else "write") for n in sym.list_arguments()}
        ex = sym.simple_bind(mx.cpu(), grad_req=req, **shapes)
        line = [ln for ln in ex.debug_str().splitlines() if ln.endswith("MB allocated")][0]
        arg_shapes, _, aux_shapes = sym.infer_shape(**shapes)
        results.append({"model": model, "mode": mode, "batch": batch, "mxnet_mb": int(line.split()[1]),
                        "json": sym.tojson(), "grad_req": req,
                        "shapes": dict(zip(sym.list_arguments(), arg_shapes)),
                        "aux_shapes": dict(zip(sym.list_auxiliary_states(), aux_shapes))})
        del ex
    return results


# ---------------------------------------------------------------------------------------------
# mxref side
# ---------------------------------------------------------------------------------------------

def infer_entry_shapes(graph, var_shapes):
    """Shapes of every entry by one forward sweep of the ops' ``infer_shape`` (inputs all known).

    Variables not in ``var_shapes`` (head gradients) take the shape their reader infers for them.
    """
    from mxref.base import MXNetError  # noqa: PLC0415

    idx = graph.indexed
    shape = [None] * idx.num_node_entries
    for nid, node in enumerate(idx.nodes):
        if node.is_variable:
            if node.name in var_shapes:
                shape[idx.entry_id(nid, 0)] = tuple(var_shapes[node.name])
            continue
        ins = [shape[idx.entry_id(e)] for e in node.inputs]
        new_ins, outs = node.op.infer_shape(node.params, ins)
        for e, s in zip(node.inputs, new_ins):
            if shape[idx.entry_id(e)] is None and s is not None:
                shape[idx.entry_id(e)] = tuple(s)
        for i, s in enumerate(outs):
            if s is None:
                raise MXNetError(f"cannot infer output {i} of {node.name} ({node.op.name}) from {ins}")
            shape[idx.entry_id(nid, i)] = tuple(s)
    return shape


def mxref_plan(case, outputs=None, mirror_fun=None, mirror_everywhere=False):
    """Plan the case's graph in mxref; returns ``memory_report`` plus the graph.

    ``outputs`` (the loaded symbol) and ``mirror_fun`` (which nodes to recompute) may be given;
    by default the JSON is loaded and mirroring follows the case's mode.
    """
    import numpy as np  # noqa: PLC0415

    from mxref.graph import (
        Graph,  # noqa: PLC0415
        NodeEntry,  # noqa: PLC0415
    )
    from mxref.passes.gradient import full_graph  # noqa: PLC0415
    from mxref.passes.mirror import mxnet_mirror_fun  # noqa: PLC0415
    from mxref.passes.plan_memory import EXTERNAL_STORAGE_ID, memory_report, plan_memory  # noqa: PLC0415
    from mxref.symbol.json_format import from_json  # noqa: PLC0415

    outputs = outputs or from_json(case["json"])
    var_shapes = dict(case["shapes"], **case["aux_shapes"])
    if case["mode"].startswith("train"):
        fwd = Graph(outputs).indexed
        xs = [NodeEntry(fwd.nodes[nid], 0, 0) for nid in fwd.arg_nodes
              if case["grad_req"].get(fwd.nodes[nid].name, "null") != "null"]
        mirror_fun = mirror_fun or mxnet_mirror_fun(case["mode"] == "train_mirror")
        graph = full_graph(outputs, xs, mirror_fun=mirror_fun, mirror_everywhere=mirror_everywhere)
        num_fwd = graph.attrs["num_forward_outputs"]
    else:
        graph, num_fwd = Graph(outputs), len(outputs)
    idx = graph.indexed
    graph.attrs["shape"] = infer_entry_shapes(graph, var_shapes)
    graph.attrs["dtype"] = [np.dtype(np.float32)] * idx.num_node_entries
    storage = [-1] * idx.num_node_entries
    for e in graph.outputs[num_fwd:]:       # gradient arrays are bound by the caller
        storage[idx.entry_id(e)] = EXTERNAL_STORAGE_ID
    graph.attrs["storage"] = storage
    graph = plan_memory(graph)
    return memory_report(graph), graph


def mirror_rows(case):
    """ResNet-50-style training under each mirror policy: (policy, MB planned with 'auto')."""
    from mxref.graph import Graph  # noqa: PLC0415
    from mxref.passes.memory_report import memory_report  # noqa: PLC0415
    from mxref.passes.mirror import budget_plan, default_threshold, mxnet_mirror_fun, sublinear_plan  # noqa: PLC0415
    from mxref.passes.plan_memory import plan_memory  # noqa: PLC0415
    from mxref.symbol.json_format import from_json  # noqa: PLC0415

    rows = []
    for policy in ("none", "mxnet", "cheap", "budget", "sublinear"):
        outputs = from_json(case["json"])
        fun = mxnet_mirror_fun(policy in ("mxnet", "cheap"))
        if policy in ("budget", "sublinear"):
            fwd = Graph(outputs)
            fwd.attrs["shape"] = infer_entry_shapes(fwd, dict(case["shapes"], **case["aux_shapes"]))
            shapes = lambda e, g=fwd: g.attrs["shape"][g.indexed.entry_id(e)]
            chosen = (budget_plan(outputs, shapes) if policy == "budget"
                      else sublinear_plan(outputs, shapes, default_threshold(outputs, shapes)))
            fun = lambda node, chosen=chosen: id(node) in chosen
        everywhere = policy not in ("none", "mxnet")
        _, graph = mxref_plan(case, outputs, mirror_fun=fun, mirror_everywhere=everywhere)
        auto = memory_report(plan_memory(graph, strategy="auto"))["planned"]
        rows.append((policy, memory_report(graph)["planned"], auto))
    return rows


def main(argv=None):
    from mxref.passes.memory_report import memory_report  # noqa: PLC0415
    from mxref.passes.plan_memory import plan_memory  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=None)
    parser.add_argument("--mxnet-side", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.models is None or c[0] in args.models]
    if args.mxnet_side:
        json.dump(run_mxnet(cases), sys.stdout)
        return
    cmd = [MXNET_PYTHON, os.path.abspath(__file__), "--mxnet-side"]
    if args.models:
        cmd += ["--models", *args.models]
    env = dict(os.environ, OMP_NUM_THREADS="1", MXNET_SUBGRAPH_BACKEND="NONE")
    ref = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)
    mb = lambda b: b / 2 ** 20
    print("Total MB allocated (planned intermediate entries, 4 bytes/element, as MXNet counts)")
    print(f"{'model':9} {'mode':13} {'batch':>5} | {'MXNet':>6} {'nnvm':>6} {'auto':>6} {'auto/MX':>7} | "
          f"{'no-share':>8} {'reduct.':>7} | {'lower bd':>8} {'auto/LB':>7}")
    for case in ref:
        report, graph = mxref_plan(case)
        auto = memory_report(plan_memory(graph, strategy="auto"))["planned"]
        ratio = (auto >> 20) / case["mxnet_mb"] if case["mxnet_mb"] else float("nan")
        print(f"{case['model']:9} {case['mode']:13} {case['batch']:5d} | {case['mxnet_mb']:6d} "
              f"{report['planned'] >> 20:6d} {auto >> 20:6d} {ratio:7.2f} | {mb(report['no_sharing']):8.1f} "
              f"{report['no_sharing'] / auto:6.2f}x | {mb(report['lower_bound']):8.1f} "
              f"{auto / report['lower_bound']:7.2f}")
    for case in ref:
        if case["mode"] == "train" and case["model"] == "resnet50":
            print(f"\nmirror policies, {case['model']} training batch {case['batch']} (MB; change vs none)")
            rows = mirror_rows(case)
            base = rows[0][2]
            for policy, nnvm, auto in rows:
                change = 100 * (auto - base) / base
                print(f"  {policy:10} nnvm {nnvm >> 20:6d}  auto {auto >> 20:6d}  {change:+6.1f}%")


if __name__ == "__main__":
    main()

"""``Pipeline``: GPipe's micro-batch schedule over model stages placed on several devices.

A model cut into stages ``S_0 .. S_{K-1}`` (one Symbol each, stage ``k`` on ``contexts[k]``) is
trained one batch at a time, the batch split into ``m`` micro-batches::

    forward:   for j in 0..m-1:  for k in 0..K-1:   F_k(j)     (input: F_{k-1}(j)'s output, copied)
    backward:  for j in m-1..0:  for k in K-1..0:   B_k(j)     (head: B_{k+1}(j)'s input gradient)
    update:    one optimizer step per parameter, on its device, with the gradients summed over j

Everything is pushed to the engine at once and nothing waits: each device's worker runs its
stage's work as soon as its inputs are there, so ``F_0(j+1)`` on device A runs while ``F_1(j)``
runs on device B (the "bubble" is only the ramp up and down), and the activation copies run on
the copy workers in between. Each (stage, micro-batch) pair has its own executor, so the
activations of every micro-batch stay alive for its backward, as GPipe keeps them; the
parameters and their gradients (``grad_req='add'``) are shared by the stage's executors.

Results equal the unsplit batch up to float summation order (the weight gradient of a layer
is a sum over samples, here summed per micro-batch then over micro-batches), provided the loss
sums over samples and no layer mixes samples: BatchNorm sees micro-batch statistics, as in
GPipe. ``tests/parallel/test_pipeline.py`` checks ``rtol=1e-5`` against the one-batch step.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from .. import initializer as _init
from .. import optimizer as _opt
from ..base import MXNetError
from ..context import Context
from ..executor import Executor
from ..ndarray import imperative
from ..ndarray.ndarray import NDArray
from ..ndarray.utils import zeros

__all__ = ["Pipeline"]


class Pipeline:
    """Train ``stages`` (Symbols) placed on ``contexts`` with GPipe's schedule.

    Parameters
    ----------
    stages : list of Symbol
        Stage ``k > 0`` reads the previous stage's (single) output through its argument
        ``input_name``; the last stage ends in a loss layer (no head gradient needed).
    contexts : list of Context
        One device per stage (the same device twice is allowed: that is the unsplit baseline).
    data_shapes, label_shapes : dict of str to tuple
        Whole-batch shapes of the first stage's data and the last stage's labels (batch axis 0).
    num_microbatches : int
        ``m``; the batch size must be divisible by it.
    optimizer, optimizer_params
        As ``mx.optimizer.create``; ``rescale_grad`` defaults to ``1 / batch_size``.
    initializer : Initializer, optional
        Default ``Uniform(0.07)``; ``set_params`` overrides.

    Example
    -------
    >>> pipe = Pipeline([stage0, stage1], [mx.cpu(0), mx.cpu(1)], {"data": (64, 784)},
    ...                 {"softmax_label": (64,)}, num_microbatches=4)
    >>> pipe.step(data=x, softmax_label=y)      # forward, backward, one update; returns outputs
    """

    def __init__(self, stages: Sequence, contexts: Sequence[Context], data_shapes: Dict[str, tuple],
                 label_shapes: Dict[str, tuple], num_microbatches: int = 4, optimizer="sgd",
                 optimizer_params: Optional[dict] = None, initializer=None, input_name: str = "data"):
        if len(stages) != len(contexts) or not stages:
            raise MXNetError(f"Pipeline: {len(stages)} stages for {len(contexts)} contexts; give one "
                             "context per stage")
        self.stages, self.contexts = list(stages), list(contexts)
        self.m = int(num_microbatches)
        self.input_name = input_name
        batch = {s[0] for s in list(data_shapes.values()) + list(label_shapes.values())}
        if len(batch) != 1:
            raise MXNetError(f"Pipeline: data and labels disagree on the batch size: {data_shapes}, "
                             f"{label_shapes}")
        self.batch_size = batch.pop()
        if self.m < 1 or self.batch_size % self.m:
            raise MXNetError(f"Pipeline: batch size {self.batch_size} is not divisible by "
                             f"num_microbatches={self.m}")
        self.data_names, self.label_names = list(data_shapes), list(label_shapes)
        micro = {n: (s[0] // self.m,) + tuple(s[1:]) for n, s in {**data_shapes, **label_shapes}.items()}
        self.params: List[Dict[str, NDArray]] = []      # per stage: name -> weight (on its device)
        self.grads: List[Dict[str, NDArray]] = []
        self.aux: List[Dict[str, NDArray]] = []
        self.execs: List[List[Executor]] = []           # [stage][micro-batch]
        in_shape = None
        for k, (sym, ctx) in enumerate(zip(self.stages, self.contexts)):
            feeds = {n: micro[n] for n in sym.list_arguments() if n in micro}
            if k > 0:
                if input_name not in sym.list_arguments():
                    raise MXNetError(f"Pipeline: stage {k} has no argument '{input_name}' to read the "
                                     f"previous stage's output; its arguments are {sym.list_arguments()}")
                feeds[input_name] = in_shape
            arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**feeds)
            if k + 1 < len(self.stages) and len(out_shapes) != 1:
                raise MXNetError(f"Pipeline: stage {k} has {len(out_shapes)} outputs; an inner stage "
                                 "hands exactly one to the next")
            in_shape = out_shapes[0]
            self._bind_stage(k, sym, ctx, dict(zip(sym.list_arguments(), arg_shapes)),
                             dict(zip(sym.list_auxiliary_states(), aux_shapes)), set(feeds))
        params = dict(optimizer_params or {})
        params.setdefault("rescale_grad", 1.0 / self.batch_size)
        names = [n for p in self.params for n in p]
        self.optimizer = _opt.create(optimizer, param_idx2name=dict(enumerate(names)), **params)
        self._updater = _opt.get_updater(self.optimizer)
        init = initializer or _init.Uniform(0.07)
        for k in range(len(self.stages)):
            for name, arr in {**self.params[k], **self.aux[k]}.items():
                init(_init.InitDesc(name), arr)

    def _bind_stage(self, k: int, sym, ctx: Context, arg_shapes: dict, aux_shapes: dict, feeds: set):
        """One executor per micro-batch: private inputs and activations, shared weights/gradients."""
        params = {n: zeros(s, ctx) for n, s in arg_shapes.items() if n not in feeds}
        grads = {n: zeros(a.shape, ctx) for n, a in params.items()}
        aux = {n: zeros(s, ctx) for n, s in aux_shapes.items()}
        execs = []
        for _ in range(self.m):
            args = dict(params, **{n: zeros(arg_shapes[n], ctx) for n in feeds})
            args_grad = dict(grads)
            reqs = {n: "add" for n in params}
            if k > 0:       # the gradient handed back to the previous stage
                args_grad[self.input_name] = zeros(arg_shapes[self.input_name], ctx)
                reqs[self.input_name] = "write"
            execs.append(sym.bind(ctx, args, args_grad=args_grad, grad_req=reqs, aux_states=aux))
        self.params.append(params)
        self.grads.append(grads)
        self.aux.append(aux)
        self.execs.append(execs)

    # -- one batch ---------------------------------------------------------------------------
    def forward_backward(self, **batch) -> List[NDArray]:
        """Push GPipe's forward and backward for one batch (gradients summed over micro-batches);
        returns the last stage's outputs, one list entry per micro-batch (reading waits)."""
        missing = [n for n in self.data_names + self.label_names if n not in batch]
        if missing:
            raise MXNetError(f"Pipeline: the batch lacks {missing}")
        last = len(self.stages) - 1
        for grads in self.grads:
            for g in grads.values():
                g[:] = 0
        size = self.batch_size // self.m
        for name in self.data_names + self.label_names:
            value = batch[name]
            value = value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)
            for j in range(self.m):
                stage = 0 if name in self.data_names else last
                self.execs[stage][j].arg_dict[name][:] = value[j * size:(j + 1) * size]
        for j in range(self.m):
            for k in range(len(self.stages)):
                exe = self.execs[k][j]
                if k > 0:
                    self.execs[k - 1][j].outputs[0].copyto(exe.arg_dict[self.input_name])
                exe.forward(is_train=True)
        for j in reversed(range(self.m)):
            for k in reversed(range(len(self.stages))):
                exe = self.execs[k][j]
                if k == last:
                    exe.backward()
                else:
                    exe.backward(out_grads=[self.execs[k + 1][j].grad_dict[self.input_name]])
        return [self.execs[last][j].outputs[0] for j in range(self.m)]

    def predict(self, **data) -> NDArray:
        """The last stage's outputs for one batch of ``data`` in inference mode (no gradients; the
        micro-batches still pipeline), on the last stage's device."""
        size = self.batch_size // self.m
        for name in self.data_names:
            value = data[name].asnumpy() if isinstance(data[name], NDArray) else np.asarray(data[name])
            for j in range(self.m):
                self.execs[0][j].arg_dict[name][:] = value[j * size:(j + 1) * size]
        for j in range(self.m):
            for k, execs in enumerate(self.execs):
                if k > 0:
                    self.execs[k - 1][j].outputs[0].copyto(execs[j].arg_dict[self.input_name])
                execs[j].forward(is_train=False)
        outs = [self.execs[-1][j].outputs[0] for j in range(self.m)]
        return outs[0].copy() if len(outs) == 1 else _concat(outs)

    def update(self) -> None:
        """One optimizer step per parameter, on the device that holds it."""
        i = 0
        for params, grads in zip(self.params, self.grads):
            for name, weight in params.items():
                self._updater(i, grads[name], weight)
                i += 1

    def step(self, **batch) -> NDArray:
        """``forward_backward`` then ``update``; returns the outputs of the whole batch (on the
        last stage's device)."""
        outs = self.forward_backward(**batch)
        self.update()
        return outs[0] if len(outs) == 1 else _concat(outs)

    # -- parameters --------------------------------------------------------------------------
    def get_params(self) -> tuple:
        """``(arg_params, aux_params)``: copies on ``cpu(0)``, gathered from every stage's device."""
        cpu = Context("cpu", 0)
        args = {n: a.copyto(cpu) for p in self.params for n, a in p.items()}
        aux = {n: a.copyto(cpu) for p in self.aux for n, a in p.items()}
        return args, aux

    def set_params(self, arg_params: dict, aux_params: Optional[dict] = None) -> None:
        """Copy values into the stages' parameters (each stays on its device)."""
        for store, given in ((self.params, arg_params), (self.aux, aux_params or {})):
            for stage in store:
                for name, arr in stage.items():
                    if name in given:
                        arr[:] = given[name]


def _concat(outs: List[NDArray]) -> NDArray:
    return imperative.invoke_name("Concat", outs, {"num_args": len(outs), "dim": 0})[0]

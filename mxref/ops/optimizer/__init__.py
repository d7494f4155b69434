"""Optimizer update operators (``sgd_update``, ``adam_update``, ...): weight and states updated in place.

Each operator takes ``weight, grad`` and its optimizer states. The states are declared as the
op's ``aux_states`` (inputs the kernel mutates), so the engine orders them like any written array,
and ``out=weight`` makes the update itself in place. Updates are therefore asynchronous engine
operations: ``optimizer.update`` returns at once and a later read of the weight waits for it.

Conventions shared with MXNet's kernels: ``rescale_grad`` multiplies the gradient first, then
``clip_gradient`` clips it to ``[-c, c]`` when ``c >= 0`` (``-1``, the default, means no clipping).
Where weight decay enters differs per optimizer and is written in each operator's docstring.
"""

"""The ``gpu`` entries of the kernel table: CUDA kernels (``mxref/_ext/cuda/kernels``) for the ops.

One file per kernel family registers ``register_kernel(op, 'gpu', fn, ...)``; each op's numpy
kernel is the reference it is tested against (``harness.check_gpu_kernel``). Registering compiles
nothing: a family's module is built the first time one of its kernels runs.
"""

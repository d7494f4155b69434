"""Sparse kernels (MXNet's ``FComputeEx``) and the storage types each operator accepts.

``base.py`` holds the numpy containers the kernels work on and ``register_storage``; each other
module gives one family of operators its sparse kernels (``docs/architecture/sparse.md``).
"""

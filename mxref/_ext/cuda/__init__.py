"""CUDA kernels (``kernels/*.cu``), the CUDA emulator (``emu/``, ``emulator.py``) and the GPU runtime.

``runtime.py`` is the entry point: backend choice (``MXREF_CUDA=emulate|pycuda|off``), device
memory, ``SourceModule``/``get_function``/launch, streams. Importing this package touches no GPU.
"""

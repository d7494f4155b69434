"""Build mxref; the Cython extensions in mxref/_ext are optional (pure Python still installs)."""
import glob
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """Build each extension if a compiler is present; on failure warn and keep the pure-Python path.

    ``MXREF_ENFORCE_EXT=1`` turns a failed build into an error (the ``ext`` tox environment).
    """

    def run(self):
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - no compiler / no Cython: pure Python install
            self._fail(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # noqa: BLE001
            self._fail(exc, ext.name)

    def _fail(self, exc, name="extensions"):
        if os.environ.get("MXREF_ENFORCE_EXT") == "1":
            raise
        sys.stderr.write(f"WARNING: building {name} failed ({exc}); mxref will use pure Python.\n")


def loopback_shim():
    """The LD_PRELOAD bind shim that keeps a single-host MPI job on loopback (plain C, needs no
    Cython, so it is built in pure mode too; mxref/tools/loopback.py uses it)."""
    return [Extension("mxref._ext.loopback_bind", ["mxref/_ext/shim/loopback_bind.c"],
                      libraries=["dl"])]


NUMPY_C_API = ("dispatch_core", "storage_core")


def extensions():
    if os.environ.get("MXREF_ENABLE_EXT") == "0":
        return loopback_shim()
    try:
        from Cython.Build import cythonize
    except ImportError:
        if os.environ.get("MXREF_ENFORCE_EXT") == "1":
            raise
        sys.stderr.write("WARNING: Cython not found; mxref will use pure Python.\n")
        return loopback_shim()
    sources = sorted(glob.glob(os.path.join("mxref", "_ext", "*.pyx")))
    if not sources:
        return loopback_shim()
    exts = cythonize(sources, language_level=3, compiler_directives={"boundscheck": False,
                                                                     "wraparound": False})
    # Modules that make numpy views through numpy's C API (mxref/_ext/views.pxi) need its headers.
    try:
        import numpy
    except ImportError:
        numpy = None
    for ext in exts:
        if numpy is not None and ext.name.rsplit(".", 1)[-1] in NUMPY_C_API:
            ext.include_dirs.append(numpy.get_include())
            ext.define_macros.append(("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION"))
    return loopback_shim() + exts


setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuildExt})

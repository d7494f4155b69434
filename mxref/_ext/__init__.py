"""Optional C fast paths (Cython); ``import mxref`` never requires them."""

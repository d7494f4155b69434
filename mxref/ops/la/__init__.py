"""MXNet's ``_linalg_*`` operators (``mx.nd.linalg`` / ``mx.sym.linalg``): BLAS-3, LAPACK factorizations,
determinants and diagonal/triangle packing, all on batches of matrices in the trailing two axes.

``_common`` holds the shape, type and batching rules the cards share; each module is one family:
``gemm`` (gemm, gemm2), ``triangular`` (trmm, trsm, syrk), ``cholesky`` (potrf, potri, sumlogdiag),
``factor`` (gelqf, syevd), ``det`` (inverse, det, slogdet), ``pack`` (extractdiag, makediag,
extracttrian, maketrian). Gradients follow MXNet's ``src/operator/tensor/la_op-inl.h`` (after
Seeger et al., arXiv:1710.08717).
"""

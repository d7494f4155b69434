"""Which operators AMP runs in float16, which in float32, and which in their inputs' widest type.

Every list names registered operators only (a name mxref lacks is dropped at import), so the
lists are always usable with ``convert_symbol``. Apart from that they are MXNet 1.9.1's
(tests/fixtures/amp/lists_mxnet191.json); the groups:

* ``FP16_FUNCS``: matrix products, where float16 pays off (tensor cores) and accumulation is
  float32 anyway.
* ``FP32_FUNCS``: operators that overflow or lose too much in float16 — exponentials, logs,
  powers, reductions over many elements, linear algebra, sorting, normalisations (BatchNorm
  excepted), softmax and the loss layers.
* ``CONDITIONAL_FP32_FUNCS``: float32 only for some parameter values (``softrelu`` exponentiates).
* ``WIDEST_TYPE_CASTS``: several inputs that must share one type (binary arithmetic, ``concat``);
  they run in the widest of their inputs' types.
* ``FP16_FP32_FUNCS``: everything else: runs in whatever type it is given.
* ``LOSS_OUTPUT_FUNCTIONS``: loss layers whose ``grad_scale`` carries the dynamic loss scale.
"""
from __future__ import annotations

from ....ops import registry

_ALL_FP16 = ["Convolution", "Deconvolution", "FullyConnected", "RNN"]

_ALL_FP32 = [
    # inverse trigonometry and hyperbolics: large outputs or steep slopes
    "arccos", "arcsin", "arctanh", "cosh", "sinh", "tan", "erfinv",
    # exponents and logarithms
    "exp", "expm1", "log", "log10", "log2", "log1p", "gamma", "gammaln",
    # powers
    "broadcast_power", "square", "reciprocal", "rsqrt", "rcbrt", "_power", "_power_scalar",
    "_rpower_scalar", "_rdiv_scalar", "_hypot", "_hypot_scalar", "broadcast_hypot", "_square_sum",
    "_Power", "_PowerScalar", "_RPowerScalar", "_RDivScalar", "_Hypot", "_HypotScalar",
    # reductions: sums of many float16 values overflow
    "sum", "sum_axis", "nansum", "prod", "nanprod", "mean", "norm", "moments", "khatri_rao",
    # linear algebra: products and factorizations of whole matrices (and their aliases)
    "_linalg_sumlogdiag", "_linalg_gelqf", "_linalg_potrf", "_linalg_potri", "_linalg_syevd",
    "_linalg_inverse", "_linalg_det", "_linalg_slogdet", "_linalg_gemm", "_linalg_gemm2",
    "_linalg_syrk", "_linalg_trmm", "_linalg_trsm", "_linalg_extractdiag", "_linalg_extracttrian",
    "_linalg_makediag", "_linalg_maketrian", "linalg_sumlogdiag", "linalg_gelqf", "linalg_potrf",
    "linalg_potri", "linalg_inverse", "linalg_det", "linalg_slogdet", "linalg_gemm", "linalg_gemm2",
    "linalg_syrk", "linalg_trmm", "linalg_trsm", "linalg_extractdiag", "linalg_extracttrian",
    "linalg_makediag", "linalg_maketrian",
    # sorting: float16 ties reorder elements
    "argsort", "topk",
    # normalisations and softmax
    # (BatchNorm is not here: it takes float16 data with float32 parameters, as in MXNet)
    "softmax", "log_softmax", "softmin", "SoftmaxActivation", "InstanceNorm", "LayerNorm",
    "GroupNorm", "L2Normalization", "LRN", "_contrib_SyncBatchNorm",
    # losses
    "SoftmaxOutput", "Softmax", "LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput",
    "SVMOutput", "softmax_cross_entropy", "smooth_l1", "MakeLoss", "make_loss", "CTCLoss",
    "ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss", "Custom", "IdentityAttachKLSparseReg",
    # detection targets and priors compare coordinates to small thresholds
    "_contrib_MultiBoxDetection", "_contrib_MultiBoxPrior", "_contrib_MultiBoxTarget",
]

_ALL_WIDEST = [
    "elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div",
    "_plus", "_Plus", "_minus", "_Minus", "_sub", "_mul", "_Mul", "_div", "_Div", "_mod", "_Mod",
    "_maximum", "_Maximum", "_minimum", "_Minimum", "_equal", "_Equal", "_not_equal", "_Not_Equal",
    "_greater", "_Greater", "_greater_equal", "_Greater_Equal", "_lesser", "_Lesser",
    "_lesser_equal", "_Lesser_Equal", "_logical_and", "_logical_or", "_logical_xor",
    "_Logical_And", "_Logical_Or", "_Logical_Xor",
    "broadcast_add", "broadcast_plus", "broadcast_sub", "broadcast_minus", "broadcast_mul",
    "broadcast_div", "broadcast_mod", "broadcast_maximum", "broadcast_minimum", "broadcast_equal",
    "broadcast_not_equal", "broadcast_greater", "broadcast_greater_equal", "broadcast_lesser",
    "broadcast_lesser_equal", "broadcast_logical_and", "broadcast_logical_or",
    "broadcast_logical_xor", "Concat", "concat", "stack", "add_n", "ElementWiseSum", "dot",
    "batch_dot", "where", "Correlation", "_contrib_box_iou", "_contrib_box_nms",
    "_contrib_box_non_maximum_suppression", "_contrib_ROIAlign", "_contrib_PSROIPooling",
    "_contrib_interleaved_matmul_selfatt_qk", "_contrib_interleaved_matmul_selfatt_valatt",
    "_contrib_interleaved_matmul_encdec_qk", "_contrib_interleaved_matmul_encdec_valatt",
    # densities: the sample and the distribution's parameters share one type
    "_random_pdf_uniform", "_random_pdf_normal", "_random_pdf_gamma", "_random_pdf_exponential",
    "_random_pdf_poisson", "_random_pdf_negative_binomial",
    "_random_pdf_generalized_negative_binomial", "_random_pdf_dirichlet", "random_pdf_uniform",
    "random_pdf_normal", "random_pdf_gamma", "random_pdf_exponential", "random_pdf_poisson",
    "random_pdf_negative_binomial", "random_pdf_generalized_negative_binomial",
    "random_pdf_dirichlet",
]

FP16_FUNCS = [n for n in _ALL_FP16 if registry.exists(n)]
FP32_FUNCS = [n for n in _ALL_FP32 if registry.exists(n)]
CONDITIONAL_FP32_FUNCS = [
    ("Activation", "act_type", ["softrelu"]),
    ("LeakyReLU", "act_type", ["elu", "selu"]),
]
WIDEST_TYPE_CASTS = [n for n in _ALL_WIDEST if registry.exists(n)]
LOSS_OUTPUT_FUNCTIONS = [n for n in ["SoftmaxOutput", "LinearRegressionOutput",
                                     "LogisticRegressionOutput", "MAERegressionOutput"]
                         if registry.exists(n)]

_LISTED = set(FP16_FUNCS) | set(FP32_FUNCS) | set(WIDEST_TYPE_CASTS) | \
    {name for name, _, _ in CONDITIONAL_FP32_FUNCS}
# The rest of the operators (not gradients, not the casts themselves) run in any float type.
FP16_FP32_FUNCS = [n for n in registry.list_ops()
                   if n not in _LISTED and not n.startswith("_backward_")
                   and n not in ("amp_cast", "amp_multicast")]

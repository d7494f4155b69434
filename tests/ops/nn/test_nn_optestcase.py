"""Neural-network operators as declarative ``OpTestCase`` tests: each class below gets forward
against numpy, mx.nd against the executor, finite-difference gradients, reference backward where
given, and float64/float32/reference-kernel consistency, in float32 and float64."""
import numpy as np

from mxref.test_utils import OpTestCase


def _away_from_zero(rng, shape, dtype, lo=0.1):
    """Values in +-[lo, 1): finite differences stay away from the kinks at 0."""
    return (rng.choice([-1, 1], shape) * rng.uniform(lo, 1, shape)).astype(dtype)


def _windows(x, kernel, stride, pad=0, value=0.0):
    """(N, C, OH, OW, KH, KW) sliding windows of an NCHW array."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=value)
    w = np.lib.stride_tricks.sliding_window_view(x, kernel, axis=(2, 3))
    return w[:, :, ::stride, ::stride]


class TestFullyConnected(OpTestCase):
    op = "FullyConnected"
    params = {"num_hidden": 4}
    shapes = {"data": (2, 3, 5)}

    def forward_ref(self, p, data, weight, bias):
        return data.reshape(2, -1) @ weight.T + bias

    def backward_ref(self, p, og, data, weight, bias):
        x = data.reshape(2, -1)
        return {"data": (og[0] @ weight).reshape(data.shape), "weight": og[0].T @ x, "bias": og[0].sum(0)}


class TestFullyConnectedNoBias(TestFullyConnected):
    params = {"num_hidden": 3, "no_bias": True, "flatten": False}
    shapes = {"data": (2, 3, 5)}

    def forward_ref(self, p, data, weight):
        return data @ weight.T

    backward_ref = None


class _Act(OpTestCase):
    op = "Activation"
    shapes = {"data": (3, 4)}
    fn = None

    def make_inputs(self, rng, shapes, dtype):
        return {"data": _away_from_zero(rng, shapes["data"], dtype)}

    def forward_ref(self, p, data):
        return type(self).fn(data)


class TestRelu(_Act):
    params = {"act_type": "relu"}
    fn = staticmethod(lambda x: np.maximum(x, 0))


class TestSigmoid(_Act):
    params = {"act_type": "sigmoid"}
    fn = staticmethod(lambda x: 1 / (1 + np.exp(-x)))


class TestSoftrelu(_Act):
    params = {"act_type": "softrelu"}
    fn = staticmethod(lambda x: np.log1p(np.exp(x)))


class TestSoftsign(_Act):
    params = {"act_type": "softsign"}
    fn = staticmethod(lambda x: x / (1 + np.abs(x)))


class TestLeakyReLU(_Act):
    op = "LeakyReLU"
    params = {"act_type": "leaky", "slope": 0.1}
    fn = staticmethod(lambda x: np.where(x > 0, x, 0.1 * x))


class TestELU(_Act):
    op = "LeakyReLU"
    params = {"act_type": "elu", "slope": 0.5}
    fn = staticmethod(lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)))


class TestSoftmax(OpTestCase):
    op = "softmax"
    params = {"axis": 1}
    shapes = {"data": (2, 3, 4)}

    def forward_ref(self, p, data):
        e = np.exp(data - data.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)


class TestLogSoftmax(TestSoftmax):
    op = "log_softmax"
    params = {}

    def forward_ref(self, p, data):
        m = data.max(-1, keepdims=True)
        return data - m - np.log(np.exp(data - m).sum(-1, keepdims=True))


class TestSoftmaxOutput(OpTestCase):
    """A loss layer: the gradient is softmax - onehot(label) whatever the head gradient."""

    op = "SoftmaxOutput"
    shapes = {"data": (4, 5)}
    grad_args = ()

    def make_inputs(self, rng, shapes, dtype):
        return {"data": rng.uniform(-1, 1, (4, 5)).astype(dtype), "label": np.array([0, 4, 2, 2], dtype)}

    def forward_ref(self, p, data, label):
        e = np.exp(data - data.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    def backward_ref(self, p, og, data, label):
        return {"data": self.forward_ref(p, data, label) - np.eye(5)[label.astype(int)],
                "label": np.zeros_like(label)}


class TestLinearRegressionOutput(OpTestCase):
    op = "LinearRegressionOutput"
    shapes = {"data": (3, 2)}
    grad_args = ()

    def forward_ref(self, p, data, label):
        return data

    def backward_ref(self, p, og, data, label):
        return {"data": (data - label) / 2}


class TestConvolution(OpTestCase):
    op = "Convolution"
    params = {"kernel": (3, 3), "num_filter": 4, "stride": (2, 2), "pad": (1, 1)}
    shapes = {"data": (2, 3, 6, 5)}
    grad_atol = {np.dtype(np.float32): 5e-3}

    def forward_ref(self, p, data, weight, bias):
        win = _windows(data, (3, 3), 2, 1)
        return np.einsum("ncijkl,fckl->nfij", win, weight) + bias[None, :, None, None]


class TestGroupedConvolution(TestConvolution):
    params = {"kernel": (2, 2), "num_filter": 4, "num_group": 2, "no_bias": True}
    shapes = {"data": (2, 4, 4, 4)}

    def forward_ref(self, p, data, weight):
        win = _windows(data, (2, 2), 1)
        halves = [np.einsum("ncijkl,fckl->nfij", win[:, 2 * g:2 * g + 2], weight[2 * g:2 * g + 2])
                  for g in range(2)]
        return np.concatenate(halves, axis=1)


class TestDeconvolution(OpTestCase):
    op = "Deconvolution"
    params = {"kernel": (3, 3), "num_filter": 2, "stride": (2, 2)}
    shapes = {"data": (2, 3, 3, 2)}

    def forward_ref(self, p, data, weight):
        n, c, h, w = data.shape
        out = np.zeros((n, 2, 2 * (h - 1) + 3, 2 * (w - 1) + 3), data.dtype)
        for i in range(h):
            for j in range(w):
                patch = np.einsum("nc,cfkl->nfkl", data[:, :, i, j], weight)
                out[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3] += patch
        return out


class TestMaxPooling(OpTestCase):
    op = "Pooling"
    params = {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"}
    shapes = {"data": (2, 3, 4, 6)}

    def make_inputs(self, rng, shapes, dtype):
        # distinct values, so no window has a tie for its maximum
        return {"data": rng.permutation(np.arange(144) / 144.0).reshape(2, 3, 4, 6).astype(dtype)}

    def forward_ref(self, p, data):
        return _windows(data, (2, 2), 2).max(axis=(-1, -2))


class TestAvgPoolingPadded(OpTestCase):
    """Average pooling with padding divides by the whole window (count_include_pad, item 13)."""

    op = "Pooling"
    params = {"kernel": (3, 3), "stride": (1, 1), "pad": (1, 1), "pool_type": "avg"}
    shapes = {"data": (1, 2, 4, 4)}

    def forward_ref(self, p, data):
        return _windows(data, (3, 3), 1, 1).mean(axis=(-1, -2))


class TestBatchNormTraining(OpTestCase):
    op = "BatchNorm"
    params = {"fix_gamma": False}
    shapes = {"data": (4, 3, 2, 2)}
    is_train = True

    def make_inputs(self, rng, shapes, dtype):
        vals = {k: rng.uniform(-1, 1, s).astype(dtype) for k, s in shapes.items()}
        vals["moving_var"] = rng.uniform(0.5, 1.5, shapes["moving_var"]).astype(dtype)
        return vals

    def forward_ref(self, p, data, gamma, beta, moving_mean, moving_var):
        mean, var = data.mean((0, 2, 3)), data.var((0, 2, 3))
        norm = (data - mean[:, None, None]) / np.sqrt(var[:, None, None] + p["eps"])
        return gamma[:, None, None] * norm + beta[:, None, None]


class TestBatchNormInference(TestBatchNormTraining):
    """Moving statistics (use_global_stats: in training too); fix_gamma (the default) treats gamma as 1."""

    params = {"use_global_stats": True}
    is_train = False
    grad_args = ("data", "beta")

    def forward_ref(self, p, data, gamma, beta, moving_mean, moving_var):
        c = (slice(None), None, None)
        return (data - moving_mean[c]) / np.sqrt(moving_var[c] + p["eps"]) + beta[c]


class TestLayerNorm(OpTestCase):
    op = "LayerNorm"
    shapes = {"data": (3, 5)}

    def forward_ref(self, p, data, gamma, beta):
        mean, var = data.mean(-1, keepdims=True), data.var(-1, keepdims=True)
        return (data - mean) / np.sqrt(var + p["eps"]) * gamma + beta


class TestEmbedding(OpTestCase):
    op = "Embedding"
    shapes = {"data": (2, 3)}
    grad_args = ("weight",)

    def op_params(self, dtype):
        return {"input_dim": 6, "output_dim": 4, "dtype": np.dtype(dtype).name}

    def make_inputs(self, rng, shapes, dtype):
        return {"data": rng.randint(0, 6, (2, 3)).astype(dtype),
                "weight": rng.uniform(-1, 1, (6, 4)).astype(dtype)}

    def forward_ref(self, p, data, weight):
        return weight[data.astype(int)]


class TestDropoutInference(OpTestCase):
    """Identity at inference; training draws a mask, so gradients are checked in the Dropout tests."""

    op = "Dropout"
    params = {"p": 0.5}
    shapes = {"data": (3, 4)}
    grad_args = ()

    def forward_ref(self, p, data):
        return data


class TestPad(OpTestCase):
    op = "Pad"
    params = {"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 2, 2, 1), "constant_value": 0.5}
    shapes = {"data": (1, 2, 3, 3)}

    def forward_ref(self, p, data):
        return np.pad(data, ((0, 0), (0, 0), (1, 2), (2, 1)), constant_values=0.5)


class TestLRN(OpTestCase):
    op = "LRN"
    params = {"nsize": 3, "alpha": 0.1}
    shapes = {"data": (2, 4, 2, 2)}

    def forward_ref(self, p, data):
        sq = np.pad(data ** 2, ((0, 0), (1, 1), (0, 0), (0, 0)))
        window = sum(sq[:, i:i + 4] for i in range(3))
        return data / (p["knorm"] + p["alpha"] / 3 * window) ** p["beta"]


class TestUpSamplingNearest(OpTestCase):
    op = "UpSampling"
    params = {"scale": 2, "sample_type": "nearest"}
    shapes = {"arg0": (1, 2, 2, 3)}

    def forward_ref(self, p, arg0):
        return arg0.repeat(2, axis=2).repeat(2, axis=3)

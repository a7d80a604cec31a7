"""The torch and Python vocabulary gradfix's proofs rest on: every name table, in one place.

Pure data and a few tiny pure functions; no libcst, no gradfix imports, so any
analysis module may import it. Each table is an allowlist (docs/design.md §3):
what it lists is proven harmless (pure, deterministic, linear, graph-free,
...) for the one use its comment names, and anything not listed is not,
which makes a fix unsafe or the pattern absent; a name missing here costs a
finding's safety, never its exactness. Tables that look alike but differ
stay apart on purpose: each says why. Membership is all any caller asks of
them (no order is relied on).

Sections: callees (docs/design.md §1, E1 and E2: `callees.py`, `bodies.py`,
`bindings_index.py`), between the passes (E3, E4: `between.py`), values
read later (E6), in-place naming, gradient hooks (E10), custom Function
backwards (E10: `functions.py`), loops (E11: `loops.py`), introspection,
and the rules' own.
"""

from __future__ import annotations

import builtins
import re

# Every name of Python's builtins module (what a name the file does not bind reads).
BUILTIN_NAMES = frozenset(dir(builtins))

# -- callees: what may be evaluated once instead of twice (E1, E2) ------------------------

_F = "torch.nn.functional."

# Functions of `torch` and `torch.nn.functional` that are deterministic, own no parameters
# and change no argument (unless called with `inplace=`/`out=`, checked apart): a callee
# built from them computes the same value and gradients evaluated once as twice.
PURE_FUNCTIONS = frozenset(
    {
        f"torch.{n}"
        for n in (
            "abs", "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "log1p", "sqrt", "rsqrt",
            "square", "sin", "cos", "tanh", "sigmoid", "relu", "erf", "sign", "clamp", "clip",
            "mean", "sum", "prod", "norm", "dist", "var", "std", "logsumexp", "amax", "amin",
            "max", "min", "maximum", "minimum", "where", "cat", "stack", "matmul", "mm", "bmm",
            "einsum", "outer", "softmax", "log_softmax", "flatten", "reshape", "transpose",
            "permute", "squeeze", "unsqueeze", "diagonal", "trace", "cdist", "cosine_similarity",
            "pairwise_distance", "linalg.norm", "linalg.vector_norm", "linalg.matrix_norm", "cumsum", "exp2", "atan2",
        )
    }
    | {
        _F + n
        for n in (
            "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
            "binary_cross_entropy_with_logits", "cross_entropy", "nll_loss", "cosine_similarity",
            "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss",
            "soft_margin_loss", "triplet_margin_loss", "pairwise_distance", "normalize", "softmax",
            "log_softmax", "logsigmoid", "softplus", "relu", "gelu", "silu", "tanh", "sigmoid",
            "leaky_relu", "elu", "one_hot", "poisson_nll_loss", "gaussian_nll_loss", "linear",
            "softmin", "hardtanh", "mish", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
            "conv_transpose2d", "conv_transpose3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "max_pool1d",
            "max_pool2d", "max_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
            "pad", "unfold", "fold", "layer_norm", "group_norm", "embedding", "pixel_shuffle",
            "interpolate", "bilinear", "glu", "hardswish", "selu", "celu", "softsign",
        )
    }
)

# Functions that draw random numbers: two evaluations are two different computations, so a
# callee using one is *random* (no pattern to report), never merely unknown.
RANDOM_FUNCTIONS = frozenset(
    {_F + n for n in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                      "feature_alpha_dropout", "gumbel_softmax", "rrelu")}
    | {f"torch.{n}" for n in ("rand", "randn", "rand_like", "randn_like", "randint", "randint_like",
                              "bernoulli", "multinomial", "normal", "poisson", "dropout", "randperm")}
)

# Loss modules hold no trainable parameters (a `weight=` argument is a buffer) and are
# deterministic: an instance built in the file is as pure as its functional form.
_LOSS_CLASSES = (
    "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "BCELoss", "BCEWithLogitsLoss",
    "CrossEntropyLoss", "NLLLoss", "CosineEmbeddingLoss", "MarginRankingLoss",
    "HingeEmbeddingLoss", "SoftMarginLoss", "TripletMarginLoss", "PoissonNLLLoss",
    "GaussianNLLLoss", "CosineSimilarity", "PairwiseDistance",
)
LOSS_MODULES = frozenset(
    {f"torch.nn.{n}" for n in _LOSS_CLASSES} | {f"torch.nn.modules.loss.{n}" for n in _LOSS_CLASSES}
)
# Dropout-like module classes: a module built with one is random (see RANDOM_FUNCTIONS).
_RANDOM_CLASSES = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "RReLU")
RANDOM_MODULES = frozenset({f"torch.nn.{n}" for n in _RANDOM_CLASSES})

# torch.nn classes that take `inplace`, with its position among their parameters: a layer built
# with it overwrites its input (`nn.ReLU(True)`, `nn.Dropout(0.5, True)`, `nn.ReLU(inplace=True)`).
INPLACE_PARAMETER_POSITION = {
    **{f"torch.nn.{n}": 0 for n in ("ReLU", "ReLU6", "SELU", "SiLU", "Mish", "Hardswish", "Hardsigmoid")},
    **{f"torch.nn.{n}": 1 for n in ("LeakyReLU", "ELU", "CELU", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout")},
    **{f"torch.nn.{n}": 2 for n in ("Hardtanh", "Threshold", "RReLU")},
    # `max_norm`, which renormalises the weight in place: `nn.Embedding(n, d, None, 1.0)`.
    "torch.nn.Embedding": 3,
    "torch.nn.EmbeddingBag": 2,
}

# torch.nn.functional's activations and dropouts that take `inplace`, with its position among
# their parameters (`F.relu(h, True)`, `F.dropout(h, 0.5, True, True)`), by the function's name.
FUNCTIONAL_INPLACE_POSITION = {
    **{n: 1 for n in ("relu", "relu6", "selu", "silu", "mish", "hardswish", "hardsigmoid")},
    **{n: 2 for n in ("elu", "celu", "leaky_relu")},
    **{n: 3 for n in ("hardtanh", "threshold", "dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d")},
    "rrelu": 4,
    "embedding": 3,  # `max_norm`: renormalises rows of the weight in place
    # `out` by position: `torch.norm(t, p, dim, keepdim, out)`, `F.normalize(t, p, dim, eps, out)`
    # write into `out` (review, round 5).
    "norm": 4,
    "normalize": 4,
}

# Layers whose forward is deterministic and updates no state (no dropout, no
# BatchNorm running statistics): a module built only from these computes the
# same thing every call.
_DETERMINISTIC_LAYERS = (
    "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softplus", "ELU",
    "Hardtanh", "Mish", "Softmax", "LogSoftmax", "LayerNorm", "GroupNorm", "Flatten", "Unflatten",
    "Identity", "Embedding", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d", "PReLU", "Softsign", "Tanhshrink",
)
DETERMINISTIC_LAYERS = frozenset({f"torch.nn.{n}" for n in _DETERMINISTIC_LAYERS})
# Containers that only run their children in order: deterministic when every child spelled out
# in the call is (`nn.Sequential(nn.Linear(...), nn.ReLU())`).
NN_CONTAINERS = frozenset({"torch.nn.Sequential"})
# Python constructors a torch.nn construction's random layer may be passed through
# (`nn.Sequential(OrderedDict([...]))`, `nn.ModuleList(list(...))`): the search for a dropout
# layer looks through their arguments as it does through torch.nn containers'.
LAYER_HOLDERS = frozenset({"collections.OrderedDict", "builtins.dict", "builtins.list", "builtins.tuple"})
# Decorators that leave a function the plain function its body describes: `torch.compile`
# computes the same values and gradients (as a call, `@torch.compile(mode=...)`, too). Not
# `torch.no_grad` and its kin: they change what the body computes.
TRANSPARENT_DECORATORS = frozenset({"builtins.staticmethod", "torch.compile"})

# Class decorators and metaclasses that keep every member the class body defines (they add
# dunders at most): a method of a class made with them is the def its body shows.
PLAIN_CLASS_MAKERS = frozenset({
    "builtins.type", "abc.ABCMeta", "dataclasses.dataclass", "functools.total_ordering", "typing.final",
    "typing_extensions.final",
})

# Symmetric in value and gradient when called with exactly two positional
# tensors (docs/design.md §1, E9): argument order may differ between the two calls.
SYMMETRIC = frozenset(
    {_F + n for n in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cosine_similarity")}
    | {"torch.cosine_similarity"}
    | {f"torch.nn.{n}" for n in ("MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CosineSimilarity")}
    | {f"torch.nn.modules.loss.{n}" for n in ("MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss")}
)

# Tensor methods that read their receiver and allocate a result: deterministic, parameter-free,
# changing nothing (some return views: `VIEW_METHODS` says which, where aliasing matters).
PURE_TENSOR_METHODS = frozenset(
    {
        "mean", "sum", "prod", "abs", "pow", "exp", "log", "log1p", "sqrt", "rsqrt", "square",
        "norm", "clamp", "clip", "view", "view_as", "reshape", "reshape_as", "transpose",
        "permute", "t", "squeeze", "unsqueeze", "flatten", "softmax", "log_softmax", "sigmoid",
        "tanh", "relu", "detach", "max", "min", "amax", "amin", "var", "std", "float", "double",
        "half", "bfloat16", "to", "contiguous", "expand", "expand_as", "matmul", "mm", "bmm",
        "mul", "add", "sub", "div", "neg", "sign", "logsumexp", "gather", "index_select",
        "masked_fill", "chunk", "split", "narrow", "diagonal", "repeat", "type_as", "cumsum",
        "argmax", "argmin", "size", "dim", "numel", "clone", "erf", "sin", "cos", "exp2",
        "maximum", "minimum", "where", "dot", "outer", "trace",
    }
)

# Builtins a callee's body (or a default value) may call or name: they compute values from
# their arguments and keep nothing. (`BACKWARD_BUILTINS` is the custom-Function backward's
# list: it has `bool` but not `sum`; each was proven for its own use, so they stay apart.)
CALLEE_BUILTINS = frozenset({"len", "range", "float", "int", "min", "max", "abs", "sum", "zip", "enumerate", "isinstance", "tuple", "list"})

# Building a torch.nn module (`nn.Linear(...)`, `nn.modules.loss.MSELoss()`): a class, not `nn.utils.*`.
_NN_CLASS = re.compile(r"^torch\.nn\.(?:modules\.\w+\.)?[A-Z]\w*$")


def is_nn_class(qualified: str) -> bool:
    """A qualified name that builds a torch.nn module (a class of `torch.nn`, not `torch.nn.utils.*`):
    building one runs no step, zeroes no gradient, reads none."""
    return _NN_CLASS.match(qualified) is not None


# Context managers that change grad mode or precision only inside their block: calling one
# (as `CalleeClassifier.harmless` sees it) changes nothing outside.
GRAD_MODE_CONTEXTS = frozenset(
    {"torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast"}
)

# Registrations of hooks that run at every call of a module (torch 2.x: `Module.register_forward_hook`,
# `register_forward_pre_hook`, `torch.nn.modules.module.register_module_forward_hook` and
# `register_module_forward_pre_hook`), and the dicts they fill (`_forward_hooks`,
# `_global_forward_pre_hooks`, ...): any name holding `forward_hook` or `forward_pre_hook`.
# A listing here makes a module callee's merge unsafe (the hook would run once, not twice).
_FORWARD_HOOK = re.compile(r"forward(?:_pre)?_hook")


def names_forward_hook(name: str) -> bool:
    """Whether a name, attribute or string may refer to a forward-hook registration (see above)."""
    return _FORWARD_HOOK.search(name) is not None


# Methods of an nn.Module that read it or switch modes, or move, cast or load its parameters:
# none changes which layers it runs. Anything else called on it (`append`, `insert`,
# `add_module`, `register_module`, `apply`, ...) may.
MODULE_READS = frozenset(
    {
        "parameters", "named_parameters", "buffers", "named_buffers", "state_dict", "load_state_dict", "to",
        "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "eval", "zero_grad", "requires_grad_",
        "modules", "named_modules", "children", "named_children", "forward", "extra_repr",
    }
)
# Builtins a module callee may be passed to without being changed (they only read or print
# it): any other function it is passed to may change which layers it runs.
MODULE_PASS_THROUGH = frozenset({"print", "isinstance", "len", "repr", "str", "id", "type", "list", "sum"})

# Attributes through which an object's every attribute may be replaced (`x.__class__ = Other`,
# `x.__dict__ = {...}`): a store into one counts as a store into any attribute.
WHOLE_OBJECT_ATTRIBUTES = frozenset({"__class__", "__dict__"})

# -- values read later (E6) ----------------------------------------------------------------

# Methods and builtins whose result carries a tensor's value but no gradient: a loss read only
# through them may be rebuilt as a detached value (GF001, GF005), and they are harmless
# between the passes. (One table for `objective`, `between` and the rules: they used to be
# spelled twice, identically.)
VALUE_METHODS = frozenset({"item", "tolist", "numpy", "detach"})
VALUE_FUNCTIONS = frozenset({"float", "int", "bool", "str", "repr", "print", "format", "len", "round"})
# Value methods that raise on a tensor that requires grad (`x.numpy()`): a fix that makes a tensor
# require grad where it did not turns such a read into a crash.
REQUIRES_GRAD_SENSITIVE = frozenset({"numpy"})

# -- between the two passes (E3, E4) -----------------------------------------------------------

# Methods whose call between the two passes changes what the second pass sees: a barrier.
GRADIENT_METHODS = frozenset({"step", "zero_grad", "backward"})

# Builtins that only read values or log them: harmless between the two passes.
HARMLESS_FUNCTIONS = frozenset(
    {
        "print", "len", "float", "int", "str", "bool", "round", "abs", "min", "max", "sum",
        "isinstance", "repr", "format", "list", "tuple", "dict", "range", "enumerate", "zip",
        "sorted", "any", "all",
    }
)
# Methods that change their receiver (a container's contents, a list's length): harmless
# between the passes only where the receiver is not an operand (`history.append(l1.item())`,
# not `xs.append(...)` when an operand reads `xs[-1]`).
MUTATING_METHODS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "add", "discard", "sort", "reverse"}
)
# The list-building pair of MUTATING_METHODS: the only ones harmless on a receiver that holds no
# operand (`update`, `pop`, ... on an object the file does not show may be anything).
APPENDING_METHODS = frozenset({"append", "extend"})
# Tensor methods returning a new tensor that, called on an `nn.Module`, change it in place:
# harmless only on a receiver that is no operand or callee.
MODULE_MUTATORS = frozenset({"to", "half", "float", "double", "bfloat16", "cpu", "cuda", "type"})
# Methods that read or log values (tensor reads, loggers, progress bars, dict reads), plus the
# pure tensor methods: harmless between the passes, and they keep none of their arguments.
HARMLESS_METHODS = frozenset(
    {
        "item", "tolist", "numpy", "cpu", "log", "info", "debug",
        "warning", "add_scalar", "add_scalars", "add_histogram", "set_postfix",
        "set_description", "format", "get", "keys", "values", "items",
    }
) | PURE_TENSOR_METHODS

# Functions of other modules that only log or read values: harmless between the passes.
HARMLESS_QUALIFIED = frozenset(
    {f"logging.{n}" for n in ("debug", "info", "warning", "error", "critical", "exception", "log")}
    | {"wandb.log", "math.isfinite", "math.isnan", "time.time", "time.perf_counter", "time.monotonic"}
)

# torch functions that return a new tensor and touch nothing else, unless told to write into one
# (`out=`): harmless between two passes (`between.harmless_call`). Random ones are left out: they
# advance the generator other calls read.
FRESH_TENSOR_FACTORIES = frozenset(
    f"torch.{n}"
    for n in ("zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "tensor", "arange", "linspace", "logspace", "eye")
)

# Lightning's module class, by every import path it has had: its `self.log(name, value)` and
# `self.log_dict(values)` store a detached copy of a tensor value unless `enable_graph=True`
# (`ResultCollection.log`), so a loss logged that way is read as a value.
LIGHTNING_MODULES = frozenset(
    f"{package}.{path}LightningModule"
    for package in ("pytorch_lightning", "lightning.pytorch", "lightning")
    for path in ("", "core.", "core.module.", "core.lightning.")
)
LIGHTNING_LOG_METHODS = frozenset({"log", "log_dict"})

# Context managers whose `__enter__`/`__exit__` only switch grad mode, autocast or profiling
# for their own body, or do nothing: a `with` on anything else runs code gradfix has not seen.
# (GRAD_MODE_CONTEXTS and four more: the between-passes scanner also accepts CPU autocast,
# `nullcontext` and profiler ranges.)
HARMLESS_CONTEXTS = GRAD_MODE_CONTEXTS | frozenset(
    {
        "torch.cpu.amp.autocast", "contextlib.nullcontext",
        "torch.profiler.record_function", "torch.autograd.profiler.record_function",
    }
)
# Decorators that only wrap or mark a function (a decorator is a call of its expression).
HARMLESS_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})

# Tensor methods and torch functions whose result may share the storage of their first operand:
# a store through the result is a store into the operand.
VIEW_METHODS = frozenset(
    {
        "view", "view_as", "reshape", "reshape_as", "t", "transpose", "permute", "expand", "expand_as",
        "narrow", "squeeze", "unsqueeze", "flatten", "unflatten", "select", "split", "chunk", "unbind",
        "detach", "as_strided", "diagonal", "movedim", "moveaxis", "swapaxes", "swapdims", "unfold",
        "tensor_split", "split_with_sizes", "view_as_real", "view_as_complex", "real", "imag", "values",
    }
)
# Tensor methods and functions of `torch` whose result is a new tensor or a Python value: they do
# not alias their operands. Views (`VIEW_METHODS`), methods that may return their receiver
# unchanged (`to`, `float`, `contiguous`, ...) and calls not listed may.
FRESH_METHODS = (PURE_TENSOR_METHODS | VALUE_METHODS | {"clone"}) - VIEW_METHODS - {
    "to", "float", "double", "half", "bfloat16", "contiguous", "type_as", "detach", "values",
    # a CPU tensor's `.numpy()` is an array over the same memory: `n += 1` changes the tensor
    "numpy",
}
# Losses and distances of `torch.nn.functional` (and `torch`): each computes a new tensor from its
# operands (a reduction, or an elementwise formula under `reduction="none"`), never returns one.
FRESH_LOSSES = frozenset({
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "cross_entropy", "nll_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
    "triplet_margin_loss", "cosine_similarity", "pairwise_distance", "cdist",
})
# Builtins whose result is a new value, never one of their arguments.
FRESH_FUNCTIONS = frozenset({"len", "float", "int", "bool", "str", "repr", "round", "abs", "print", "range", "isinstance"})

# -- in-place naming ----------------------------------------------------------------------------

# Keywords that make a call write into a tensor: `F.relu(x, inplace=True)`, `torch.add(a, b, out=c)`.
INPLACE_KEYWORDS = frozenset({"inplace", "out"})


def is_inplace_name(name: str) -> bool:
    """PyTorch's convention: a trailing underscore marks an in-place operation (`add_`, `zero_`,
    `clip_grad_norm_`, `requires_grad_`, `unscale_`); not a dunder, nor `_` alone."""
    return name.endswith("_") and not name.endswith("__") and len(name) > 1


def has_inplace_suffix(name: str) -> bool:
    """The suffix test alone, as the callee body check and GF004's change scan spell it: `_` alone
    counts too (`x._()` is no torch method either way; it only changes which reason is given)."""
    return name.endswith("_") and not name.endswith("__")


# -- gradient hooks (E10) -----------------------------------------------------------------------

# Registrations of hooks that run once per backward pass on that pass's
# gradients (torch 2.x: `Tensor.register_hook`, `Node.register_hook` /
# `register_prehook`, `Tensor.register_post_accumulate_grad_hook`,
# `torch.autograd.graph.register_multi_grad_hook`, `Module.register_*backward*_hook`,
# `torch.nn.modules.module.register_module_*backward*_hook`, DDP's
# `register_comm_hook`), and the backward formula of a custom operator
# (`torch.library.register_autograd`, `op.register_autograd(bw)`: code of the file run once
# per pass, which `functions.backward_methods` does not read; review, round 8). Any of them in
# the file makes a merge of backward passes unsafe.
GRADIENT_HOOKS = frozenset(
    {
        "register_autograd",
        "register_hook",
        "register_prehook",
        "register_post_accumulate_grad_hook",
        "register_multi_grad_hook",
        "register_backward_hook",
        "register_full_backward_hook",
        "register_full_backward_pre_hook",
        "register_module_backward_hook",
        "register_module_full_backward_hook",
        "register_module_full_backward_pre_hook",
        "register_comm_hook",
    }
)
# The tables those registrations fill, written by hand (`lin._backward_hooks[k] = fn` with
# `lin._is_full_backward_hook = True`, `torch.nn.modules.module._global_backward_hooks`,
# `t._post_accumulate_grad_hooks`; review, round 8): any name holding `backward_hook`,
# `backward_pre_hook` or `grad_hook`, as `_FORWARD_HOOK` reads forward hooks' tables.
_GRADIENT_HOOK_TABLE = re.compile(r"backward(?:_pre)?_hook|grad_hook")


def names_gradient_hook(name: str) -> bool:
    """Whether a name, attribute or string may refer to a gradient-hook registration or its table."""
    return name in GRADIENT_HOOKS or _GRADIENT_HOOK_TABLE.search(name) is not None


def names_gradient_hook_table(name: str) -> bool:
    """Whether a name names a table of gradient hooks rather than a registration (`_backward_hooks`)."""
    return name not in GRADIENT_HOOKS and not name.startswith("register") and _GRADIENT_HOOK_TABLE.search(name) is not None


# -- custom autograd Function backwards: linear in their gradients? (E10) -----------------------

# `g.method(...)` on a linear receiver whose other arguments are CONST: linear.
LINEAR_METHODS = frozenset(
    {
        "view", "view_as", "reshape", "reshape_as", "transpose", "permute", "t", "squeeze", "unsqueeze",
        "flatten", "unflatten", "expand", "expand_as", "contiguous", "clone", "sum", "mean", "neg", "negative",
        "mul", "multiply", "div", "divide", "true_divide", "matmul", "mm", "bmm", "mv", "narrow", "select",
        "index_select", "gather", "diagonal", "movedim", "moveaxis", "swapaxes", "swapdims", "repeat",
        "tile", "roll", "flip", "chunk", "split", "unbind", "cumsum", "float", "double", "detach",
        "conj", "real", "tril", "triu", "squeeze_", "unsqueeze_", "t_", "transpose_",
        # in place, on a gradient: as linear as their out-of-place forms
        "mul_", "div_", "neg_",
    }
)
# The products among LINEAR_METHODS: linear in the receiver only while no argument is a gradient.
PRODUCT_METHODS = frozenset({"mul", "multiply", "mul_", "matmul", "mm", "bmm", "mv"})
# The divisions among LINEAR_METHODS: linear only while the divisor is no gradient.
DIVISION_METHODS = frozenset({"div", "divide", "true_divide", "div_"})
# `W.t().mm(g)`, `mask.mul(g)`: a product of a constant receiver and one gradient factor
# (`outer` too; not the in-place `mul_`, which would write into the constant).
CONST_FACTOR_PRODUCTS = frozenset({"mul", "multiply", "matmul", "mm", "bmm", "mv", "outer"})
# Shape methods whose starred arguments (`g.view(*shape)`) are a shape, not a gradient.
SHAPE_STAR_METHODS = frozenset({"view", "reshape", "permute", "expand", "repeat"})
# `g.method(h)`: linear when receiver and argument are both linear (or zero).
ADDITIVE_METHODS = frozenset({"add", "sub", "subtract", "add_", "sub_"})
# `g.masked_fill(mask, 0)`, `g.index_fill(dim, idx, 0)`, `g.zero_()`: zero some elements.
ZEROING_METHODS = frozenset({"masked_fill", "masked_fill_", "index_fill", "index_fill_"})
# `torch.f(...)` / `F.f(...)` linear in their tensor arguments when exactly one factor is a gradient
# (products) or when all tensor arguments are linear (sums, reshapes).
LINEAR_TORCH_SUMS = frozenset(
    {
        "torch.sum", "torch.mean", "torch.reshape", "torch.transpose", "torch.permute", "torch.squeeze",
        "torch.unsqueeze", "torch.flatten", "torch.cat", "torch.concat", "torch.stack", "torch.neg",
        "torch.negative", "torch.diagonal", "torch.movedim",
        "torch.narrow", "torch.select", "torch.index_select", "torch.gather", "torch.chunk", "torch.split",
        "torch.unbind", "torch.flip", "torch.roll", "torch.cumsum", "torch.tril", "torch.triu", "torch.t",
    }
)
LINEAR_TORCH_PRODUCTS = frozenset(
    {"torch.mul", "torch.multiply", "torch.matmul", "torch.mm", "torch.bmm", "torch.mv", "torch.einsum",
     "torch.outer", "torch.div", "torch.divide", "torch.true_divide"}
)
# The divisions among LINEAR_TORCH_PRODUCTS: the gradient must be the dividend.
TORCH_DIVISIONS = frozenset({"torch.div", "torch.divide", "torch.true_divide"})
# `torch.add(g, h, alpha=c)`: linear when both operands are gradients (or zero).
TORCH_ADDITIONS = frozenset({"torch.add", "torch.sub", "torch.subtract"})
# Zeros of the shape of anything: the zero gradient.
ZERO_FACTORIES = frozenset({"torch.zeros", "torch.zeros_like"})
ZERO_METHODS = frozenset({"new_zeros", "zero_"})
# Attributes (and methods) of a tensor that tell `x.detach()` from `grad_scale(x, c)`: the one is a
# leaf that requires no grad, the other a view in the graph. A callee that reads one of them on
# its argument may take another branch after the rewrite (`if not target.requires_grad:`).
AUTOGRAD_STATE_ATTRIBUTES = frozenset({
    "requires_grad", "grad_fn", "is_leaf", "grad", "_grad", "_grad_fn", "_base", "_version", "output_nr",
    "retains_grad", "_is_view", "is_inference", "_backward_hooks", "_post_accumulate_grad_hooks",
})
# Attributes of a gradient that are values (its shape is fixed by the graph, not by its values).
GRAD_VALUE_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad"})
# Attributes of a gradient that are linear in it (transposes, the real part).
GRAD_LINEAR_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "real"})
# Methods of a gradient that give its shape, not a value computed from it.
GRAD_SHAPE_METHODS = frozenset({"size", "dim", "ndimension", "numel", "nelement", "is_contiguous"})
# Methods that compute a value from their receiver without changing it (on values that do not
# depend on a gradient: saved tensors, masks).
CONST_METHODS = PURE_TENSOR_METHODS | frozenset({"new_zeros", "new_ones", "new_full", "new_tensor", "item", "tolist", "ne", "eq", "gt", "lt", "ge", "le", "logical_not", "bool"})
# Deterministic torch functions (besides PURE_FUNCTIONS and ZERO_FACTORIES) that return a tensor or
# a plain value: constructors and tests. A backward may call them on values that do not involve a
# gradient; a torch function not listed may draw random numbers (`torch.rand_like(x)` draws a new
# mask at each backward call: `m1*g1 + m2*g2` in the original, `m*(g1 + g2)` after a merge) or keep
# state, so it is not a constant there. Their results, but those of `finfo` and `iinfo`, are values
# `grad_scale` takes (merge.TENSOR_FUNCTIONS).
DETERMINISTIC_TENSOR_FUNCTIONS = frozenset(
    f"torch.{n}" for n in (
        "ones", "ones_like", "full", "full_like", "tensor", "as_tensor", "arange", "linspace", "eye",
        "isnan", "isinf", "isfinite", "signbit", "equal", "is_tensor", "is_grad_enabled", "get_default_dtype",
        "finfo", "iinfo", "broadcast_shapes", "Size", "device",
    )
)
# Tensor methods whose result is a tensor (or a tuple of tensors, a number, a list of numbers):
# values `grad_scale` takes (`adj = torch.eye(4).to_sparse()`, merge.py). Not `.numpy()`.
TENSOR_RESULT_METHODS = PURE_TENSOR_METHODS | frozenset({
    "to_sparse", "to_sparse_csr", "to_sparse_coo", "to_dense", "coalesce", "requires_grad_", "cuda", "cpu",
    "long", "int", "bool", "item", "tolist", "new_zeros", "new_ones", "new_full", "new_tensor",
})
# Builtins that may compute CONST values in a backward (none of them touching a gradient).
# (Not CALLEE_BUILTINS: see there.)
BACKWARD_BUILTINS = frozenset({"len", "range", "float", "int", "bool", "min", "max", "abs", "isinstance", "tuple", "list", "zip", "enumerate"})
# The names a custom Function's backward is bound to (`vjp` is its alias).
BACKWARD_NAMES = ("backward", "vjp")
# Decorators that leave a backward the function its body describes: `staticmethod`,
# `once_differentiable` (refuses double backward), AMP's `custom_bwd` (runs it under the
# forward's autocast state: the same operations, in another precision).
BACKWARD_DECORATORS = frozenset(
    {"builtins.staticmethod", "torch.autograd.function.once_differentiable", "torch.amp.custom_bwd",
     "torch.cuda.amp.custom_bwd", "torch.amp.autocast_mode.custom_bwd"}
)
# Of BACKWARD_DECORATORS, those also accepted as a call (`@custom_bwd(device_type="cuda")`).
CALLED_BACKWARD_DECORATORS = frozenset({"torch.amp.custom_bwd", "torch.cuda.amp.custom_bwd", "torch.amp.autocast_mode.custom_bwd"})

# -- loops: values proven to hold no graph (E11) ------------------------------------------------

# torch functions that make a new leaf (no graph), whatever their arguments.
GRAPH_FREE_FACTORIES = frozenset(
    {
        # (Not `as_tensor`: given a tensor it returns that tensor, graph and all.)
        "randn", "rand", "randint", "randperm", "zeros", "ones", "empty", "full", "tensor",
        "arange", "linspace", "logspace", "eye", "zeros_like", "ones_like", "empty_like", "full_like",
        "randn_like", "rand_like", "randint_like", "from_numpy", "manual_seed", "device", "Generator",
    }
)
# torch classes whose constructors keep none of their arguments' graph, whatever the arguments:
# settings objects, and `nn.Parameter(h)` / `nn.Buffer(h)`, which detach what they are given. Any
# other torch class is graph-free only when its arguments are (`loops.graph_free`): a container
# keeps its modules and a ParameterList its non-tensor items as they are (`nn.Sequential(Holder(h))`,
# `nn.ParameterList([(h,)])`), a loss its `weight`, `TensorDataset(feats, y)` its tensors, a
# distribution its parameters; an optimizer keeps a param group's other entries
# (`SGD([{"params": [w], "prior": h}])`) and its settings (`lr=`) as they are.
GRAPH_FREE_CLASSES = frozenset(
    {
        "torch.Generator", "torch.device", "torch.Size", "torch.amp.GradScaler", "torch.cuda.amp.GradScaler",
        "torch.cuda.Event", "torch.cuda.Stream",
        "torch.nn.Parameter", "nn.Parameter", "torch.nn.parameter.Parameter",
        "torch.nn.Buffer", "nn.Buffer", "torch.nn.parameter.Buffer",
    }
)
# Optimizers, by their dotted prefix: their parameters argument may be a module's parameters
# combined (`list(G.parameters()) + list(D.parameters())`), leaves it keeps as they are.
OPTIMIZER_PACKAGES = ("torch.optim.", "optim.")
# Module methods that give its registered parameters: leaves, which hold no graph (assumed: a
# class of the file does not redefine them). Not `buffers()`: a buffer may be any tensor.
MODULE_PARAMETER_METHODS = frozenset({"parameters", "named_parameters"})
# Methods that keep a value graph-free (device moves, casts, `requires_grad_` on a leaf).
KEEPS_GRAPH_FREE = frozenset({"to", "cuda", "cpu", "float", "double", "half", "long", "int", "bool", "requires_grad_", "detach", "item", "tolist", "numpy", "clone"})
# Builtins whose result holds a graph only if an argument does.
BUILTINS_GRAPH_FREE = frozenset({"range", "len", "list", "dict", "tuple", "set", "zip", "enumerate", "int", "float", "str", "bool", "sorted", "print"})
# Builtins that return Python values whatever they are given (`float(loss)`; not `round`, which
# returns a tensor, so VALUE_FUNCTIONS will not do): with VALUE_METHODS, whose results hold no
# graph either, what a loop may collect or compute without carrying a graph (`analysis.loops`).
PYTHON_VALUES = frozenset({"float", "int", "bool", "str", "repr", "len"})
# Methods that store their arguments into the object they are called on: a loop that calls one
# on an object from before it hands the stored values to the next iteration (`analysis.loops`).
COLLECTING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "extendleft", "put"})
# What backpropagates when called, by the name called: `x.backward()`, `torch.autograd.backward(...)`,
# `torch.autograd.grad(...)`, Lightning's `self.manual_backward(loss)`, Accelerate's and Fabric's
# `accelerator.backward(loss)` (`backward.later_use_reasons`).
BACKPROP_NAMES = frozenset({"backward", "grad", "manual_backward"})

# -- introspection: reads of names by their strings ---------------------------------------------

# Read every name of the scope they run in; `vars`/`dir` only without arguments.
LOCAL_READERS = frozenset({"locals", "eval", "exec"})
NO_ARGUMENT_READERS = frozenset({"vars", "dir"})
# Reads every module-level name, from anywhere in the module.
GLOBAL_READERS = frozenset({"globals"})

# -- the rules' own -----------------------------------------------------------------------------

# GF004: reductions a term may wrap its computation in; the message and the new name use the
# function inside (`kl`, not `torch.mean`).
REDUCTIONS = frozenset({"mean", "sum"})
# GF005: optimizer, scheduler and GradScaler calls of a training step: they read `.grad` and
# update parameters in place, but never backpropagate (`step(closure)` can: not listed). Not
# GRADIENT_METHODS: that one is a list of barriers between two passes (`backward` is one).
STEP_METHODS = frozenset({"step", "zero_grad", "update"})
# GF005: module methods that hand out leaves or switch modes, whatever their arguments: they
# cannot keep a tensor of the graph. (A subset of MODULE_READS, which answers another question:
# whether a call can change which layers a module runs.)
MODULE_LEAF_METHODS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers", "train", "eval"})

# Context managers that let every exception through (by the last name of what is entered): a
# `with` of them stops where its body stops (`statements.may_catch`).
PASSING_CONTEXTS = frozenset({
    "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "autocast", "record_function", "profile",
    "detect_anomaly", "set_detect_anomaly", "device", "stream", "sdpa_kernel", "open", "nullcontext",
})


# Modules whose names hold code or Python values, never a tensor this file's functions could have
# built a graph into: a name imported from anywhere else and read as data may hold one
# (`loops`); nor this file's own module (`exprs.dynamic_global`).
TRUSTED_MODULES = frozenset({
    "torch", "numpy", "math", "random", "os", "sys", "time", "collections", "functools", "itertools",
    "typing", "dataclasses", "copy", "json", "logging", "argparse", "pathlib", "re", "warnings",
    "contextlib", "abc", "enum", "types", "operator", "statistics", "tqdm", "accelerate",
    "pytorch_lightning", "lightning",
})


# The methods that give a mapping's item by its key, as it is (`d.get(k)`, `d[k]` spelled
# `d.__getitem__(k)`, `pop`, `setdefault`): a class namespace read by a computed key reaches any of
# its defs (`callees.handed_functions`), and a loss read through one is the holder's
# (GF005's `_loss_from_caller`). Review, round 14.
ITEM_GETTERS = frozenset({"get", "pop", "__getitem__", "setdefault"})

"""Is a callee provably parameter-free and deterministic? (DESIGN §1, E1 and E2)

The rewrite evaluates the callee once instead of twice. That is exact only if
the callee draws no random numbers, updates no state, and owns no trainable
tensors (their gradients cancel to (a+b)·∂f/∂θ in the original). gradfix
proves this from explicit allowlists, never from names that merely look right:

- functions of `torch` and `torch.nn.functional` listed below;
- loss-module instances built from the classes listed below, in the same file;
- lambdas and functions of the same file whose bodies use only the above,
  pure tensor methods, arithmetic, their own parameters and locals.

Anything else is *unknown* (the fix is unsafe and says why), or *random*
(dropout and friends: the two evaluations are not the same computation, so
there is no pattern to report).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Collection, Dict, Optional, Set

import libcst as cst
from libcst.metadata import (
    ParentNodeProvider,
    QualifiedName,
    QualifiedNameProvider,
    QualifiedNameSource,
    ScopeProvider,
)

from gradfix.analysis.exprs import code_of

_F = "torch.nn.functional."

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
            "pairwise_distance", "linalg.norm", "linalg.vector_norm", "cumsum", "exp2", "atan2",
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

RANDOM_FUNCTIONS = frozenset(
    {_F + n for n in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                      "feature_alpha_dropout", "gumbel_softmax", "rrelu")}
    | {f"torch.{n}" for n in ("rand", "randn", "rand_like", "randn_like", "randint", "randint_like",
                              "bernoulli", "multinomial", "normal", "poisson", "dropout", "randperm")}
)

# Loss modules hold no trainable parameters (a `weight=` argument is a buffer).
_LOSS_CLASSES = (
    "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "BCELoss", "BCEWithLogitsLoss",
    "CrossEntropyLoss", "NLLLoss", "CosineEmbeddingLoss", "MarginRankingLoss",
    "HingeEmbeddingLoss", "SoftMarginLoss", "TripletMarginLoss", "PoissonNLLLoss",
    "GaussianNLLLoss", "CosineSimilarity", "PairwiseDistance",
)
LOSS_MODULES = frozenset(
    {f"torch.nn.{n}" for n in _LOSS_CLASSES} | {f"torch.nn.modules.loss.{n}" for n in _LOSS_CLASSES}
)
_RANDOM_CLASSES = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "RReLU")
RANDOM_MODULES = frozenset({f"torch.nn.{n}" for n in _RANDOM_CLASSES})

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
_CONTAINERS = frozenset({"torch.nn.Sequential"})

# Symmetric in value and gradient when called with exactly two positional
# tensors (DESIGN §1, E9): argument order may differ between the two calls.
SYMMETRIC = frozenset(
    {_F + n for n in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cosine_similarity")}
    | {"torch.cosine_similarity"}
    | {f"torch.nn.{n}" for n in ("MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CosineSimilarity")}
    | {f"torch.nn.modules.loss.{n}" for n in ("MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss")}
)

# Tensor methods that read their receiver and allocate a result.
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

_PURE_BUILTINS = frozenset({"len", "range", "float", "int", "min", "max", "abs", "sum", "zip", "enumerate", "isinstance", "tuple", "list"})

# Building a torch.nn module (`nn.Linear(...)`, `nn.modules.loss.MSELoss()`): a class, not `nn.utils.*`.
_NN_CLASS = re.compile(r"^torch\.nn\.(?:modules\.\w+\.)?[A-Z]\w*$")
# Context managers that change grad mode or precision only inside their block.
_GRAD_MODE_CONTEXTS = frozenset(
    {"torch.no_grad", "torch.enable_grad", "torch.inference_mode", "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast"}
)

PURE = "pure"
RANDOM = "random"
MODULE = "module"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Callee:
    kind: str  # PURE, RANDOM, MODULE or UNKNOWN
    symmetric: bool = False
    reason: str = ""  # for UNKNOWN / MODULE / RANDOM: what was not proven
    # MODULE only: built in this file from stateless, deterministic layers, so
    # one forward equals two and only its parameters' gradients need care.
    deterministic: bool = False


GetMeta = Callable[..., object]


class CalleeClassifier:
    """Classifies callees of one module; `get_metadata` is the rule visitor's."""

    def __init__(self, get_metadata: GetMeta) -> None:
        self.meta = get_metadata
        self._function_cache: Dict[int, Callee] = {}

    # -- metadata helpers ----------------------------------------------------------
    def qualified(self, node: cst.CSTNode) -> Set[str]:
        """Import-resolved names of a dotted name (`F.mse_loss` -> torch.nn.functional.mse_loss).

        Only plain dotted chains: libcst also names `f(x).mean` or `(u - v).pow`
        (as `f.mean`, `builtins.None`), which would be wrong here.
        """
        base = node
        while isinstance(base, cst.Attribute):
            base = base.value
        if not isinstance(base, cst.Name):
            return set()
        names: Collection[QualifiedName] = self.meta(QualifiedNameProvider, node, set())  # type: ignore[assignment]
        return {q.name for q in names if q.source in (QualifiedNameSource.IMPORT, QualifiedNameSource.BUILTIN)}

    def _assigned_values(self, name: cst.Name) -> Optional[list]:
        """The nodes bound to `name` in its scope: Assign values, defs, or None if unresolvable."""
        scope = self.meta(ScopeProvider, name, None)
        if scope is None:
            return None
        values = []
        for assignment in scope[name.value]:
            node = getattr(assignment, "node", None)
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                values.append(node)
                continue
            if isinstance(node, cst.Name):
                parent = self.meta(ParentNodeProvider, node, None)
                if isinstance(parent, cst.AssignTarget):
                    statement = self.meta(ParentNodeProvider, parent, None)
                    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
                        values.append(statement.value)
                        continue
                if isinstance(parent, cst.AnnAssign) and parent.value is not None:
                    values.append(parent.value)
                    continue
            return None  # imports, parameters, loop targets, tuple unpacking ...
        return values

    def harmless(self, func: cst.BaseExpression) -> bool:
        """A call that cannot step, zero or read gradients: a proven-pure or random
        function, building or running a torch.nn module of this file, or gradfix's op.

        (In-place calls, `step`, `zero_grad` and the like never get here: the
        scanner stops at them first.)"""
        names = self.qualified(func)
        if names & _GRAD_MODE_CONTEXTS or any(_NN_CLASS.match(n) or n.startswith("gradfix.autograd.") for n in names):
            return True
        return self.classify(func).kind in (PURE, RANDOM, MODULE)

    # -- classification ---------------------------------------------------------------
    def classify(self, func: cst.BaseExpression) -> Callee:
        text = code_of(func).strip()
        names = self.qualified(func)
        if names:
            return self._classify_qualified(text, names)
        if isinstance(func, cst.Name):
            values = self._assigned_values(func)
            if values is None or len(values) != 1:
                return Callee(UNKNOWN, reason=f"`{text}` is not bound once in this file to something gradfix can prove parameter-free and deterministic")
            return self._classify_value(text, values[0])
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            values = self._self_attribute_values(func)
            if len(values) != 1:
                return Callee(UNKNOWN, reason=f"`{text}` is not assigned exactly once in its class")
            return self._classify_value(text, values[0])
        return Callee(UNKNOWN, reason=f"gradfix cannot resolve `{text}`")

    def _classify_qualified(self, text: str, names: Set[str]) -> Callee:
        if names & RANDOM_FUNCTIONS:
            return Callee(RANDOM, reason=f"`{text}` draws random numbers")
        if names & PURE_FUNCTIONS:
            return Callee(PURE, symmetric=bool(names & SYMMETRIC))
        return Callee(UNKNOWN, reason=f"`{text}` is not on gradfix's list of deterministic parameter-free functions")

    def _classify_value(self, text: str, value: cst.CSTNode) -> Callee:
        if isinstance(value, cst.Call):
            names = self.qualified(value.func)
            if names & LOSS_MODULES:
                return Callee(PURE, symmetric=bool(names & SYMMETRIC))
            if names & RANDOM_MODULES:
                return Callee(RANDOM, reason=f"`{text}` is a dropout module")
            if any(n.startswith("torch.nn.") for n in names):
                cls = code_of(value.func).strip()
                if self._deterministic_module(value):
                    return Callee(MODULE, reason=f"`{text}` is an nn.Module (`{cls}`) with trainable parameters", deterministic=True)
                return Callee(
                    MODULE,
                    reason=f"`{text}` is an nn.Module (`{cls}`) that gradfix cannot prove deterministic and stateless "
                    f"(dropout, batch statistics) and that may own trainable parameters",
                )
            return Callee(UNKNOWN, reason=f"`{text}` may own trainable parameters or be non-deterministic")
        if isinstance(value, (cst.Lambda, cst.FunctionDef)):
            verdict = self._function(value)
            if verdict.kind == PURE:
                return Callee(PURE)
            return Callee(verdict.kind, reason=f"`{text}`: {verdict.reason}")
        return Callee(UNKNOWN, reason=f"`{text}` may own trainable parameters or be non-deterministic")

    def _deterministic_module(self, construction: cst.Call) -> bool:
        """`nn.Linear(...)`, or `nn.Sequential(...)` of such layers, spelled out in the call."""
        names = self.qualified(construction.func)
        if names & DETERMINISTIC_LAYERS:
            return True
        if names & _CONTAINERS:
            return bool(construction.args) and all(
                arg.keyword is None and not arg.star and isinstance(arg.value, cst.Call) and self._deterministic_module(arg.value)
                for arg in construction.args
            )
        return False

    def enclosing_class(self, node: cst.CSTNode) -> Optional[cst.ClassDef]:
        """The class whose body (at any depth) holds `node`, or None."""
        cls: Optional[cst.CSTNode] = node
        while cls is not None and not isinstance(cls, cst.ClassDef):
            cls = self.meta(ParentNodeProvider, cls, None)
        return cls  # type: ignore[return-value]

    def _self_attribute_values(self, func: cst.Attribute) -> list:
        cls = self.enclosing_class(func)
        if cls is None:
            return []
        attr = func.attr.value
        values: list = []

        class Collect(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                for target in node.targets:
                    t = target.target
                    if (
                        isinstance(t, cst.Attribute)
                        and isinstance(t.value, cst.Name)
                        and t.value.value == "self"
                        and t.attr.value == attr
                    ):
                        values.append(node.value if len(node.targets) == 1 else None)

            def visit_AugAssign(self, node: cst.AugAssign) -> None:
                if code_of(node.target).strip() == f"self.{attr}":
                    values.append(None)

        cls.visit(Collect())
        # setattr(self, ...) and other dynamic forms are not seen: they make the
        # callee unknown only if also assigned directly, a documented limit.
        return [v for v in values if v is not None] if None not in values else [None, None]

    def pure_function(self, node: cst.FunctionDef) -> bool:
        """A function of this file whose body is provably parameter-free and deterministic."""
        return self._function(node).kind == PURE

    def _function(self, node: cst.CSTNode) -> Callee:
        key = id(node)
        if key in self._function_cache:
            return self._function_cache[key]
        # Provisional answer breaks recursion: a recursive helper is judged by the rest of its body.
        self._function_cache[key] = Callee(PURE)
        checker = _BodyChecker(self, node)
        if isinstance(node, cst.Lambda):
            node.body.visit(checker)
        elif isinstance(node, cst.FunctionDef):
            node.body.visit(checker)
        result = checker.verdict or Callee(PURE)
        self._function_cache[key] = result
        return result


def _target_names(target: cst.BaseExpression) -> Set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _target_names(element.value)}
    return set()


class _BodyChecker(cst.CSTVisitor):
    """Walks a lambda or function body and records the first impurity found."""

    def __init__(self, classifier: CalleeClassifier, owner: cst.CSTNode) -> None:
        self.c = classifier
        self.owner = owner
        self.verdict: Optional[Callee] = None
        params = owner.params
        self.params = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                self.params.add(star.name.value)
        self.locals: Set[str] = set()

    def _fail(self, kind: str, reason: str) -> None:
        if self.verdict is None or (self.verdict.kind == UNKNOWN and kind == RANDOM):
            self.verdict = Callee(kind, reason=reason)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> Optional[bool]:
        self._fail(UNKNOWN, "defines a nested function")
        return False

    def visit_Global(self, node: cst.Global) -> None:
        self._fail(UNKNOWN, "uses `global`")

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self._fail(UNKNOWN, "uses `nonlocal`")

    def visit_Yield(self, node: cst.Yield) -> None:
        self._fail(UNKNOWN, "is a generator")

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Name):
            self.locals.add(node.target.value)
        elif isinstance(node.target, (cst.Tuple, cst.List)) and all(isinstance(e.value, cst.Name) for e in node.target.elements):
            self.locals.update(e.value.value for e in node.target.elements)  # type: ignore[union-attr]
        else:
            self._fail(UNKNOWN, f"stores into `{code_of(node.target).strip()}`")

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        target = node.target
        if not isinstance(target, cst.Name) or target.value in self.params:
            self._fail(UNKNOWN, f"modifies `{code_of(target).strip()}` in place")

    def visit_For(self, node: cst.For) -> None:
        if isinstance(node.target, cst.Name):
            self.locals.add(node.target.value)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self.locals.update(_target_names(node.target))

    def _comprehension(self, node: cst.CSTNode) -> None:
        # The element is visited before its `for` clauses: bind their targets first.
        clause = getattr(node, "for_in", None)
        while clause is not None:
            self.locals.update(_target_names(clause.target))
            clause = clause.inner_for_in

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._comprehension(node)

    def visit_SetComp(self, node: cst.SetComp) -> None:
        self._comprehension(node)

    def visit_DictComp(self, node: cst.DictComp) -> None:
        self._comprehension(node)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._comprehension(node)

    def visit_Arg(self, node: cst.Arg) -> Optional[bool]:
        node.value.visit(self)  # the keyword is a parameter name, not a read
        return False

    def visit_Param(self, node: cst.Param) -> Optional[bool]:
        if node.default is not None:
            node.default.visit(self)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> Optional[bool]:
        # The attribute name is not a read; only what it is taken from is.
        # (`torch.nn.functional.x` ends in the Name `torch`, checked by import.)
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self._check_name(node)

    def _check_name(self, node: cst.Name) -> None:
        name = node.value
        if name in self.params or name in self.locals or name in ("True", "False", "None"):
            return
        if name in _PURE_BUILTINS:
            return
        qualified = self.c.qualified(node)
        if any(q == "torch" or q.startswith("torch.") or q == "math" or q.startswith("math.") for q in qualified):
            return
        values = self.c._assigned_values(node)
        if values and len(values) == 1:
            value = values[0]
            if isinstance(value, (cst.Integer, cst.Float)):
                return
            if isinstance(value, (cst.FunctionDef, cst.Lambda)):
                verdict = self.c._function(value)
                if verdict.kind != PURE:
                    self._fail(verdict.kind, f"calls `{name}`, which {verdict.reason}")
                return
        # A global tensor here could be a trainable parameter that the two
        # evaluations' gradients cancel on.
        self._fail(UNKNOWN, f"reads `{name}` from outside (a trainable tensor there would change its gradient)")

    def visit_Call(self, node: cst.Call) -> Optional[bool]:
        func = node.func
        names = self.c.qualified(func)
        if names & RANDOM_FUNCTIONS:
            self._fail(RANDOM, f"calls `{code_of(func).strip()}`, which draws random numbers")
            return True
        if names & PURE_FUNCTIONS:
            for arg in node.args:
                arg.visit(self)
            return False
        if isinstance(func, cst.Attribute) and not names:
            method = func.attr.value
            if method.endswith("_") and not method.endswith("__"):
                self._fail(UNKNOWN, f"modifies a tensor in place (`.{method}()`)")
            elif method not in PURE_TENSOR_METHODS:
                self._fail(UNKNOWN, f"calls `.{method}()`, which is not a known pure tensor method")
            return True
        if names and all(n.startswith("builtins.") for n in names):
            if isinstance(func, cst.Name) and func.value in _PURE_BUILTINS:
                for arg in node.args:
                    arg.visit(self)
                return False
            self._fail(UNKNOWN, f"calls `{code_of(func).strip()}`")
            return True
        if names:
            self._fail(UNKNOWN, f"calls `{code_of(func).strip()}`, which is not on gradfix's list of deterministic parameter-free functions")
            return True
        return True  # a Name call: `_check_name` resolves it

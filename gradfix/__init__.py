"""gradfix: find and exactly rewrite duplicated detached-operand autograd passes."""

__version__ = "0.1.0"

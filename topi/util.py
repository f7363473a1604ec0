"""TVM's name before v0.8 for :mod:`tecc.topi.utils` (``get_const_tuple``...)."""
from .utils import *  # noqa: F401,F403

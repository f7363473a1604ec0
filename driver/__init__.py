"""The build driver (TVM's ``tvm.driver``): :mod:`.build_module` holds ``lower``,
``build`` and ``schedule_to_module``."""
from .build_module import build, lower, schedule_to_module  # noqa: F401

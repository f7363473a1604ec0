"""The schedule side of tuning (AutoTVM's ``autotvm.task``): knobs and config
spaces (:mod:`.space`), which config a template gets (:mod:`.dispatcher`), templates
and workloads (:mod:`.task`), tunable topi operators (:mod:`.topi_integration`).

This part imports only the compiler (te, tir, target): topi's schedules use it.
"""
from . import dispatcher, space, task, topi_integration  # noqa: F401
from .dispatcher import ApplyConfig, DispatchContext, FallbackContext, clear_fallback_cache  # noqa: F401
from .space import ConfigEntity, ConfigSpace, FallbackConfigEntity, InstantiationError  # noqa: F401
from .task import (  # noqa: F401
    TASK_TABLE, Task, args_to_workload, compute_flop, create, deserialize_args, get_config, serialize_args, template,
)
from .topi_integration import get_workload, register_topi_compute, register_topi_schedule  # noqa: F401

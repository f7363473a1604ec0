"""tecc's auto-tuner, with AutoTVM's interface (``from tecc import autotvm``).

============================  ======================================================
module                        holds
============================  ======================================================
:mod:`.task`                  knobs, config spaces, dispatch contexts, templates and
                              the registration of tunable topi operators
============================  ======================================================
"""
from . import task  # noqa: F401
from .task import (  # noqa: F401
    ApplyConfig, ConfigEntity, ConfigSpace, DispatchContext, FallbackConfigEntity, FallbackContext,
    get_config, register_topi_compute, register_topi_schedule, template,
)

"""TVMC's Python API (TVM's ``from tvm.driver import tvmc``): load, compile, run and
tune a model in four calls, on top of the ``tecc`` command line's own steps::

    from tecc.driver import tvmc
    model = tvmc.load("my_model.onnx")                      # shape_dict={"input": [1, 3, 224, 224]}
    tvmc.tune(model, target="llvm", tuning_records="records.log", trials=200)
    package = tvmc.compile(model, target="llvm", tuning_records="records.log")
    result = tvmc.run(package, device="cpu", benchmark=True)
    print(result)                                            # the outputs' shapes and the times

ONNX models only (PyTorch ones through ``relay.frontend.from_pytorch``, then
``TVMCModel(mod, params)``); no RPC, no auto-scheduler.  Errors are
:class:`TVMCException`, a ``TeccError``.
"""
from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

from ..errors import TeccError


class TVMCException(TeccError):
    """What the TVMC API raises for a request it cannot carry out."""


class TVMCModel:
    """A model to compile or tune: the graph module and its weights.

    Parameters
    ----------
    mod : tecc.graph.Module
    params : dict of str to numpy.ndarray, optional
    model_path : str, optional
        The file it was loaded from (names the default package and records).
    """

    def __init__(self, mod=None, params=None, model_path=None):
        if mod is None:
            raise TVMCException("TVMCModel needs a module: use tvmc.load(path), or TVMCModel(mod, params) with "
                                "what relay.frontend.from_onnx / from_pytorch returned")
        self.mod = mod
        self.params = dict(params or {})
        self.model_path = model_path
        self._tmp = None

    def _stem(self) -> str:
        if self.model_path:
            return os.path.splitext(os.path.abspath(self.model_path))[0]
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="tecc-tvmc-")
        return os.path.join(self._tmp, "model")

    def default_tuning_records_path(self) -> str:
        """Where :func:`tune` writes records when not told: beside the model."""
        return self._stem() + ".records.json"

    def default_package_path(self) -> str:
        """Where :func:`compile` writes the package when not told: beside the model."""
        return self._stem() + ".tar"

    def summary(self, file=None) -> None:
        """Print the model's graph (one line per operator)."""
        print(self.mod.astext(), file=file)

    def __repr__(self):
        return f"TVMCModel({self.model_path or 'in memory'}, {len(self.params)} params)"


class TVMCPackage:
    """A compiled model: the single-file artifact :func:`compile` wrote, loaded
    (numpy alone, plus CuPy on a GPU).

    Attributes
    ----------
    package_path : str
    graph : str
        The graph JSON.
    params : dict of str to numpy.ndarray
    target : str
    """

    def __init__(self, package_path: str):
        from . import tvmc as cli  # noqa: PLC0415

        try:
            self.factory = cli._load_factory(os.fspath(package_path))
        except TeccError as err:
            raise TVMCException(str(err)) from None
        self.package_path = os.fspath(package_path)
        self.graph = self.factory.get_graph_json()
        self.params = dict(self.factory.params)
        self.target = str(self.factory.target)

    def __repr__(self):
        return f"TVMCPackage({self.package_path!r}, target {self.target!r})"


class TVMCResult:
    """What :func:`run` gives: the outputs by name (``output_0``...) and, when it
    benchmarked, the times (a ``ProfileResult``, seconds)."""

    def __init__(self, outputs: dict, times=None):
        self.outputs = outputs
        self.times = times

    def get_output(self, name: str) -> np.ndarray:
        if name not in self.outputs:
            raise TVMCException(f"no output {name!r}; the outputs are {list(self.outputs)}")
        return self.outputs[name]

    def format_times(self) -> str:
        """The times as a table in ms (mean, median, max, min, std)."""
        if self.times is None:
            return "(not benchmarked: run with benchmark=True)"
        ms = [t * 1e3 for t in self.times.results]
        return ("Execution time summary:\n"
                f" {'mean (ms)':>12} {'median (ms)':>12} {'max (ms)':>12} {'min (ms)':>12} {'std (ms)':>12}\n"
                f" {np.mean(ms):12.4f} {np.median(ms):12.4f} {np.max(ms):12.4f} {np.min(ms):12.4f} {np.std(ms):12.4f}")

    def save(self, output_path: str) -> None:
        """The outputs as a ``.npz``."""
        np.savez(output_path, **self.outputs)

    def __str__(self):
        lines = [f"{name}: {arr.dtype} {list(arr.shape)}" for name, arr in self.outputs.items()]
        if self.times is not None:
            lines.append(self.format_times())
        return "\n".join(lines)


def _arg(parse, text, what: str):
    """A command-line argument check (``tvmc._target_arg``...) as a TVMC error."""
    try:
        return parse(str(text))
    except argparse.ArgumentTypeError as err:
        raise TVMCException(f"tvmc.{what}: {err}") from None


#: the tuners tvmc.tune builds, by TVMC's names
TUNERS = {"xgb": "xgb", "random": "random", "ga": "ga", "gridsearch": "grid", "grid": "grid"}


def _unsupported(what: str, **given):
    for name, value in given.items():
        if value:
            raise TVMCException(f"tvmc.{what}: {name}={value!r} is not supported by tecc (no RPC, no "
                                "auto-scheduler, one executor); leave it out")


def load(path, model_format=None, shape_dict=None, **kwargs) -> TVMCModel:
    """Load a model file (TVM's ``tvmc.load``): ONNX (``model_format="onnx"``, or a
    ``.onnx`` file).  ``shape_dict`` binds symbolic input dimensions."""
    from . import tvmc as cli  # noqa: PLC0415

    path = os.fspath(path)
    fmt = model_format or os.path.splitext(path)[1].lstrip(".").lower()
    if fmt != "onnx":
        raise TVMCException(f"tvmc.load: {path!r} is a {fmt or 'file without extension'!r} model; tecc loads ONNX "
                            "(export it to ONNX; PyTorch: relay.frontend.from_pytorch, then TVMCModel(mod, params))")
    if kwargs:
        raise TVMCException(f"tvmc.load: unknown option(s) {sorted(kwargs)}; it takes model_format and shape_dict")
    try:
        mod, params = cli._import_onnx(path, {k: tuple(v) for k, v in (shape_dict or {}).items()})
    except TeccError as err:
        raise TVMCException(str(err)) from None
    return TVMCModel(mod, params, model_path=path)


def compile(tvmc_model, target, opt_level=3, executor=None, runtime=None, tuning_records=None,  # noqa: A001
            package_path=None, cross=None, cross_options=None, output_format="so", dump_code=None,
            target_host=None, disabled_pass=None, pass_context_configs=None, mod_name="default",
            instruments=None, desired_layout=None, mixed_precision=False, mixed_precision_ops=None,
            mixed_precision_calculation_type=None, mixed_precision_acc_type=None, **kwargs) -> TVMCPackage:
    """Compile (TVM's ``tvmc.compile``) into the single-file artifact at
    ``package_path`` (default: beside the model) and load it.

    ``tuning_records`` applies tuned configs; ``desired_layout`` ("NCHW" or
    "NHWC") converts the convolutions first (``relay.transform.ConvertLayout``);
    ``mixed_precision`` computes the model in ``mixed_precision_calculation_type``
    (``"float16"``, the default, or ``"bfloat16"``; ``ToMixedPrecision``), every sum
    in float32 whatever ``mixed_precision_acc_type`` says; ``disabled_pass``,
    ``pass_context_configs`` (``["key=value"]``) and ``instruments`` go to the
    PassContext.
    """
    from ..graph.build import build  # noqa: PLC0415
    from ..graph.transform import ConvertLayout  # noqa: PLC0415
    from ..tir.transform.pipeline import PassContext  # noqa: PLC0415
    from . import tvmc as cli  # noqa: PLC0415

    _unsupported("compile", executor=executor, runtime=runtime, cross=cross, cross_options=cross_options,
                 dump_code=dump_code, target_host=target_host, **kwargs)
    if not isinstance(tvmc_model, TVMCModel):
        raise TVMCException(f"tvmc.compile takes a TVMCModel (tvmc.load), got {type(tvmc_model).__name__}")
    config = {}
    for item in pass_context_configs or ():
        key, sep, value = str(item).partition("=")
        if not sep:
            raise TVMCException(f"tvmc.compile: pass_context_configs entry {item!r} is not key=value")
        config[key.strip()] = _config_value(value.strip())
    path = os.fspath(package_path) if package_path else tvmc_model.default_package_path()
    mod = tvmc_model.mod
    if mixed_precision_ops is not None:
        raise TVMCException("tvmc.compile: mixed_precision_ops is not supported: tecc's mixed precision converts "
                            "every operator (each keeps its sums in float32); leave it out")
    if mixed_precision_acc_type not in (None, "float16", "float32"):
        raise TVMCException(f"tvmc.compile: mixed_precision_acc_type {mixed_precision_acc_type!r} is not float16 or "
                            "float32 (tecc accumulates in float32 either way)")
    if mixed_precision:
        from ..graph.transform import to_mixed_precision  # noqa: PLC0415

        try:
            mod = to_mixed_precision(mod, mixed_precision_calculation_type or "float16")
        except TeccError as err:
            raise TVMCException(str(err)) from None
    try:
        cli._require_folder_of(path, "package_path")
        if tuning_records:
            cli._require_file(tuning_records, "tuning records file")
        history = cli._history(tuning_records)
        disabled = [p.strip() for p in disabled_pass.split(",")] if isinstance(disabled_pass, str) else disabled_pass
        with history, PassContext(opt_level=opt_level, disabled_pass=disabled, instruments=instruments,
                                  config=config):
            if desired_layout:
                mod = ConvertLayout({"nn.conv2d": [desired_layout, "default"]})(mod)
            factory = build(mod, target=target, params=tvmc_model.params, mod_name=mod_name)
        factory.export_library(path)
    except TeccError as err:
        raise TVMCException(str(err)) from None
    return TVMCPackage(path)


def _config_value(text: str):
    """A PassContext config value from text: bool, int, or the string itself."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        return text


def run(tvmc_package, device, hostname=None, port=9090, rpc_key=None, inputs=None, fill_mode="random",
        benchmark=False, repeat=10, number=10, profile=False, end_to_end=False, options=None) -> TVMCResult:
    """Run a package on this machine (TVM's ``tvmc.run``): ``inputs`` by name, the
    others filled (``"random"`` with a fixed seed, ``"zeros"``, ``"ones"``); with
    ``benchmark``, ``repeat`` samples of ``number`` runs each are timed."""
    from . import tvmc as cli  # noqa: PLC0415

    _unsupported("run", hostname=hostname, rpc_key=rpc_key, profile=profile, options=options)
    if not isinstance(tvmc_package, TVMCPackage):
        raise TVMCException(f"tvmc.run takes a TVMCPackage (tvmc.compile), got {type(tvmc_package).__name__}")
    try:
        factory = tvmc_package.factory
        gmod, dev = cli._executor(factory, _arg(cli._device_arg, device, "run"), tvmc_package.package_path,
                                  hints=("device='{}'", "for target='{}'"))
        feed = cli._model_inputs(factory, None, fill_mode, "tvmc.run")
        info = {d["name"]: d for d in factory.spec.input_info()}
        for name, value in (inputs or {}).items():
            if name not in info:
                raise TVMCException(f"tvmc.run: {name!r} is not an input of the model; its inputs are "
                                    f"{cli._describe_inputs(factory.spec.input_info())}")
            feed[name] = np.asarray(value)
        gmod.set_input(**feed)
        gmod.run()
        outputs = {f"output_{k}": gmod.get_output(k).numpy() for k in range(gmod.get_num_outputs())}
        times = gmod.benchmark(dev, repeat=repeat, number=number, end_to_end=end_to_end) if benchmark else None
    except TVMCException:
        raise
    except TeccError as err:
        raise TVMCException(str(err)) from None
    return TVMCResult(outputs, times)


def tune(tvmc_model, target, tuning_records=None, prior_records=None, enable_autoscheduler=False, rpc_key=None,
         hostname=None, port=9090, trials=10000, target_host=None, tuner="xgb", min_repeat_ms=None,
         early_stopping=None, timeout=10, repeat=1, number=10, parallel=4, desired_layout=None,
         **kwargs) -> str:
    """Tune the model's kernels (TVM's ``tvmc.tune``) with ``trials`` in all, split
    over its tasks by weight; records are appended to ``tuning_records`` (default:
    beside the model), which is returned.  ``prior_records`` warm-start the cost model."""
    from ..graph.transform import ConvertLayout  # noqa: PLC0415
    from ..tir.transform.pipeline import PassContext  # noqa: PLC0415
    from . import tvmc as cli  # noqa: PLC0415

    _unsupported("tune", enable_autoscheduler=enable_autoscheduler, rpc_key=rpc_key, hostname=hostname,
                 target_host=target_host, **kwargs)
    if not isinstance(tvmc_model, TVMCModel):
        raise TVMCException(f"tvmc.tune takes a TVMCModel (tvmc.load), got {type(tvmc_model).__name__}")
    if tuner not in TUNERS:
        raise TVMCException(f"tvmc.tune: tuner {tuner!r} is not one tecc has; use one of {', '.join(TUNERS)}")
    output = os.fspath(tuning_records) if tuning_records else tvmc_model.default_tuning_records_path()
    args = argparse.Namespace(
        FILE=tvmc_model.model_path or "the model", input_shapes=None, output=output,
        target=_arg(cli._target_arg, target, "tune"), trials=int(trials), tuner=TUNERS[tuner],
        early_stopping=early_stopping,
        number=int(number), repeat=int(repeat), min_repeat_ms=float(min_repeat_ms or 0), timeout=int(timeout),
        cpu_cache_flush=False, parallel=parallel, verbose=0, opt_level=3, prior_records=prior_records)
    mod = tvmc_model.mod
    try:
        if prior_records:
            cli._require_file(prior_records, "prior records file")
        if desired_layout:
            with PassContext(opt_level=3):
                mod = ConvertLayout({"nn.conv2d": [desired_layout, "default"]})(mod)
        cli._cmd_tune(args, "tvmc.tune", model=(mod, tvmc_model.params))
    except TeccError as err:
        raise TVMCException(str(err)) from None
    return output


__all__ = ["TVMCException", "TVMCModel", "TVMCPackage", "TVMCResult", "compile", "load", "run", "tune"]

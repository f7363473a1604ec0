"""tecc's reference records (``autotvm.tophub``): every shipped record still
instantiates and compiles with the current templates; a model build for the
records' architecture applies them unless the caller applied records of its own or
``TECC_TOPHUB=off``; the configs compute the right answer (on the emulator)."""
import os
import warnings

import numpy as np
import pytest
from onnx import helper

import tecc
from tecc import autotvm, topi  # noqa: F401  (topi registers the templates)
from tecc.contrib import graph_executor
from tecc.graph.build import build
from tecc.graph.frontend import from_onnx
from tecc.graph.testing import _model
from tecc.tuner import tophub
from tecc.tuner.record import load_from_file

SM90 = "cuda -arch=sm_90"
REFERENCE = os.path.join(tophub.LOG_DIR, "cuda_sm_90.log")


def _records():
    return list(load_from_file(REFERENCE))


def test_the_reference_records_are_valid_measurements_of_four_workloads():
    records = _records()
    assert sorted(inp.task.name for inp, _ in records) == [
        "conv2d_nchw.cuda", "conv2d_nchw.cuda", "dense_large_batch.cuda", "sgemm.cuda"]
    for record in records:
        inp, res = record
        assert res.error_no == 0 and not res.emulated and res.mean_cost > 0
        assert record.env["compute_capability"] == "9.0"  # measured on Hopper, as the file's name says


@pytest.mark.parametrize("index", range(4))
def test_every_reference_record_instantiates_and_compiles_for_its_arch(index):
    inp, _ = _records()[index]
    task = autotvm.task.create(inp.task.name, args=inp.task.args, target=SM90)
    with tecc.target.Target(SM90):
        s, args = task.instantiate(inp.config)
        mod = tecc.build(s, args, target=SM90)
    assert mod.arch == "sm_90" and mod.cubin[:4] == b"\x7fELF"


def test_context_by_target():
    assert tophub.reference_file(SM90) == REFERENCE
    assert tophub.reference_file("cuda -arch=sm_80") is None and tophub.reference_file("llvm") is None
    ctx = tophub.context([SM90, "llvm"])
    assert len(ctx.best_by_targetkey) == 4
    inp, _ = _records()[0]
    assert ctx.has_record(SM90, inp.task.workload)
    assert tophub.context("cuda -arch=sm_80").best_by_targetkey == {}
    # extra files join the reference records (TVM's extra_files)
    assert len(tophub.context("llvm", extra_files=[REFERENCE]).best_by_targetkey) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # measured on an H100: applied here without a warning
        tophub.context(SM90)


def test_off_in_the_environment(monkeypatch):
    monkeypatch.setenv(tophub.DISABLE_ENV, "off")
    assert not tophub.enabled() and tophub.context(SM90).best_by_targetkey == {}


def _conv_model(channels=64, size=56):
    # one of ResNet-50's 3x3 convolutions at batch 1 (the first one by default), with its
    # bias and ReLU
    rng = np.random.default_rng(0)
    w = rng.standard_normal((channels, channels, 3, 3), dtype=np.float32) * np.float32(0.05)
    b = rng.standard_normal(channels, dtype=np.float32) * np.float32(0.1)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["y"])]
    shape = [1, channels, size, size]
    model = _model(nodes, {"x": shape}, {"y": shape}, {"w": w, "b": b}, opset=13)
    return model, w, b


def _build(model, records=None):
    mod, params = from_onnx(model)
    with tecc.transform.PassContext(opt_level=3):
        if records is None:
            factory = build(mod, SM90, params)
        else:
            with autotvm.apply_history_best(records):
                factory = build(mod, SM90, params)
    return factory, [(k, g, b) for _, k, g, b in factory.get_lib().launch_dims()]


@pytest.mark.parametrize("channels, size, launch", [
    (64, 56, ((7, 28, 2), (8, 2, 8))),  # 64 filters in 2 x 8 x 2 thread tiles, rows by 2, columns by 8
    (256, 14, ((1, 1, 64), (14, 2, 4))),  # 4 filters a block, the 14x14 pixels by 14 x 2 threads of 7 rows
])
def test_a_model_build_applies_the_reference_config_and_computes_right(monkeypatch, channels, size, launch):
    model, w, b = _conv_model(channels, size)
    factory, dims = _build(model)
    monkeypatch.setenv(tophub.DISABLE_ENV, "off")
    _, fallback_dims = _build(model)
    monkeypatch.delenv(tophub.DISABLE_ENV)
    assert dims != fallback_dims and [(g, b) for _, g, b in dims] == [launch]
    x = np.random.default_rng(1).standard_normal((1, channels, size, size), dtype=np.float32)
    m = graph_executor.GraphModule(factory["default"](tecc.cuda(0)))
    m.set_input("x", x)
    m.run()
    padded = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))  # c, h, w, 3, 3
    want = np.maximum(np.einsum("chwij,kcij->khw", windows, w) + b[:, None, None], 0)
    np.testing.assert_allclose(m.get_output(0).numpy()[0], want, rtol=1e-4, atol=1e-4)


def test_records_the_caller_applies_replace_the_reference_ones(tmp_path):
    model, _, _ = _conv_model()
    empty = tmp_path / "empty.log"
    empty.write_text("")
    _, dims = _build(model, records=str(empty))  # nothing tuned: the fallback, not the reference
    _, reference_dims = _build(model)
    assert dims != reference_dims


def test_a_task_made_with_padding_written_otherwise_names_the_models_workload(tmp_path):
    # a conv task created by hand with padding (1, 1), tuned, applies to the model's layer,
    # whose workload has padding (1, 1, 1, 1); records read before the template was
    # registered are keyed the same way once it is asked for
    from tecc.tuner.measure import MeasureInput, MeasureResult  # noqa: PLC0415
    from tecc.tuner.task.task import Task  # noqa: PLC0415

    args = (("TENSOR", (1, 64, 56, 56), "float32"), ("TENSOR", (64, 64, 3, 3), "float32"), 1, (1, 1), 1, "float32")
    task = autotvm.task.create("conv2d_nchw.cuda", args=args, target=SM90)
    reference_inp, _ = next(r for r in _records() if r[0].task.workload == task.workload)
    assert task.workload[3:6] == ((1, 1), (1, 1, 1, 1), (1, 1))
    raw = Task("conv2d_nchw.cuda", args, target=SM90)
    raw.args = args  # as a record decoded before tecc.topi was imported keeps them
    result = MeasureResult([1e-5], 0, 1.0, 0.0, False)
    model, _, _ = _conv_model()
    _, dims = _build(model, records=[(MeasureInput(raw.target, raw, reference_inp.config), result)])
    _, reference_dims = _build(model)
    assert dims == reference_dims  # the hand-made task's config reached the layer
    with tecc.target.Target(SM90):
        assert topi.nn.utils.conv2d_workload_args(("d", "k", 2, "SAME", 1)) == ("d", "k", (2, 2), "SAME", (1, 1))


def test_transposed_and_winograd_convolution_tasks_made_by_hand_name_the_models_workloads():
    # a ConvTranspose layer's task (extracted from the model) and one created by hand
    # with int strides, padding and output padding are one workload; so are Winograd
    # tasks with padding 1 and (1, 1, 1, 1)
    from tecc.graph.build import extract_tasks  # noqa: PLC0415

    rng = np.random.default_rng(1)
    w = rng.standard_normal((8, 4, 3, 3), dtype=np.float32)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1],
                            output_padding=[1, 1], kernel_shape=[3, 3])
    model = _model([node], {"x": [1, 8, 8, 8]}, {"y": [1, 4, 16, 16]}, {"w": w}, opset=13)
    mod, params = from_onnx(model)
    (layer,) = [t for t in extract_tasks(mod, params, target=SM90) if t.name == "conv2d_transpose_nchw.cuda"]
    by_hand = autotvm.task.create("conv2d_transpose_nchw.cuda", args=(
        ("TENSOR", (1, 8, 8, 8), "float32"), ("TENSOR", (8, 4, 3, 3), "float32"), 2, 1, "float32", 1), target=SM90)
    assert by_hand.workload == layer.workload
    data, kernel = ("TENSOR", (1, 16, 14, 14, 8), "float32"), ("TENSOR", (4, 4, 2, 16, 8, 8), "float32")
    tasks = [autotvm.task.create("conv2d_NCHWc_winograd.x86", args=(data, kernel, pad, "NCHW8c", "NCHW8c",
                                                                     "float32"), target="llvm")
             for pad in (1, (1, 1), (1, 1, 1, 1))]
    assert tasks[0].workload == tasks[1].workload == tasks[2].workload
    assert tasks[0].workload[3] == (1, 1, 1, 1)

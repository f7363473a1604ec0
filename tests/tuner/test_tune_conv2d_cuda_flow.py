"""The flow of TVM's AutoTVM tutorial for tuning a CUDA convolution ("tune a
high-performance convolution on NVIDIA GPUs"), on a machine without a GPU: the same
API calls, with a template of our own, a small workload and a few trials.  The
candidates run on tecc's CUDA emulator, so the records say ``emulated``; the best
one is applied, built, checked against numpy and timed on the (emulated) CUDA
device.  (The tutorial's own code stays outside the repository.)"""
import warnings

import numpy as np

import tecc as tvm
from tecc import autotvm, te, topi
from tecc.topi.testing import conv2d_nchw_python

#: N, H, W, CO, CI, KH, KW, stride, padding: a cut-down layer, quick on the emulator
WORKLOAD = (1, 8, 8, 8, 8, 3, 3, (1, 1), (1, 1))
N_TRIAL = 6


@autotvm.template("test_tune_conv2d_cuda_flow/conv2d_nchw")
def conv2d_nchw_direct(N, H, W, CO, CI, KH, KW, stride, padding):
    """A direct NCHW convolution for CUDA with the tutorial's kinds of knobs: the
    output's channels, rows and columns each split four ways (block, virtual
    thread, thread, inner), each reduction axis three ways (the shared-memory
    chunk, the register chunk, inner), and how far to unroll."""
    data = te.placeholder((N, CI, H, W), name="data")
    kernel = te.placeholder((CO, CI, KH, KW), name="kernel")
    conv = topi.nn.conv2d_nchw(data, kernel, stride, padding, dilation=1, out_dtype="float32")
    s = te.create_schedule([conv.op])

    cfg = autotvm.get_config()
    n, f, y, x = s[conv].op.axis
    for knob, axis in (("tile_f", f), ("tile_y", y), ("tile_x", x)):
        cfg.define_split(knob, axis, num_outputs=4)
    for knob, axis in zip(("tile_rc", "tile_ry", "tile_rx"), s[conv].op.reduce_axis):
        cfg.define_split(knob, axis, num_outputs=3)
    cfg.define_knob("auto_unroll_max_step", [0, 512, 1500])
    cfg.define_knob("unroll_explicit", [0, 1])

    # the padding is computed as the input is copied into shared memory
    padded = conv.op.input_tensors[0]
    s[padded].compute_inline()
    acc = s.cache_write(conv, "local")
    data_shared = s.cache_read(padded, "shared", [acc])
    kernel_shared = s.cache_read(kernel, "shared", [acc])
    data_local = s.cache_read(data_shared, "local", [acc])
    kernel_local = s.cache_read(kernel_shared, "local", [acc])

    # the output: a block per tile, virtual threads, threads, each thread's own tile
    (bf, vf, tf, fi), (by, vy, ty, yi), (bx, vx, tx, xi) = (
        cfg[knob].apply(s, conv, axis) for knob, axis in (("tile_f", f), ("tile_y", y), ("tile_x", x)))
    s[conv].reorder(n, bf, by, bx, vf, vy, vx, tf, ty, tx, fi, yi, xi)
    thread_tags = ("threadIdx.z", "threadIdx.y", "threadIdx.x")
    for loops, tags in (((bf, by, bx), ("blockIdx.z", "blockIdx.y", "blockIdx.x")),
                        ((vf, vy, vx), ("vthread",) * 3), ((tf, ty, tx), thread_tags)):
        for loop, tag in zip(loops, tags):
            s[conv].bind(loop, te.thread_axis(tag))
    s[acc].compute_at(s[conv], tx)

    # the reduction: chunks staged in shared memory outside, in registers inside
    splits = [cfg[knob].apply(s, acc, axis)
              for knob, axis in zip(("tile_rc", "tile_ry", "tile_rx"), s[acc].op.reduce_axis)]
    outer, middle, inner = zip(*splits)
    s[acc].reorder(*outer, *middle, *inner, *s[acc].op.axis)
    for stage in (data_shared, kernel_shared):
        s[stage].compute_at(s[acc], outer[-1])
    for stage in (data_local, kernel_local):
        s[stage].compute_at(s[acc], middle[-1])

    # every thread of the block copies, consecutive threads at consecutive elements
    counts = [cfg[knob].size[2] for knob in ("tile_f", "tile_y", "tile_x")]
    for stage in (data_shared, kernel_shared):
        rest = s[stage].fuse(*s[stage].op.axis)
        for tag, count in reversed(list(zip(thread_tags, counts))):
            rest, t = s[stage].split(rest, factor=count)
            s[stage].bind(t, te.thread_axis(tag))

    s[conv].pragma(n, "auto_unroll_max_step", cfg["auto_unroll_max_step"].val)
    s[conv].pragma(n, "unroll_explicit", cfg["unroll_explicit"].val)
    return s, [data, kernel, conv]


def test_conv2d_cuda_tutorial_flow(tmp_path, capsys):
    N, H, W, CO, CI, KH, KW, strides, padding = WORKLOAD
    task = autotvm.task.create("test_tune_conv2d_cuda_flow/conv2d_nchw", args=WORKLOAD, target="cuda")
    print(task.config_space)
    printed = capsys.readouterr().out
    for knob in ("tile_f", "tile_y", "tile_x", "tile_rc", "tile_ry", "tile_rx", "auto_unroll_max_step",
                 "unroll_explicit"):
        assert knob in printed
    assert task.flop >= 2 * N * CO * H * W * CI * KH * KW  # (counted from the compute: the padding's too)

    measure_option = autotvm.measure_option(
        builder=autotvm.LocalBuilder(timeout=60),
        runner=autotvm.LocalRunner(repeat=3, min_repeat_ms=5, timeout=60))
    log = str(tmp_path / "conv2d.log")
    tuner = autotvm.tuner.XGBTuner(task, seed=0)  # fewer trials than its plan: random picks
    tuner.tune(n_trial=N_TRIAL, measure_option=measure_option, callbacks=[autotvm.callback.log_to_file(log)])

    records = list(autotvm.record.load_from_file(log))
    assert len(records) == N_TRIAL
    assert len({inp.config.index for inp, _ in records}) == N_TRIAL
    errors = [res.error_no for _, res in records]
    assert autotvm.MeasureErrorNo.WRONG_ANSWER not in errors and autotvm.MeasureErrorNo.RUNTIME_DEVICE not in errors
    measured = [(inp, res) for inp, res in records if res.error_no == 0]
    assert measured, [res.costs for _, res in records]
    emulated = not tvm.cuda(0).exist  # no GPU: the candidates ran on the emulator, and their records say so
    assert all(res.emulated == emulated and len(res.costs) == 3 and min(res.costs) > 0 for _, res in measured)

    best_log = str(tmp_path / "conv2d.best.log")
    assert autotvm.record.pick_best(log, best_log) == 1
    ((picked, picked_res),) = autotvm.record.load_from_file(best_log)
    fastest = min(measured, key=lambda r: np.mean(r[1].costs))[0]
    assert picked.config.index == fastest.config.index and picked_res.emulated == emulated

    dispatch_context = autotvm.apply_history_best(log)
    best_config = dispatch_context.query(task.target, task.workload)
    assert best_config.index == picked.config.index
    assert str(best_config) == str(picked.config)

    with autotvm.apply_history_best(log):
        with tvm.target.Target("cuda"):
            s, arg_bufs = conv2d_nchw_direct(N, H, W, CO, CI, KH, KW, strides, padding)
            func = tvm.build(s, arg_bufs)
    # what was built is the picked config's schedule
    with tvm.target.Target("cuda"):
        picked_s, picked_args = task.instantiate(picked.config)
    assert str(tvm.lower(s, arg_bufs, simple_mode=True)) == str(tvm.lower(picked_s, picked_args, simple_mode=True))
    threads = np.prod([best_config[k].size[2] for k in ("tile_f", "tile_y", "tile_x")])
    assert f"__launch_bounds__({threads})" in func.imported_modules[0].get_source()

    a_np = np.random.uniform(size=(N, CI, H, W)).astype(np.float32)
    w_np = np.random.uniform(size=(CO, CI, KH, KW)).astype(np.float32)
    c_np = conv2d_nchw_python(a_np, w_np, strides, padding)
    dev = tvm.cuda()
    a_tvm = tvm.nd.array(a_np, device=dev)
    w_tvm = tvm.nd.array(w_np, device=dev)
    c_tvm = tvm.nd.empty(c_np.shape, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # without a GPU: "runs on the CPU emulation"
        func(a_tvm, w_tvm, c_tvm)
        tvm.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-4)
        evaluator = func.time_evaluator(func.entry_name, dev, number=2)
        cost = evaluator(a_tvm, w_tvm, c_tvm)
    assert cost.mean > 0 and len(cost.results) == 1

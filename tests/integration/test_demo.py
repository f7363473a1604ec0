"""The README's demo runs (small size) and checks its own results."""
from tecc import demo


def test_demo_runs(capsys):
    demo.main(["--size", "64"])
    out = capsys.readouterr().out
    assert "results match numpy" in out
    assert "softmax ran" in out and "__global__" in out


def test_the_readme_example_runs_and_beats_the_naive_schedule():
    """The first program a new user runs is the README's: it must run and its schedule
    must be a good one (the reduction outside the vectorized loop)."""
    import pathlib
    import re

    import numpy as np

    import tecc
    from tecc import te

    readme = (pathlib.Path(tecc.__file__).parent / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    code = code.replace("n = 1024", "n = 128")
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - the project's own README
    a, b, c = (scope[x].numpy() for x in "abc")
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    # the loop nest the example prints: k outside the vector loop, ramps inside
    s, args = scope["s"], [scope["A"], scope["B"], scope["C"]]
    text = str(tecc.lower(s, args, target="llvm"))
    assert "parallel for (i.outer" in text and "ramp(" in text
    naive = te.create_schedule(scope["C"].op)
    assert "ramp(" not in str(tecc.lower(naive, args, target="llvm"))


def test_print_after_all_shows_every_step_of_cuda_lowering(capsys):
    import tecc
    from tecc.topi import cuda as topi_cuda

    s, args = topi_cuda.softmax_rows(4, 64, num_thread=32)
    with tecc.transform.PassContext(config={"tir.print_after": ["all"]}):
        tecc.lower(s, args, name="softmax", target="cuda -arch=sm_80")
    out = capsys.readouterr().out
    headers = [ln for ln in out.splitlines() if ln.startswith("# after ")]
    for name in ("split_host_device", "lower_thread_allreduce", "thread_sync", "promote_local_registers",
                 "verify_gpu"):
        assert any(h.split()[2] == name for h in headers), name
    # what the printer will receive: the shuffles are in the IR, not in the printer
    assert "tecc.warp_shuffle_down" in out.split("# after lower_thread_allreduce")[1]

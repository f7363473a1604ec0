"""The README's demo runs (small size) and checks its own results."""
from tecc import demo


def test_demo_runs(capsys):
    demo.main(["--size", "64"])
    out = capsys.readouterr().out
    assert "results match numpy" in out
    assert "softmax ran" in out and "__global__" in out

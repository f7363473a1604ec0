"""Seed 000's Relax flow (an nn.Module MLP exported, piped, compiled, run on the VM)
with only the import changed, and the facade's errors."""
import numpy as np
import pytest

import tecc as tvm
from tecc import relax
from tecc.graph import GraphError
from tecc.relax.frontend import nn


class MLPModel(nn.Module):
    def __init__(self):
        super(MLPModel, self).__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        x = self.fc1(x)
        x = self.relu1(x)
        x = self.fc2(x)
        return x


def test_seed_000_mlp_flow_runs_and_matches_numpy(capsys):
    mod, param_spec = MLPModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    mod.show()
    text = capsys.readouterr().out
    assert text.startswith("def @forward(%x: Tensor[(1, 784), float32], %fc1.weight: Tensor[(256, 784), float32]")
    assert "nn.dense(%x, %fc1.weight" in text and "nn.relu(" in text
    assert [name for name, _ in param_spec] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    mod = relax.get_pipeline("zero")(mod)
    target = tvm.target.Target("llvm")
    ex = tvm.compile(mod, target)
    device = tvm.cpu()
    vm = relax.VirtualMachine(ex, device)
    rng = np.random.default_rng(0)
    data = rng.random((1, 784)).astype("float32")
    tvm_data = tvm.nd.array(data, device=device)
    params = [rng.random(p.shape).astype("float32") for _, p in param_spec]
    nd_params = [tvm.nd.array(p, device=device) for p in params]
    got = vm["forward"](tvm_data, *nd_params).numpy()
    w1, b1, w2, b2 = params
    expected = np.maximum(data @ w1.T + b1, 0) @ w2.T + b2
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-3)


def test_relax_facade_errors_name_what_is_wrong():
    with pytest.raises(GraphError, match=r"unknown pipeline 'fast'; tecc has \['default', 'default_build', 'none', 'zero'\]"):
        relax.get_pipeline("fast")
    with pytest.raises(GraphError, match="in_features must be a positive int"):
        nn.Linear(0, 3)
    with pytest.raises(GraphError, match="has no method 'backward'"):
        MLPModel().export_tvm(spec={"backward": {"x": nn.spec.Tensor((1, 784))}})
    with pytest.raises(GraphError, match="input 'x' of 'forward' must be an nn.spec.Tensor"):
        MLPModel().export_tvm(spec={"forward": {"x": (1, 784)}})
    with pytest.raises(GraphError, match="nn.dense"):
        MLPModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 100))}})
    mod, _ = MLPModel().export_tvm(spec={"forward": {"x": nn.spec.Tensor((1, 784))}})
    ex = tvm.compile(relax.get_pipeline("none")(mod), "llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    with pytest.raises(GraphError, match=r"forward takes 5 argument\(s\) \(its inputs, then its parameters\), got 1"):
        vm["forward"](np.zeros((1, 784), "float32"))
    with pytest.raises(GraphError, match="has no function 'main'"):
        vm["main"]

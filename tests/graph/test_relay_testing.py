"""``tecc.relay.testing``: TVM's test workloads (ResNet, MobileNet, VGG, SqueezeNet,
Inception v3, an MLP) -- their parameter counts against the published figures,
their initial parameters, and small versions of each built at opt_level 3 and 0
with the same results."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tecc as tvm
from tecc import relay
from tecc.contrib import graph_executor
from tecc.graph import GraphError
from tecc.relay.testing import init, inception_v3, layers, mlp, mobilenet, resnet, squeezenet, vgg


@pytest.fixture(autouse=True)
def _quiet_untuned():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no tuned config": the default schedules are what these builds use
        yield


def _counts(fn):
    """``(trainable, total)`` parameters of a network: the sizes of every parameter
    but ``data``; trainable leaves out the batch norms' moving statistics, as the
    published figures (torchvision's, Keras's "trainable") do."""
    trainable = total = 0
    for p in fn.params:
        if p.name_hint == "data":
            continue
        size = int(np.prod(p.type_annotation.shape))
        total += size
        if not p.name_hint.endswith(("moving_mean", "moving_var")):
            trainable += size
    return trainable, total


# ---------------------------------------------------------------------------------------
# the published parameter counts
# ---------------------------------------------------------------------------------------
# torchvision's counts (convolutions without bias, batch norm gamma and beta, the fc
# layer).  TVM's relay.testing.resnet is the pre-activation variant (batch norm and
# relu before each convolution, plus "bn_data" on the input), which has the same
# convolutions and fc but other batch norms: ResNet-18 has 3,968 batch-norm channels
# there (3 more in bn_data) against the 4,800 of the original network built here.
RESNET = {18: 11_689_512, 34: 21_797_672, 50: 25_557_032, 101: 44_549_160, 152: 60_192_808}
# He et al., Table 6 (CIFAR-10, option A shortcuts: no parameters), in millions
RESNET_CIFAR = {20: 0.27, 32: 0.46, 44: 0.66, 56: 0.85, 110: 1.7}
# torchvision's vgg11 ... vgg19 (convolutions and fc layers with biases)
VGG = {11: 132_863_336, 13: 133_047_848, 16: 138_357_544, 19: 143_667_240}


@pytest.mark.parametrize("num_layers", sorted(RESNET))
def test_resnet_parameter_counts_match_the_published_ones(num_layers):
    trainable, total = _counts(resnet.get_net(1, 1000, num_layers))
    assert trainable == RESNET[num_layers]
    # the moving mean and variance add two values per batch-norm channel, gamma and beta two more
    assert (total - trainable) * 2 == _bn_channels(num_layers) * 4


def _bn_channels(num_layers):
    """Batch-norm channels of the ImageNet ResNet, counted from the paper's tables:
    one after every convolution, projection shortcuts included."""
    bottleneck, units = resnet.IMAGENET_UNITS[num_layers]
    channels, c_in = 64, 64  # bn0
    for stage, (count, width) in enumerate(zip(units, resnet.IMAGENET_WIDTHS)):
        out = 4 * width if bottleneck else width
        per_unit = (2 * width + out) if bottleneck else 2 * width
        channels += count * per_unit
        if stage > 0 or c_in != out:
            channels += out  # the projection shortcut's batch norm
        c_in = out
    return channels


def test_resnet_cifar_parameter_counts_match_the_paper():
    for depth, millions in RESNET_CIFAR.items():
        trainable, _ = _counts(resnet.get_net(1, 10, depth, image_shape=(3, 32, 32)))
        digits = 1 if millions >= 1 else 2
        assert round(trainable / 1e6, digits) == millions, depth


@pytest.mark.parametrize("num_layers", sorted(VGG))
def test_vgg_parameter_counts_match_the_published_ones(num_layers):
    assert _counts(vgg.get_net(1, (3, 224, 224), 1000, "float32", num_layers)) == (VGG[num_layers],) * 2


def test_mobilenet_squeezenet_inception_parameter_counts():
    # Keras's MobileNet (alpha 1, 224): 4,231,976 trainable, 4,253,864 with the moving statistics
    assert _counts(mobilenet.get_net()) == (4_231_976, 4_253_864)
    # torchvision's squeezenet1_0 and squeezenet1_1 (no batch norm)
    assert _counts(squeezenet.get_net(1, (3, 224, 224), 1000, "1.0", "float32")) == (1_248_424,) * 2
    assert _counts(squeezenet.get_net(1, (3, 224, 224), 1000, "1.1", "float32")) == (1_235_496,) * 2
    # Keras's InceptionV3 (batch norms without scale, as here): 23,817,352 trainable, 23,851,784 in all.
    # torchvision's (23,834,568 without its auxiliary classifier) adds a gamma to each of the 17,216
    # batch-norm channels; TVM's keeps an unused gamma parameter per batch norm.
    assert _counts(inception_v3.get_net(1, 1000, (3, 299, 299), "float32")) == (23_817_352, 23_851_784)
    assert 23_851_784 - 23_817_352 == 2 * 17_216 and 23_834_568 - 23_817_352 == 17_216


# ---------------------------------------------------------------------------------------
# workloads: modules, parameters, output shapes
# ---------------------------------------------------------------------------------------
def test_the_quick_start_workload():
    mod, params = relay.testing.resnet.get_workload(num_layers=18, batch_size=1, image_shape=(3, 224, 224))
    main = mod["main"]
    assert main.body.checked_type.shape == (1, 1000)  # typed by create_workload
    assert main.params[0].name_hint == "data" and main.params[0].checked_type.shape == (1, 3, 224, 224)
    assert set(params) == {p.name_hint for p in main.params[1:]}
    for p in main.params[1:]:
        value = params[p.name_hint]
        assert isinstance(value, tvm.nd.NDArray)
        assert value.shape == p.checked_type.shape and str(value.dtype) == "float32"
    assert sum(int(np.prod(v.shape)) for v in params.values()) == 11_699_112
    w = params["conv0_weight"].numpy()
    bound = init.Xavier().scale("conv0_weight", w.shape)
    assert 0.9 * bound < np.abs(w).max() <= bound
    assert not params["fc1_bias"].numpy().any() and (params["bn0_moving_var"].numpy() == 1).all()
    text = mod.astext(show_meta_data=False)
    assert text.startswith("def @main(%data: Tensor[(1, 3, 224, 224), float32], %conv0_weight")
    assert text.count("nn.conv2d(") == 20 and "nn.softmax(" in text
    assert mod.astext(show_meta_data=True) == text


def test_the_package_loads_with_relay_and_stays_light():
    from tecc.relay import testing

    assert relay.testing is testing and testing.resnet is resnet and testing.create_workload is init.create_workload
    code = ("import sys; from tecc import relay; relay.testing.vgg; "
            "print(sorted(m for m in sys.modules if m.startswith(('tecc.tir', 'tecc.te', 'tecc.topi'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("make, shape", [
    (lambda: resnet.get_workload(batch_size=2, num_classes=7, num_layers=50, image_shape=(3, 64, 64)), (2, 7)),
    (lambda: resnet.get_workload(2, 5, 56, image_shape=(32, 32, 3), layout="NHWC"), (2, 5)),
    (lambda: mobilenet.get_workload(batch_size=3, num_classes=4, image_shape=(3, 64, 64)), (3, 4)),
    (lambda: vgg.get_workload(2, num_classes=6, image_shape=(3, 32, 32), num_layers=13, batch_norm=True), (2, 6)),
    (lambda: squeezenet.get_workload(batch_size=2, num_classes=8, version="1.1", image_shape=(3, 64, 64)), (2, 8)),
    (lambda: inception_v3.get_workload(batch_size=1, num_classes=3, image_shape=(3, 80, 80)), (1, 3)),
    (lambda: mlp.get_workload(4), (4, 10)),
])
def test_get_workload_output_shapes(make, shape):
    mod, params = make()
    main = mod["main"]
    assert main.body.checked_type.shape == shape and main.body.op.name == "nn.softmax"
    assert set(params) == {p.name_hint for p in main.params} - {"data"}


def test_create_workload_is_deterministic_given_the_seed():
    net = mlp.get_net(2)
    _, a = relay.testing.create_workload(net)
    _, b = relay.testing.create_workload(net, seed=0)
    _, c = relay.testing.create_workload(net, seed=1)
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)
    assert not np.array_equal(a["fc1_weight"].numpy(), c["fc1_weight"].numpy())
    # an expression: its free variables are the parameters
    mod, params = relay.testing.create_workload(net.body)
    assert [p.name_hint for p in mod["main"].params] == [p.name_hint for p in net.params]
    assert sorted(params) == sorted(a)


# ---------------------------------------------------------------------------------------
# initializers
# ---------------------------------------------------------------------------------------
def test_xavier_scale():
    shape = (64, 32, 3, 3)
    fan_in, fan_out = 32 * 9, 64 * 9
    assert init.Xavier().scale("c_weight", shape) == pytest.approx(np.sqrt(3 / ((fan_in + fan_out) / 2)))
    assert init.Xavier(factor_type="in", magnitude=6).scale("c_weight", shape) == pytest.approx(np.sqrt(6 / fan_in))
    assert init.Xavier(factor_type="out").scale("c_weight", shape) == pytest.approx(np.sqrt(3 / fan_out))
    assert init.Xavier().scale("fc_weight", (10, 50)) == pytest.approx(np.sqrt(3 / 30))
    # a depthwise weight (C, 1, kh, kw): one input and one output per group
    assert init.Xavier().scale("b_depthwise_conv1_weight", (32, 1, 3, 3)) == pytest.approx(np.sqrt(3 / 9))

    rng = np.random.default_rng(0)
    arr = np.zeros(shape, "float32")
    init.Xavier()("c_weight", arr, rng)
    scale = init.Xavier().scale("c_weight", shape)
    assert np.abs(arr).max() <= scale and np.abs(arr).max() > 0.99 * scale
    assert arr.std() == pytest.approx(scale / np.sqrt(3), rel=0.03)  # uniform in [-scale, scale]
    init.Xavier(rnd_type="gaussian")("c_weight", arr, rng)
    assert arr.std() == pytest.approx(scale, rel=0.03)


def test_initializer_roles_by_name():
    rng = np.random.default_rng(0)
    for name, value in (("x_bias", 0), ("x_beta", 0), ("x_moving_mean", 0), ("x_gamma", 1), ("x_moving_var", 1)):
        arr = np.full(5, 7.0, "float32")
        init.Xavier()(name, arr, rng)
        assert (arr == value).all(), name
    arr = np.zeros((4, 4), "float32")
    init.Constant()("x_weight", arr)
    assert arr.sum() == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------
# building small networks: opt_level 3 against opt_level 0
# ---------------------------------------------------------------------------------------
class _Spread(init.Xavier):
    """He-scaled weights and random biases and batch-norm statistics: the default
    initialization (Xavier, identity batch norms) shrinks deep networks' logits to
    nearly equal values, which would make comparing outputs say little."""

    def __init__(self, magnitude=6):
        super().__init__(factor_type="in", magnitude=magnitude)

    def _init_bias(self, _name, arr, rng):
        arr[...] = rng.normal(0.0, 0.1, arr.shape)

    _init_beta = _init_mean = _init_bias

    def _init_gamma(self, _name, arr, rng):
        arr[...] = rng.uniform(0.8, 1.2, arr.shape)

    _init_var = _init_gamma


def _build_run(mod, params, data, opt_level):
    with tvm.transform.PassContext(opt_level=opt_level):
        lib = relay.build(mod, "llvm", params=params)
    module = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    module.set_input("data", data)
    module.run()
    return module.get_output(0).numpy()


#: name -> (network, magnitude of the weights): residual sums grow, so ResNets get smaller weights
SMALL = {
    "resnet18": (lambda: resnet.get_net(2, 10, 18, image_shape=(3, 64, 64)), 2),
    "resnet20_cifar": (lambda: resnet.get_net(2, 10, 20, image_shape=(3, 32, 32)), 2),
    "mobilenet": (lambda: mobilenet.get_net(2, 10, (3, 32, 32)), 6),
    "vgg11": (lambda: vgg.get_net(2, (3, 32, 32), 10, "float32", 11), 6),
    "squeezenet1.0": (lambda: squeezenet.get_net(2, (3, 32, 32), 10, "1.0", "float32"), 6),
    "squeezenet1.1": (lambda: squeezenet.get_net(2, (3, 32, 32), 10, "1.1", "float32"), 6),
    "inception_v3": (lambda: inception_v3.get_net(2, 10, (3, 75, 75), "float32"), 6),
    "mlp": (lambda: mlp.get_net(2), 6),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_network_same_output_at_opt_level_3_and_0(name):
    make, magnitude = SMALL[name]
    mod, params = relay.testing.create_workload(make(), _Spread(magnitude))
    shape = mod["main"].params[0].checked_type.shape
    data = np.random.default_rng(1).uniform(-1, 1, shape).astype("float32")
    fast = _build_run(mod, params, data, 3)
    plain = _build_run(mod, params, data, 0)
    assert fast.shape == (2, 10)
    np.testing.assert_allclose(fast, plain, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(fast.sum(axis=1), 1.0, rtol=1e-5)
    assert fast.min() >= 0 and fast.max() - fast.min() > 0.02  # the classes' scores differ
    assert not np.allclose(fast[0], fast[1])  # two images, two answers


def test_resnet_nhwc_computes_what_nchw_does():
    """The NHWC network with the NCHW one's weights transposed (OIHW -> HWIO), on the
    transposed image: the same classes' scores (the CIFAR net: its zero-padded
    shortcuts too)."""
    mod, params = relay.testing.create_workload(resnet.get_net(2, 10, 20, image_shape=(3, 32, 32)), _Spread(2))
    nhwc = resnet.get_net(2, 10, 20, image_shape=(32, 32, 3), layout="NHWC")
    hwio = {k: (v.numpy().transpose(2, 3, 1, 0) if v.ndim == 4 else v.numpy()) for k, v in params.items()}
    data = np.random.default_rng(2).uniform(-1, 1, (2, 3, 32, 32)).astype("float32")
    want = _build_run(mod, params, data, 3)
    got = _build_run(relay.Module.from_expr(nhwc), hwio, data.transpose(0, 2, 3, 1).copy(), 3)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-7)


def test_mlp_against_numpy():
    mod, params = relay.testing.create_workload(mlp.get_net(3, num_classes=5, image_shape=(2, 7, 7)), _Spread())
    data = np.random.default_rng(4).standard_normal((3, 2, 7, 7)).astype("float32")
    got = _build_run(mod, params, data, 3)
    p = {k: v.numpy().astype("float64") for k, v in params.items()}
    x = data.reshape(3, -1).astype("float64")
    x = np.maximum(x @ p["fc1_weight"].T + p["fc1_bias"], 0)
    x = np.maximum(x @ p["fc2_weight"].T + p["fc2_bias"], 0)
    x = x @ p["fc3_weight"].T + p["fc3_bias"]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-7)


# ---------------------------------------------------------------------------------------
# user errors
# ---------------------------------------------------------------------------------------
def test_bad_layouts_are_refused_naming_the_argument_and_what_works():
    with pytest.raises(GraphError, match=r"resnet: layout='HWCN' is not supported; .* 'NCHW' or 'NHWC'"):
        resnet.get_workload(layout="HWCN")
    with pytest.raises(GraphError, match=r"mobilenet: layout='NHWC' is not supported; .* 'NCHW'"):
        mobilenet.get_workload(layout="NHWC", image_shape=(224, 224, 3))
    with pytest.raises(GraphError, match=r"data_layout of a depthwise \(grouped\) convolution='NHWC' is not supported"):
        layers.conv_kernel_layout("NHWC", is_depthwise=True)


def test_bad_depths_versions_and_sizes_are_refused():
    with pytest.raises(GraphError, match=r"num_layers=19 is not one of \[18, 34, 50, 101, 152\]"):
        resnet.get_workload(num_layers=19)
    with pytest.raises(GraphError, match=r"num_layers=18 is not a CIFAR depth \(6n \+ 2"):
        resnet.get_net(1, 10, 18, image_shape=(3, 32, 32))
    with pytest.raises(GraphError, match=r"vgg: num_layers=12 is not one of \[11, 13, 16, 19\]"):
        vgg.get_workload(1, num_layers=12)
    with pytest.raises(GraphError, match=r"squeezenet: version='1.2' is not one of \['1.0', '1.1'\]"):
        squeezenet.get_workload(version="1.2")
    with pytest.raises(GraphError, match=r"inception_v3: image_shape \(3, 64, 64\) is smaller than 75x75"):
        inception_v3.get_workload(image_shape=(3, 64, 64))
    with pytest.raises(GraphError, match=r"mlp: batch_size must be a positive int, got 0"):
        mlp.get_workload(0)
    with pytest.raises(GraphError, match=r"resnet: unknown argument\(s\) \['depth'\]"):
        resnet.get_workload(depth=18)


def test_initializer_errors():
    with pytest.raises(GraphError, match=r"parameter 'scale_factor' has no known role; its name must end with"):
        init.Xavier()("scale_factor", np.zeros(3), np.random.default_rng(0))
    with pytest.raises(GraphError, match=r"Xavier: factor_type='fan' is not one of 'avg', 'in', 'out'"):
        init.Xavier(factor_type="fan")
    with pytest.raises(GraphError, match=r"weight 'v_weight' has shape \(3,\); it needs at least 2 axes"):
        init.Xavier()("v_weight", np.zeros(3), np.random.default_rng(0))


def test_relay_builders_take_tvms_keywords_and_index_tuples():
    """What TVM's network code writes: operands by keyword, ``batch_norm(...)[0]``,
    ``dropout`` giving the data."""
    from tecc.graph import GraphError
    from tecc.graph.transform import infer_type

    x = relay.var("data", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    y = relay.nn.conv2d(data=x, weight=w, padding=(1, 1))
    g, b, m, v = (relay.var(n, shape=(4,)) for n in ("g", "b", "m", "v"))
    bn = relay.nn.batch_norm(y, g, b, m, v)
    z = relay.nn.dropout(relay.nn.relu(data=bn[0]), rate=0.5)
    mod = infer_type(relay.Module.from_expr(relay.Function(relay.analysis.free_vars(z), z)))
    assert mod["main"].body.checked_type.shape == (1, 4, 8, 8)
    assert relay.nn.dropout_raw(x).op.name == "nn.dropout" and bn.astuple() is bn
    assert relay.add(lhs=x, rhs=relay.const(1.0)).op.name == "add"
    with pytest.raises(GraphError, match="operand 'data' given by position and by name"):
        relay.nn.relu(x, data=x)
    with pytest.raises(GraphError, match=r"operand 'weight' given without the ones before it \(data\)"):
        relay.nn.conv2d(weight=w)
    with pytest.raises(TypeError, match="is not iterable; take its fields by index"):
        list(bn)
    relu = mod["main"].body.tuple_value.args[0]
    typed = relu.args[0].tuple_value  # the typed batch_norm call
    with pytest.raises(IndexError, match="returns 3 fields; there is no field 3"):
        typed[3]
    with pytest.raises(GraphError, match="returns one tensor, not a tuple"):
        relu[0]


def test_untyped_vars_take_the_types_their_operators_imply():
    """relay.var("weight") with no shape, as TVM code writes it: the convolution's
    channels and kernel_size, the dense's units and the batch norm's axis tell it."""
    from tecc.graph.transform import infer_type

    data = relay.var("data", relay.TensorType((1, 3, 10, 10), "float32"))
    w, g, b, m, v = (relay.var(n) for n in ("weight", "gamma", "beta", "mean", "var"))
    y = relay.nn.conv2d(data=data, weight=w, kernel_size=(3, 3), channels=6, padding=(1, 1))
    y = relay.nn.relu(relay.nn.batch_norm(y, g, b, m, v)[0])
    y = relay.nn.bias_add(relay.nn.dense(relay.nn.batch_flatten(y), relay.var("fc_weight"), units=4), relay.var("fc_bias"))
    net = relay.Function(relay.analysis.free_vars(y), y)
    mod, params = relay.testing.create_workload(net)
    shapes = {p.name_hint: tuple(p.type_annotation.shape) for p in mod["main"].params}
    assert shapes == {"data": (1, 3, 10, 10), "weight": (6, 3, 3, 3), "gamma": (6,), "beta": (6,), "mean": (6,),
                      "var": (6,), "fc_weight": (4, 600), "fc_bias": (4,)}
    with tvm.transform.PassContext(opt_level=3):
        lib = relay.build(mod, target="llvm", params=params)
    m_ = graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    m_.set_input("data", np.ones((1, 3, 10, 10), "float32"))
    m_.run()
    assert m_.get_output(0).numpy().shape == (1, 4)
    # an operator that cannot tell the shape says which input and where
    u = relay.var("u")
    with pytest.raises(GraphError, match=r"input %u has no type and add cannot tell its shape .* relay.var\(name, "
                                         r"shape=...\)"):
        infer_type(relay.add(data, u))
    with pytest.raises(GraphError, match=r"input %k has no type and nn.conv2d cannot tell"):
        infer_type(relay.nn.conv2d(data, relay.var("k"), padding=(1, 1)))  # no channels/kernel_size given


def test_create_workload_seeds_numpy_as_tvm_does():
    """TVM scripts draw their data with np.random after create_workload and compare
    two builds' outputs: the draws must repeat."""
    net = mlp.get_net(1, 10, (1, 8, 8), "float32")
    relay.testing.create_workload(net)
    first = np.random.uniform(size=4)
    relay.testing.create_workload(net)
    np.testing.assert_array_equal(np.random.uniform(size=4), first)

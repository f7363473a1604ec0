"""ONNX control flow -- If, Loop, Scan -- and sequences and optionals, resolved when
importing: a branch chosen by a condition known when compiling, or both computed
and selected; loops unrolled over a trip count known when compiling, a condition
computed at run time freezing the loop-carried values; sequences held as tuples
of tensors, graph inputs and outputs of sequence type one tensor each.  Small
models made with ``onnx.helper``, built for "llvm" (and "cuda": a GPU, or the
emulator) and compared with onnxruntime; then every error a user can meet."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from tecc.graph.frontend import OnnxImportError, from_onnx  # noqa: E402
from tecc.graph.frontend.onnx.convert_control import UNROLL_LIMIT  # noqa: E402
from tecc.graph.frontend.onnx_backend import TeccBackend  # noqa: E402
from ops_run import tecc_outputs  # noqa: E402

F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64


def info(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name))


def model(nodes, inputs, outputs, opset=17):
    graph = helper.make_graph(nodes, "control", inputs, outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def reference(m, feed):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


def check(m, feed, target="llvm", rtol=1e-5, atol=1e-6):
    want = reference(m, feed)
    got = tecc_outputs(m, feed, target=target)
    assert len(got) == len(want)
    for k, (t, w) in enumerate(zip(got, want)):
        assert t.shape == w.shape and t.dtype == w.dtype, f"output {k}: {t.dtype}{t.shape}, ort {w.dtype}{w.shape}"
        np.testing.assert_allclose(t, w, rtol=rtol, atol=atol, err_msg=f"output {k}")


def rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype("float32")


# ---------------------------------------------------------------------------------------
# If
# ---------------------------------------------------------------------------------------
def if_model(then_nodes, then_out, else_nodes, else_out, out_shape=(2, 3)):
    then_g = helper.make_graph(then_nodes, "then_g", [], [info(then_out, F, None)])
    else_g = helper.make_graph(else_nodes, "else_g", [], [info(else_out, F, None)])
    nodes = [helper.make_node("If", ["c"], ["y"], name="choose", then_branch=then_g, else_branch=else_g)]
    return model(nodes, [info("c", B, []), info("x", F, [2, 3])], [info("y", F, None if out_shape is None else list(out_shape))])


def test_if_on_a_run_time_condition_computes_both_branches_and_selects():
    # the branches read the outer scope's x; one compilation serves both values of c
    m = if_model([const("two", np.float32(2)), helper.make_node("Mul", ["x", "two"], ["t"])], "t",
                 [const("one", np.float32(1)), helper.make_node("Sub", ["x", "one"], ["e"])], "e")
    x = rand(2, 3)
    rep = TeccBackend.prepare(m, "CPU")
    assert list(rep.bound_inputs) == []  # nothing compiled in
    for c in (True, False):
        got = rep.run({"c": np.array(c), "x": x})[0]
        np.testing.assert_allclose(got, x * 2 if c else x - 1, rtol=1e-6)
        check(m, {"c": np.array(c), "x": x})
    check(m, {"c": np.array(False), "x": x}, target="cuda")


def test_if_on_a_condition_known_when_compiling_converts_only_its_branch():
    # the condition is a shape test (as in AffineGrid's function body); the other branch
    # reshapes to a size x does not have, which tecc would refuse if it converted it
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then_g", [], [info("t", F, None)])
    bad = [const("shape", np.array([7], np.int64)), helper.make_node("Reshape", ["x", "shape"], ["e"])]
    else_g = helper.make_graph(bad, "else_g", [], [info("e", F, None)])
    nodes = [helper.make_node("Size", ["x"], ["n"]), const("six", np.int64(6)),
             helper.make_node("Equal", ["n", "six"], ["is6"]),
             helper.make_node("If", ["is6"], ["y"], name="choose", then_branch=then_g, else_branch=else_g)]
    m = model(nodes, [info("x", F, [2, 3])], [info("y", F, [2, 3])])
    x = rand(2, 3)
    np.testing.assert_array_equal(tecc_outputs(m, {"x": x})[0], -x)
    mod, _ = from_onnx(m)
    assert "where" not in str(mod["main"])


def test_if_whose_branches_differ_in_shape_needs_the_condition_when_compiling():
    m = if_model([helper.make_node("Identity", ["x"], ["t"])], "t",
                 [const("shape", np.array([6], np.int64)), helper.make_node("Reshape", ["x", "shape"], ["e"])], "e",
                 out_shape=None)
    with pytest.raises(OnnxImportError, match=r"If node 'choose': the condition \(output 0 of its branches has "
                                              r"shapes \(2, 3\) and \(6,\), so its shape depends on it\) is computed "
                                              r"by the model at run time") as err:
        from_onnx(m)
    assert err.value.operands == ["c"]
    # the ONNX backend binds it at the first run (a compilation per value of c)
    x = rand(2, 3)
    rep = TeccBackend.prepare(m, "CPU")
    assert rep.run({"c": np.array(True), "x": x})[0].shape == (2, 3)
    assert rep.run({"c": np.array(False), "x": x})[0].shape == (6,)
    assert list(rep.bound_inputs) == ["c"]


def test_if_branches_of_different_dtypes_are_refused():
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then_g", [], [info("t", F, None)])
    else_g = helper.make_graph([helper.make_node("Cast", ["x"], ["e"], to=TensorProto.DOUBLE)], "else_g", [],
                               [info("e", TensorProto.DOUBLE, None)])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["y"], name="choose", then_branch=then_g,
                                                else_branch=else_g)], "m",
                              [info("c", B, []), info("x", F, [2])], [info("y", F, [2])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match=r"If node 'choose': output 0 is float32 in the then branch and "
                                              r"float64 in the else branch"):
        from_onnx(m)


# ---------------------------------------------------------------------------------------
# Loop
# ---------------------------------------------------------------------------------------
def loop_body(nodes, extra_outputs=()):
    """A body (i, cond, acc) -> (cond, acc', *extra)."""
    return helper.make_graph(
        nodes, "body", [info("i", I64, []), info("cond_in", B, []), info("acc", F, [3])],
        [info("cond_out", B, []), info("acc_out", F, [3])] + [info(n, F, [3]) for n in extra_outputs])


def test_loop_unrolls_over_its_trip_count_with_scan_outputs_and_outer_values():
    # acc' = acc * w + i (w from the outer scope), and acc' stacked as a scan output
    body = loop_body([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                      helper.make_node("Cast", ["i"], ["fi"], to=F),
                      helper.make_node("Mul", ["acc", "w"], ["aw"]),
                      helper.make_node("Add", ["aw", "fi"], ["acc_out"]),
                      helper.make_node("Identity", ["acc_out"], ["scan"])], ["scan"])
    nodes = [const("m", np.int64(4)), const("t", np.array(True)),
             helper.make_node("Loop", ["m", "t", "x"], ["final", "all"], name="steps", body=body)]
    m = model(nodes, [info("x", F, [3]), info("w", F, [3])], [info("final", F, [3]), info("all", F, [4, 3])])
    feed = {"x": rand(3), "w": rand(3, seed=1)}
    check(m, feed)
    check(m, feed, target="cuda")


def test_a_loop_condition_computed_at_run_time_freezes_the_values_once_false():
    # while sum(acc) < limit and i < 8: acc = acc * 2 -- how many iterations run depends on the data
    body = loop_body([helper.make_node("Add", ["acc", "acc"], ["acc_out"]),
                      helper.make_node("ReduceSum", ["acc_out"], ["s"], keepdims=0),
                      helper.make_node("Less", ["s", "limit"], ["cond_out"])])
    nodes = [const("m", np.int64(8)), helper.make_node("ReduceSum", ["x"], ["s0"], keepdims=0),
             helper.make_node("Less", ["s0", "limit"], ["go"]),
             helper.make_node("Loop", ["m", "go", "x"], ["final"], name="grow", body=body)]
    m = model(nodes, [info("x", F, [3]), info("limit", F, [])], [info("final", F, [3])])
    rep = TeccBackend.prepare(m, "CPU")
    x = np.array([0.5, 1.0, 0.25], "float32")
    for limit in (0.0, 2.0, 30.0, 1e9):  # 0, 1, 5 and all 8 iterations
        feed = {"x": x, "limit": np.array(limit, "float32")}
        np.testing.assert_allclose(rep.run(feed)[0], reference(m, feed)[0], rtol=1e-6)
    assert list(rep.bound_inputs) == []


def test_a_loop_with_scan_outputs_needs_its_condition_when_compiling():
    body = loop_body([helper.make_node("Add", ["acc", "acc"], ["acc_out"]),
                      helper.make_node("ReduceSum", ["acc_out"], ["s"], keepdims=0),
                      helper.make_node("Less", ["s", "limit"], ["cond_out"]),
                      helper.make_node("Identity", ["acc_out"], ["scan"])], ["scan"])
    nodes = [const("m", np.int64(3)), const("t", np.array(True)),
             helper.make_node("Loop", ["m", "t", "x"], ["final", "all"], name="grow", body=body)]
    m = model(nodes, [info("x", F, [3]), info("limit", F, [])], [info("final", F, [3]), info("all", F, None)])
    with pytest.raises(OnnxImportError, match=r"Loop node 'grow': the condition its body gives in iteration 0 \(the "
                                              r"loop has scan outputs, whose length depends on it\) is computed by the "
                                              r"model at run time"):
        from_onnx(m)


def test_a_loop_without_trip_count_ends_when_its_known_condition_does():
    # for i while i < 5 (no M): the condition is known at every iteration
    body = loop_body([const("five", np.int64(4)), helper.make_node("Less", ["i", "five"], ["cond_out"]),
                      helper.make_node("Add", ["acc", "acc"], ["acc_out"])])
    nodes = [const("t", np.array(True)), helper.make_node("Loop", ["", "t", "x"], ["final"], name="w", body=body)]
    m = model(nodes, [info("x", F, [3])], [info("final", F, [3])])
    check(m, {"x": rand(3)})


def test_a_loop_that_cannot_be_unrolled_is_refused_with_its_sizes():
    body = loop_body([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                      helper.make_node("Add", ["acc", "acc"], ["acc_out"])])
    nodes = [const("m", np.int64(UNROLL_LIMIT)), const("t", np.array(True)),
             helper.make_node("Loop", ["m", "t", "x"], ["final"], name="long", body=body)]
    m = model(nodes, [info("x", F, [3])], [info("final", F, [3])])
    with pytest.raises(OnnxImportError, match=rf"Loop node 'long': tecc unrolls a Loop when importing it, and "
                                              rf"{UNROLL_LIMIT} iterations of its 2-node body would be "
                                              rf"{2 * UNROLL_LIMIT} operators \(at most {UNROLL_LIMIT}\)"):
        from_onnx(m)
    # no trip count and a run-time condition: nothing bounds it
    body = loop_body([helper.make_node("ReduceSum", ["acc"], ["s"], keepdims=0),
                      helper.make_node("Less", ["s", "limit"], ["cond_out"]),
                      helper.make_node("Add", ["acc", "acc"], ["acc_out"])])
    nodes = [helper.make_node("Loop", ["", "go", "x"], ["final"], name="open", body=body)]
    m = model(nodes, [info("x", F, [3]), info("go", B, []), info("limit", F, [])], [info("final", F, [3])])
    with pytest.raises(OnnxImportError, match=r"Loop node 'open': it has no trip count and its condition is computed "
                                              r"at run time"):
        from_onnx(m)


def test_a_body_node_error_names_the_iteration():
    # the body reshapes 3 elements to 2x2: the error names the node inside the body, and the iteration
    body = loop_body([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                      const("shape", np.array([2, 2], np.int64)),
                      helper.make_node("Reshape", ["acc", "shape"], ["bad"]),
                      helper.make_node("Identity", ["acc"], ["acc_out"])])
    nodes = [const("m", np.int64(2)), const("t", np.array(True)),
             helper.make_node("Loop", ["m", "t", "x"], ["final"], name="steps", body=body)]
    graph = helper.make_graph(nodes, "m", [info("x", F, [3])], [info("final", F, [3])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match=r"Reshape node 'steps/body \(iteration 0\)/Reshape_2'"):
        from_onnx(m)


def test_an_operator_tecc_lacks_inside_a_body_is_reported_before_converting():
    inner = helper.make_graph([helper.make_node("StringNormalizer", ["x"], ["u"], name="words")], "then_g", [],
                              [info("u", F, None)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else_g", [], [info("e", F, None)])
    graph = helper.make_graph([helper.make_node("If", ["c"], ["y"], name="choose", then_branch=inner,
                                                else_branch=other)], "m",
                              [info("c", B, []), info("x", F, [3])], [info("y", F, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match=r"operators tecc does not support \(StringNormalizer\): StringNormalizer "
                                              r"in node 'words'"):
        from_onnx(m)


def test_the_backend_binds_a_trip_count_computed_from_inputs():
    # ONNX's Range function body: the trip count is ceil((limit - start) / delta), from inputs
    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                              helper.make_node("Add", ["prev", "delta"], ["cur"]),
                              helper.make_node("Identity", ["prev"], ["out"])], "body",
                             [info("i", I64, []), info("cond_in", B, []), info("prev", F, [])],
                             [info("cond_out", B, []), info("cur", F, []), info("out", F, [])])
    nodes = [helper.make_node("Sub", ["limit", "start"], ["d"]), helper.make_node("Div", ["d", "delta"], ["q"]),
             helper.make_node("Ceil", ["q"], ["n"]), helper.make_node("Cast", ["n"], ["m"], to=I64),
             const("t", np.array(True)),
             helper.make_node("Loop", ["m", "t", "start"], ["last", "range"], name="range", body=body)]
    m = model(nodes, [info("start", F, []), info("limit", F, []), info("delta", F, [])],
              [info("last", F, []), info("range", F, None)])
    with pytest.raises(OnnxImportError, match="the trip count M") as err:
        from_onnx(m)
    assert err.value.operands == ["m"]
    rep = TeccBackend.prepare(m, "CPU")
    feed = {"start": np.array(1, "float32"), "limit": np.array(3, "float32"), "delta": np.array(0.5, "float32")}
    np.testing.assert_allclose(rep.run(feed)[1], [1, 1.5, 2, 2.5])
    assert sorted(rep.bound_inputs) == ["delta", "limit", "start"]


# ---------------------------------------------------------------------------------------
# Scan
# ---------------------------------------------------------------------------------------
def test_scan_with_axes_and_directions_matches_onnxruntime():
    # two states (a running sum and a running max), two scan inputs read along axis 1,
    # the second backwards; two scan outputs, one stacked on axis 1 and reversed
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "a"], ["s2"]), helper.make_node("Max", ["mx", "b"], ["mx2"]),
         helper.make_node("Mul", ["s2", "mx2"], ["o1"]), helper.make_node("Sub", ["a", "b"], ["o2"])],
        "step", [info("s", F, [2]), info("mx", F, [2]), info("a", F, [2]), info("b", F, [2])],
        [info("s2", F, [2]), info("mx2", F, [2]), info("o1", F, [2]), info("o2", F, [2])])
    node = helper.make_node("Scan", ["s0", "m0", "xa", "xb"], ["s", "mx", "y1", "y2"], name="scan", body=body,
                            num_scan_inputs=2, scan_input_axes=[1, 1], scan_input_directions=[0, 1],
                            scan_output_axes=[0, 1], scan_output_directions=[0, 1])
    m = model([node], [info("s0", F, [2]), info("m0", F, [2]), info("xa", F, [2, 5]), info("xb", F, [2, 5])],
              [info("s", F, [2]), info("mx", F, [2]), info("y1", F, [5, 2]), info("y2", F, [2, 5])])
    feed = {"s0": rand(2), "m0": rand(2, seed=1), "xa": rand(2, 5, seed=2), "xb": rand(2, 5, seed=3)}
    check(m, feed)
    check(m, feed, target="cuda")


def test_scan_inputs_of_different_lengths_are_refused():
    body = helper.make_graph([helper.make_node("Add", ["a", "b"], ["o"]), helper.make_node("Identity", ["s"], ["s2"])],
                             "step", [info("s", F, [2]), info("a", F, [2]), info("b", F, [2])],
                             [info("s2", F, [2]), info("o", F, [2])])
    node = helper.make_node("Scan", ["s0", "xa", "xb"], ["s", "y"], name="scan", body=body, num_scan_inputs=2)
    graph = helper.make_graph([node], "m", [info("s0", F, [2]), info("xa", F, [3, 2]), info("xb", F, [4, 2])],
                              [info("s", F, [2]), info("y", F, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match=r"Scan node 'scan': its scan inputs have different lengths along their "
                                              r"scan axes \(\[3, 4\]\)"):
        from_onnx(m)


def test_scan_8_scans_each_batch_entry():
    # opset 8: a batch axis first on every input, the sequence on axis 1, sequence_lens left out
    body = helper.make_graph([helper.make_node("Add", ["s", "a"], ["s2"]), helper.make_node("Mul", ["s2", "a"], ["o"])],
                             "step", [info("s", F, [2]), info("a", F, [2])], [info("s2", F, [2]), info("o", F, [2])])
    node = helper.make_node("Scan", ["", "s0", "xa"], ["s", "y"], name="scan", body=body, num_scan_inputs=1,
                            directions=[1])
    m = model([node], [info("s0", F, [3, 2]), info("xa", F, [3, 4, 2])], [info("s", F, [3, 2]), info("y", F, [3, 4, 2])],
              opset=8)
    check(m, {"s0": rand(3, 2), "xa": rand(3, 4, 2, seed=1)})
    # sequence_lens shorter than the sequence is refused
    node = helper.make_node("Scan", ["lens", "s0", "xa"], ["s", "y"], name="scan", body=body, num_scan_inputs=1)
    lens = helper.make_node("Constant", [], ["lens"], value=numpy_helper.from_array(np.array([4, 2, 4], np.int32)))
    m = model([lens, node], [info("s0", F, [3, 2]), info("xa", F, [3, 4, 2])],
              [info("s", F, [3, 2]), info("y", F, [3, 4, 2])], opset=8)
    with pytest.raises(OnnxImportError, match=r"Scan node 'scan': sequence_lens \[4, 2, 4\] shortens sequences of "
                                              r"length \[4\]; tecc scans whole sequences"):
        from_onnx(m)


# ---------------------------------------------------------------------------------------
# sequences and optionals
# ---------------------------------------------------------------------------------------
def test_a_sequence_built_and_read_inside_the_model_leaves_only_tensors():
    # SplitToSequence, SequenceInsert / At / Erase / Length, ConcatFromSequence: no kernel sees a sequence
    nodes = [helper.make_node("SplitToSequence", ["x", "two"], ["s"], axis=1),   # chunks of 2, 2 and 1 columns
             helper.make_node("SequenceLength", ["s"], ["n"]),
             helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Slice", ["r", "zero_1d", "two_1d", "one_1d"], ["r2"]),    # columns 0..1
             helper.make_node("SequenceInsert", ["s", "r2", "zero"], ["s2"]),
             helper.make_node("SequenceErase", ["s2", "minus1"], ["s3"]),            # drops the 1-column chunk
             helper.make_node("SequenceAt", ["s3", "one"], ["first_chunk"]),
             helper.make_node("ConcatFromSequence", ["s3"], ["cat"], axis=1),
             helper.make_node("ConcatFromSequence", ["s3"], ["stacked"], axis=0, new_axis=1)]
    inits = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (
        ("two", 2), ("zero", 0), ("one", 1), ("minus1", -1), ("zero_1d", [0]), ("one_1d", [1]), ("two_1d", [2]))]
    graph = helper.make_graph(nodes, "seq", [info("x", F, [3, 5])],
                              [info("n", I64, []), info("first_chunk", F, [3, 2]), info("cat", F, [3, 6]),
                               info("stacked", F, [3, 3, 2])], initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    check(m, {"x": rand(3, 5)})
    mod, _ = from_onnx(m)
    assert list(mod["main"].attrs["onnx_outputs"]) == ["tensor"] * 4


def test_sequence_inputs_and_outputs_are_one_tensor_each():
    # a sequence input of three tensors, and a sequence output
    nodes = [helper.make_node("SequenceAt", ["xs", "last"], ["tail"]),
             helper.make_node("SequenceInsert", ["xs", "y"], ["more"])]
    seq_in = helper.make_tensor_sequence_value_info("xs", F, ["n"])
    seq_out = helper.make_tensor_sequence_value_info("more", F, ["n"])
    graph = helper.make_graph(nodes, "seqio", [seq_in, info("y", F, [2])], [info("tail", F, ["n"]), seq_out],
                              initializer=[numpy_helper.from_array(np.array(-1, np.int64), "last")])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    with pytest.raises(OnnxImportError, match=r"input 'xs' is a sequence; tecc compiles its length and shapes: pass "
                                              r"shape=\{'xs': \[shape of each tensor, ...\]\}"):
        from_onnx(m)
    mod, _ = from_onnx(m, shape={"xs": [(2,), (3,), (2,)]})
    main = mod["main"]
    assert [p.name_hint for p in main.params] == ["xs[0]", "xs[1]", "xs[2]", "y"]
    assert list(main.attrs["output_names"]) == ["tail", "more[0]", "more[1]", "more[2]", "more[3]"]
    # the ONNX backend compiles per length and shapes, and gives the sequence back as a list
    rep = TeccBackend.prepare(m, "CPU")
    xs = [rand(2), rand(3, seed=1), rand(2, seed=2)]
    y = rand(2, seed=3)
    tail, more = rep.run({"xs": xs, "y": y})
    np.testing.assert_array_equal(tail, xs[-1])
    assert isinstance(more, list) and len(more) == 4
    for got, want in zip(more, xs + [y]):
        np.testing.assert_array_equal(got, want)
    tail, more = rep.run({"xs": xs[:1], "y": y})  # another length: compiled again
    assert len(more) == 2 and len(rep._compiled) == 2


def test_a_loop_that_builds_a_sequence_and_a_chosen_optional():
    # ONNX's loop13_seq: the body appends x[:i+1] to the carried sequence; an If picks an optional
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), const("one", np.array([1], np.int64)),
         const("zero", np.array([0], np.int64)), helper.make_node("Unsqueeze", ["i", "zero"], ["i1"]),
         helper.make_node("Add", ["i1", "one"], ["end"]), helper.make_node("Slice", ["x", "zero", "end"], ["head"]),
         helper.make_node("SequenceInsert", ["seq_in", "head"], ["seq_out"])],
        "body", [info("i", I64, []), info("cond_in", B, []), helper.make_tensor_sequence_value_info("seq_in", F, None)],
        [info("cond_out", B, []), helper.make_tensor_sequence_value_info("seq_out", F, None)])
    nodes = [const("m", np.int64(3)), const("t", np.array(True)),
             helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
             helper.make_node("Loop", ["m", "t", "empty"], ["heads"], name="grow", body=body),
             helper.make_node("ConcatFromSequence", ["heads"], ["y"], axis=0)]
    m = model(nodes, [info("x", F, [4])], [info("y", F, [6])])
    check(m, {"x": rand(4)})
    # a sequence picked by a condition computed at run time is compiled per value of the condition
    then_g = helper.make_graph([helper.make_node("SequenceConstruct", ["x"], ["a"])], "then_g", [],
                               [helper.make_tensor_sequence_value_info("a", F, None)])
    else_g = helper.make_graph([helper.make_node("SequenceConstruct", ["x", "x"], ["b"])], "else_g", [],
                               [helper.make_tensor_sequence_value_info("b", F, None)])
    nodes = [helper.make_node("If", ["c"], ["s"], name="pick", then_branch=then_g, else_branch=else_g),
             helper.make_node("SequenceLength", ["s"], ["n"])]
    m = model(nodes, [info("c", B, []), info("x", F, [4])], [info("n", I64, [])])
    with pytest.raises(OnnxImportError, match=r"If node 'pick': the condition \(output 0 of its branches is a sequence "
                                              r"of 1 float32 tensor\(s\) and a sequence of 2 float32 tensor\(s\), "
                                              r"which tecc chooses between only when compiling\) is computed"):
        from_onnx(m)
    rep = TeccBackend.prepare(m, "CPU")
    assert int(rep.run({"c": np.array(True), "x": rand(4)})[0]) == 1
    assert int(rep.run({"c": np.array(False), "x": rand(4)})[0]) == 2


def test_optionals_have_their_element_or_nothing():
    nodes = [helper.make_node("Optional", ["x"], ["o"]), helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("OptionalGetElement", ["o"], ["back"]),
             helper.make_node("Optional", [], ["none"], type=helper.make_tensor_type_proto(F, [2])),
             helper.make_node("OptionalHasElement", ["none"], ["has_none"])]
    m = model(nodes, [info("x", F, [2])], [info("has", B, []), info("back", F, [2]), info("has_none", B, [])],
              opset=18)
    check(m, {"x": rand(2)})
    nodes = [helper.make_node("Optional", [], ["none"], type=helper.make_tensor_type_proto(F, [2])),
             helper.make_node("OptionalGetElement", ["none"], ["y"], name="get")]
    m = model(nodes, [info("x", F, [2])], [info("y", F, [2])], opset=18)
    with pytest.raises(OnnxImportError, match=r"OptionalGetElement node 'get': the optional is empty"):
        from_onnx(m)


@pytest.mark.parametrize("op, ins, attrs, match", [
    ("SequenceAt", ["s", "five"], {}, r"SequenceAt node 'bad': position 5 is out of range for a sequence of length 2 "
                                      r"\(valid: -2..1\)"),
    ("SequenceInsert", ["s", "i"], {}, r"SequenceInsert node 'bad': the tensor is int64; the sequence holds float32"),
    ("Relu", ["s"], {}, r"Relu node 'bad': an operand is a sequence of 2 float32 tensor\(s\), where a tensor is "
                        r"needed"),
    ("SplitToSequence", ["x", "bad_split"], {}, r"SplitToSequence node 'bad': split \[1, 1\] must be non-negative "
                                                r"and sum to the axis' length 4"),
])
def test_sequence_errors_name_the_node(op, ins, attrs, match):
    nodes = [helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
             helper.make_node(op, ins, ["y"], name="bad", **attrs)]
    inits = [numpy_helper.from_array(np.array(5, np.int64), "five"), numpy_helper.from_array(np.array([3], np.int64), "i"),
             numpy_helper.from_array(np.array([1, 1], np.int64), "bad_split")]
    graph = helper.make_graph(nodes, "m", [info("x", F, [4])], [info("y", F, None)], initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match=match):
        from_onnx(m)


def test_a_branch_that_does_not_import_needs_the_condition_when_compiling():
    # the else branch reshapes (2, 3) to 7 elements; with c computed at run time tecc cannot
    # leave it out, so it asks for c -- the ONNX backend binds it and imports the branch taken
    bad = [const("shape", np.array([7], np.int64)), helper.make_node("Reshape", ["x", "shape"], ["e"])]
    m = if_model([helper.make_node("Neg", ["x"], ["t"])], "t", bad, "e")
    with pytest.raises(OnnxImportError, match=r"If node 'choose': the condition \(its else branch does not import: "
                                              r"Reshape node 'choose/else_g \(else\)/Reshape_1'.*\) is computed by the "
                                              r"model at run time"):
        from_onnx(m)
    x = rand(2, 3)
    rep = TeccBackend.prepare(m, "CPU")
    np.testing.assert_array_equal(rep.run({"c": np.array(True), "x": x})[0], -x)


def test_a_loop_without_trip_count_whose_body_condition_is_computed_at_run_time_is_refused():
    # the initial condition is known, the body's is not: nothing bounds the iterations
    body = loop_body([helper.make_node("Add", ["acc", "acc"], ["acc_out"]),
                      helper.make_node("ReduceSum", ["acc_out"], ["s"], keepdims=0),
                      helper.make_node("Less", ["s", "limit"], ["cond_out"])])
    nodes = [const("t", np.array(True)), helper.make_node("Loop", ["", "t", "x"], ["final"], name="open", body=body)]
    m = model(nodes, [info("x", F, [3]), info("limit", F, [])], [info("final", F, [3])])
    with pytest.raises(OnnxImportError, match=r"Loop node 'open': it has no trip count and the condition its body "
                                              r"gives in iteration 0 is computed at run time"):
        from_onnx(m)

"""ONNX's node conformance cases run on tecc, and the report of the results.

The cases are generated offline by the onnx package
(``onnx.backend.test.case.node.collect_testcases``: a model of one operator --
or of its function expansion, ``*_expanded`` -- with input and expected output
data).  Each case is run through :class:`tecc.graph.frontend.onnx_backend.TeccBackend`
and classified:

``pass``
    every output has the expected shape and dtype and matches within
    ``rtol = max(case.rtol, 1e-3)``, ``atol = max(case.atol, 1e-4)`` (onnx's
    own per-case tolerance where it is looser; bfloat16 outputs within two of its
    ulps, ``rtol`` of at least 2**-6, as onnx's runner compares them);
``unsupported``
    an operator of the case is not in the importer's converter table, or the
    importer refuses the model with an ``OnnxImportError`` (an attribute, dtype,
    opset or run-time-computed operand tecc does not support) -- with the reason;
``fail``
    anything else: wrong numbers, shapes or dtypes, or an error while compiling
    or running.

Run as a script it runs every case on the C backend (``"llvm"``) and one case per
operator on the CUDA-semantics path (``"cuda"``: a GPU, or tecc's emulator) and
writes ``tests/graph/onnx_conformance.md``::

    python tests/graph/onnx_conformance_report.py [--jobs N] [--output PATH]

``tests/graph/test_onnx_conformance.py`` imports this module for the same
collection and checks.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import functools
import os
import re
import sys
import time
import traceback
import warnings

import numpy as np

from ops_run import assert_outputs_match  # next to this file (on sys.path as a script and under pytest)

#: the tolerance every case gets at least (onnx's own is used where it is looser)
RTOL, ATOL = 1e-3, 1e-4

#: where the report is written
REPORT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx_conformance.md")


#: the diagnosed causes of the cases that fail (see KNOWN_FAILING): cause -> what is wrong.  (The max/min
#: reductions' and float16's failures were fixed: they start from -inf/+inf, and accumulate in float32.)
FAILURE_REASONS = {
    "maxunpool_output_shape": (
        "a deliberate divergence: with output_shape given, tecc counts MaxUnpool's indices in that shape, as "
        "onnxruntime and torch do (an odd-sized input pooled with its indices unpools to its own size); ONNX's "
        "reference counts them in the shape the kernel implies and pads it (onnx/onnx#2398, onnxruntime PR #2193)"),
    "random_numbers": (
        "random numbers, by design not numpy's: the expected outputs come from numpy's generator, tecc draws with "
        "Threefry-2x64-20 (the distributions are checked in tests/graph/test_onnx_random.py); onnxruntime, with "
        "a generator of its own, skips these cases too"),
}
#: cause -> the cases it makes fail on the C backend (found by a full run of this script); CI runs the first
#: of each (a case whose node has a seed: the others draw a new seed at each import)
KNOWN_FAILING = {
    "maxunpool_output_shape": ["test_maxunpool_export_with_output_shape"],
    "random_numbers": ["test_bernoulli_seed", "test_bernoulli", "test_bernoulli_double",
                       "test_bernoulli_double_expanded", "test_bernoulli_expanded", "test_bernoulli_seed_expanded", "test_training_dropout",
                       "test_training_dropout_default", "test_training_dropout_default_mask",
                       "test_training_dropout_mask"],
}

#: every case that fails on the C backend (the report's full run), with what is wrong
KNOWN_FAILURES = {name: FAILURE_REASONS[kind] for kind, names in KNOWN_FAILING.items() for name in names}


@dataclasses.dataclass(frozen=True)
class Case:
    """One ONNX node conformance case."""

    name: str
    operator: str          # the operator under test
    op_types: tuple        # every (domain-qualified) op type the model uses, sorted
    model: object          # onnx.ModelProto
    data_sets: tuple       # ((inputs, expected outputs), ...)
    rtol: float
    atol: float

    @property
    def expanded(self) -> bool:
        """A function expansion of the operator (other operators compute it)."""
        return "_expanded" in self.name


@dataclasses.dataclass(frozen=True)
class Result:
    """How a case went: ``status`` is "pass", "fail" or "unsupported"."""

    name: str
    operator: str
    status: str
    reason: str = ""
    seconds: float = 0.0
    bound: tuple = ()       # inputs compiled in as compile-time operands (TeccBackendRep.bound_inputs)
    kernels: bool = True    # False: the outputs were known when compiling (no kernel ran)


# ---------------------------------------------------------------------------------------
# collecting the cases
# ---------------------------------------------------------------------------------------
def _op_label(node) -> str:
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"


@functools.lru_cache(maxsize=1)
def load_cases() -> tuple:
    """Every node conformance case of the installed onnx package, sorted by name.

    Generating them runs onnx's reference code (about 15 seconds).  The operator
    of a case is its node's op type; an ``*_expanded`` case (the operator written
    as other operators) counts for the operator of the case it expands.
    """
    import onnx.backend.test.case.node as node_cases  # noqa: PLC0415

    with warnings.catch_warnings(), open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        warnings.simplefilter("ignore")  # onnx's generators overflow casts on purpose
        raw = node_cases.collect_testcases(None)
    by_name = {c.name: c for c in raw}

    def operator_of(case) -> str:
        nodes = list(case.model.graph.node)
        if "_expanded" in case.name:
            base = by_name.get(re.sub(r"_expanded.*$", "", case.name))
            if base is not None and len(base.model.graph.node) == 1:
                return _op_label(base.model.graph.node[0])
        return _op_label(nodes[-1]) if nodes else "(empty)"

    cases = []
    for c in sorted(raw, key=lambda c: c.name):
        cases.append(Case(name=c.name, operator=operator_of(c),
                          op_types=tuple(sorted({_op_label(n) for n in c.model.graph.node})),
                          model=c.model, data_sets=tuple(c.data_sets), rtol=float(c.rtol), atol=float(c.atol)))
    return tuple(cases)


@functools.lru_cache(maxsize=1)
def converter_ops() -> frozenset:
    """The op types the importer converts (its converter table) or imports through
    their ONNX function body."""
    from tecc.graph.frontend import function_ops, supported_ops  # noqa: PLC0415

    return frozenset(supported_ops()) | frozenset(function_ops())


def missing_ops(case: Case) -> list:
    """The op types of ``case`` the importer has no converter for."""
    return [t for t in case.op_types if t not in converter_ops()]


# ---------------------------------------------------------------------------------------
# running a case
# ---------------------------------------------------------------------------------------
def _as_array(value):
    from onnx import TensorProto, numpy_helper  # noqa: PLC0415

    if isinstance(value, TensorProto):
        return np.asarray(numpy_helper.to_array(value))
    if isinstance(value, (list, tuple, dict)) or value is None:
        return value  # sequences, maps and absent optionals: the importer refuses such inputs
    return np.asarray(value)


def _flat(values) -> list:
    """The tensors of outputs that may be sequences (lists) or empty optionals (None)."""
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            out.extend(_as_array(x) for x in v)
        elif v is not None:
            out.append(_as_array(v))
    return out


def compare(case: Case, got, expected) -> None:
    """Raise AssertionError unless ``got`` matches ``expected`` (count, shapes,
    dtypes, values within the case's tolerance; a sequence output the same length
    and each of its tensors matching)."""
    got, expected = list(got), list(expected)
    assert len(got) == len(expected), f"{len(got)} outputs, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected)):
        e_seq, g_seq = isinstance(e, (list, tuple)), isinstance(g, (list, tuple))
        assert e_seq == g_seq and (not e_seq or len(g) == len(e)), (
            f"output {i}: {len(g) if g_seq else 'a tensor'} tensor(s), expected "
            f"{len(e) if e_seq else 'a tensor'}")
        assert (g is None) == (e is None), f"output {i}: {'empty' if g is None else 'a value'}, expected " \
                                           f"{'empty' if e is None else 'a value'}"
    assert_outputs_match(_flat(got), _flat(expected), max(case.rtol, RTOL), max(case.atol, ATOL))


def _first_line(err: BaseException, limit: int = 300) -> str:
    text = " ".join(str(err).split())
    text = f"{type(err).__name__}: {text}" if text else type(err).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def prepare(case: Case, device: str = "CPU"):
    """``TeccBackend.prepare`` of the case's model (no "no tuned config" notes)."""
    from tecc.graph.frontend.onnx_backend import TeccBackend  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default schedules: the dispatcher's per-workload notes
        return TeccBackend.prepare(case.model, device)


def run_case(case: Case, device: str = "CPU") -> Result:
    """Run ``case`` on ``device`` ("CPU": the C backend; "CUDA": a GPU or the
    emulator) and classify it (see the module's docstring)."""
    from tecc.graph.frontend import OnnxImportError  # noqa: PLC0415

    start = time.perf_counter()

    rep = None

    def result(status, reason=""):
        bound = tuple(rep.bound_inputs) if rep is not None else ()
        kernels = rep is None or rep.factory is not None
        return Result(case.name, case.operator, status, reason, time.perf_counter() - start, bound, kernels)

    missing = missing_ops(case)
    if missing:
        return result("unsupported", "no converter for " + ", ".join(missing))
    try:
        rep = prepare(case, device)
    except OnnxImportError as err:
        if err.internal:  # a converter's own failure on a valid node: tecc's fault, not a refusal
            return result("fail", "compiling: " + _first_line(err))
        return result("unsupported", _first_line(err))
    except Exception as err:  # noqa: BLE001 -- any other error while compiling is a failure of the case
        return result("fail", "compiling: " + _first_line(err) + _where(err))
    for k, (inputs, expected) in enumerate(case.data_sets):
        try:
            got = rep.run([_as_array(x) for x in inputs])
            compare(case, got, expected)
        except OnnxImportError as err:
            # a model compiled at its first run (operands given as inputs) may be refused then
            return result("fail" if err.internal else "unsupported", _first_line(err))
        except AssertionError as err:
            return result("fail", f"data set {k}: " + _first_line(err))
        except Exception as err:  # noqa: BLE001 -- an error while running is a failure of the case
            return result("fail", f"running data set {k}: " + _first_line(err) + _where(err))
    return result("pass")


def _where(err: BaseException) -> str:
    """`` (at file:line)`` of the innermost tecc frame of ``err``."""
    frames = [f for f in traceback.extract_tb(err.__traceback__) if "site-packages" not in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f" (at {os.path.relpath(f.filename, os.path.dirname(os.path.dirname(REPORT_PATH)))}:{f.lineno})"


# ---------------------------------------------------------------------------------------
# choosing cases
# ---------------------------------------------------------------------------------------
def per_operator(cases, limit: int) -> list:
    """Up to ``limit`` cases per operator, deterministically: for each operator in
    name order, its plain (not expanded) cases first, each group by name."""
    groups = collections.defaultdict(list)
    for c in cases:
        groups[c.operator].append(c)
    chosen = []
    for op in sorted(groups):
        ordered = sorted(groups[op], key=lambda c: (c.expanded, c.name))
        chosen.extend(ordered[:limit])
    return chosen


# ---------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------
def _counts(results) -> dict:
    out = collections.defaultdict(collections.Counter)
    for r in results:
        out[r.operator][r.status] += 1
    return out


def _cell(counter) -> str:
    if not counter:
        return "--"
    return f"{counter['pass']} / {counter['fail']} / {counter['unsupported']}"


def render(results_c, results_emu, cases, seconds: float) -> str:
    """The report (Markdown)."""
    import onnx  # noqa: PLC0415

    c_counts = _counts(results_c)
    emu_counts = _counts(results_emu)
    totals = collections.Counter(r.status for r in results_c)
    emu_totals = collections.Counter(r.status for r in results_emu)
    supported_ops = sorted(op for op, cnt in c_counts.items() if cnt["pass"] or cnt["fail"])
    all_pass_ops = [op for op in supported_ops if not c_counts[op]["fail"]]
    missing = collections.Counter()
    for c in cases:
        for t in missing_ops(c):
            missing[t] += 1

    lines = []
    add = lines.append
    add("<!-- Generated by tests/graph/onnx_conformance_report.py: do not edit by hand. -->")
    add("")
    add("## ONNX conformance")
    add("")
    add(f"tecc runs ONNX's own node conformance cases (onnx {onnx.__version__}: {len(cases)} cases generated "
        "offline by `onnx.backend.test.case.node.collect_testcases`) through `tecc.graph.frontend.onnx_backend."
        "TeccBackend`, an `onnx.backend.base.Backend`: each case's model is imported, built and run, and its "
        f"outputs compared with the expected ones (shapes, dtypes, values within rtol {RTOL:g} / atol {ATOL:g} "
        "or the case's own looser tolerance; bfloat16 within two of its ulps, as onnx's runner compares it).")
    add("")
    add(f"On the C backend (`llvm`), of the {len(results_c)} cases: **{totals['pass']} pass**, "
        f"{totals['fail']} fail, {totals['unsupported']} are unsupported (an operator without a converter, or "
        "an attribute, dtype, opset or run-time operand the importer refuses with a clear error). "
        f"{len(supported_ops)} operators have at least one case tecc runs; all the cases of {len(all_pass_ops)} of "
        f"them pass. On the CUDA-semantics path (`cuda`, run on tecc's CPU emulator of CUDA where there is no "
        f"GPU), a sample of one case per operator: {emu_totals['pass']} pass, {emu_totals['fail']} fail, "
        f"{emu_totals['unsupported']} unsupported.")
    add("")
    bound_pass = [r for r in results_c if r.status == "pass" and r.bound]
    folded_pass = [r for r in results_c if r.status == "pass" and not r.kernels]
    add(f"Of the passing cases, {len(bound_pass)} give an operand tecc needs when compiling (a Reshape's shape, "
        "Pad's pads, a Reduce's axes...) as a graph input: the backend compiles them at the first run with those "
        f"values compiled in; and in {len(folded_pass)} the outputs are known when compiling (constants, shapes, "
        "sizes; all operands bound), so no kernel runs.")
    add("")
    add("Run it again with `python tests/graph/onnx_conformance_report.py` (it writes "
        "`tests/graph/onnx_conformance.md`); CI runs up to 3 cases per operator "
        "(`tests/graph/test_onnx_conformance.py`), failures there marked as known with their reason.")
    add("")
    add("Cases per operator -- passed / failed / unsupported -- for the operators with at least one case tecc "
        "runs (`expanded` cases, the operator written as other operators, count for the operator they expand):")
    add("")
    add("| operator | C backend | CUDA emulator (sample) |")
    add("| --- | --- | --- |")
    from tecc.graph.frontend import function_ops  # noqa: PLC0415

    through_function = set(function_ops())
    for op in supported_ops:
        label = (f"{op} \u2020" if op in through_function else op) if op in converter_ops() else f"{op} \\*"
        add(f"| {label} | {_cell(c_counts[op])} | {_cell(emu_counts.get(op))} |")
    add(f"| **total** | {_cell(totals)} | {_cell(emu_totals)} |")
    add("")
    add("\\* The importer has no converter for this operator: only its `expanded` cases (ONNX's function body "
        "written with operators tecc converts) run; its own cases count as unsupported.  \u2020 The importer "
        "imports this operator through its ONNX function body (`tecc.graph.frontend.function_ops()`).")
    add("")

    # details below the README section
    add("## Details")
    add("")
    add(f"Generated in {seconds:.0f} s. A case is *unsupported* when an operator in it has no converter or "
        "the importer refuses it with `OnnxImportError` (a model at an opset above 21 is read as opset 21 when "
        "every node reads the same there: see `onnx_backend.opset_for`); it *fails* on wrong numbers, shapes or "
        "dtypes, or an error while compiling or running.")
    add("")
    add("### Operators with no case tecc runs")
    add("")
    add("| operator | C backend |")
    add("| --- | --- |")
    for op in sorted(set(c_counts) - set(supported_ops)):
        add(f"| {op} | {_cell(c_counts[op])} |")
    add("")
    add("### Op types without a converter, among the cases")
    add("")
    add("Op type (number of cases using it): " + ", ".join(f"{t} ({n})" for t, n in sorted(missing.items())) + ".")
    add("")
    add("### Failures")
    add("")
    fails = [r for r in results_c if r.status == "fail"]
    emu_fails = [r for r in results_emu if r.status == "fail"]
    if not fails and not emu_fails:
        add("None.")
    for r in fails + emu_fails:
        backend = "C backend" if r in fails else "CUDA emulator"
        cause = KNOWN_FAILURES.get(r.name, "not diagnosed yet")
        add(f"- `{r.name}` ({r.operator}, {backend}): **{_md(cause)}**. Error: {_md(r.reason)}")
    add("")
    add("### Cases the importer refuses")
    add("")
    add("The cases whose operators all have converters but which the importer refuses, with its message:")
    add("")
    refused = [r for r in results_c if r.status == "unsupported" and not r.reason.startswith("no converter")]
    for r in refused:
        add(f"- `{r.name}` ({r.operator}): {_md(r.reason)}")
    if not refused:
        add("None.")
    add("")
    add("### Passing cases with operands compiled in, or with no kernel")
    add("")
    add("Compiled with these inputs' values compiled in: " + (", ".join(
        f"`{r.name}` ({', '.join(r.bound)})" for r in bound_pass) or "none") + ".")
    add("")
    add("Outputs known when compiling (no kernel ran): " + (", ".join(f"`{r.name}`" for r in folded_pass) or "none")
        + ".")
    add("")
    add("### CUDA emulator sample")
    add("")
    add("One case per operator (the first that passes on the C backend): " + ", ".join(
        f"`{r.name}` {r.status}" for r in results_emu) + ".")
    add("")
    return "\n".join(lines)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _run_many(cases, device, jobs: int) -> list:
    """run_case over ``cases``, in ``jobs`` processes."""
    if jobs <= 1:
        out = []
        for i, c in enumerate(cases):
            out.append(run_case(c, device))
            _progress(i + 1, len(cases), out[-1])
        return out
    import concurrent.futures as cf  # noqa: PLC0415
    import multiprocessing  # noqa: PLC0415

    names = [c.name for c in cases]
    ctx = multiprocessing.get_context("fork")  # the workers inherit the generated cases
    out = {}
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = {pool.submit(_run_by_name, n, device): n for n in names}
        for i, fut in enumerate(cf.as_completed(futures)):
            r = fut.result()
            out[r.name] = r
            _progress(i + 1, len(names), r)
    return [out[n] for n in names]


def _run_by_name(name: str, device: str) -> Result:
    case = {c.name: c for c in load_cases()}[name]
    return run_case(case, device)


def _progress(done: int, total: int, r: Result) -> None:
    print(f"[{done}/{total}] {r.status:11s} {r.name} ({r.seconds:.1f}s) {r.reason[:120]}", flush=True)


def main(argv=None) -> int:
    """Run every case on the C backend and a sample on the CUDA path; write the
    report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes to run cases in")
    parser.add_argument("--output", default=REPORT_PATH, help="where to write the report (Markdown)")
    parser.add_argument("-k", default="", help="only cases whose name contains this (for a quick look)")
    args = parser.parse_args(argv)

    start = time.perf_counter()
    cases = [c for c in load_cases() if args.k in c.name]
    results_c = _run_many(cases, "CPU", args.jobs)
    # the CUDA sample: per operator, the first case that passes on the C backend
    passed = {r.name for r in results_c if r.status == "pass"}
    sample = per_operator([c for c in cases if c.name in passed], 1)
    results_emu = _run_many(sample, "CUDA", args.jobs)
    report = render(results_c, results_emu, cases, time.perf_counter() - start)
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(report + "\n")
    totals = collections.Counter(r.status for r in results_c)
    print(f"wrote {args.output}: C backend {dict(totals)}, CUDA sample "
          f"{dict(collections.Counter(r.status for r in results_emu))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

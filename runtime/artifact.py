"""The deployable model artifact: one file that holds a whole built model.

:meth:`GraphExecutorFactoryModule.export_library
<tecc.runtime.graph_executor.GraphExecutorFactoryModule.export_library>` writes a zip
archive with four members, the manifest first:

``manifest.json``
    ``format`` (``"tecc-model"``) and ``format_version``, the tecc version, the
    target, the module name, the creation time (UTC, ISO 8601), the model's inputs
    and outputs (name or index, shape, dtype), the kernel module's kind, and the
    sha256 and size of every other member.
``graph.json``
    The graph JSON the executor runs.
``kernels.lib``
    The kernel module exactly as its own ``export_library`` writes it: the C shared
    library (with its source appended), or for CUDA the cubin with its launch plans
    and the CPU emulation's library.
``params.npz``
    The params, written and read by numpy with ``allow_pickle=False``.

No member is pickled.  :func:`load_artifact` (what :func:`tecc.runtime.load_module`
calls for such a file) checks the format and its version, the presence of every
member and every checksum before it loads anything, and needs numpy alone (plus
CuPy to run CUDA kernels on a GPU): no compiler, no onnx.  A truncated or corrupt
file, a missing member, a member changed after export or a format newer than this
tecc raises :class:`ArtifactError` naming the file and what is wrong.
"""
from __future__ import annotations

import datetime
import hashlib
import io
import json
import os
import zipfile
import zlib

import numpy as np

from ..errors import TeccError
from .cache import atomic_write
from .graph_executor import GraphExecutorFactoryModule, save_param_dict
from .module import _cached_file

FORMAT = "tecc-model"
#: version 1: manifest, graph.json, kernels.lib, params.npz
FORMAT_VERSION = 1

MANIFEST = "manifest.json"
GRAPH = "graph.json"
KERNELS = "kernels.lib"
PARAMS = "params.npz"
MEMBERS = (GRAPH, KERNELS, PARAMS)

#: the manifest is the first member: its name sits at this offset of the file
_FIRST_NAME_OFFSET = 30
_ZIP_MAGIC = b"PK\x03\x04"


class ArtifactError(TeccError):
    """A model artifact that cannot be read: not an artifact, truncated, corrupt,
    tampered with, incomplete or of a newer format."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _tecc_version() -> str:
    from .. import __version__

    return __version__


# -------------------------------------------------------------------------------------------
# writing
# -------------------------------------------------------------------------------------------
def artifact_bytes(factory: GraphExecutorFactoryModule) -> bytes:
    """The artifact of ``factory`` as bytes (see the module documentation)."""
    lib = factory.get_lib()
    export = getattr(lib, "_artifact", None)
    if export is None:
        raise ArtifactError(f"export_library: the kernel module {lib!r} cannot be exported (only modules made "
                            "by tecc.build can)")
    members = {GRAPH: factory.get_graph_json().encode("utf-8"), KERNELS: export(),
               PARAMS: save_param_dict(factory.params)}
    spec = factory.spec
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tecc_version": _tecc_version(),
        "target": factory.target,
        "module_name": factory.module_name,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "kernels": {"type_key": getattr(lib, "type_key", ""), "functions": list(getattr(lib, "function_names", []))},
        "inputs": spec.input_info(),
        "outputs": spec.output_info(),
        "params": sorted(factory.params),
        "members": {name: {"sha256": _sha256(data), "bytes": len(data)} for name, data in members.items()},
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(MANIFEST, json.dumps(manifest, indent=1), compress_type=zipfile.ZIP_DEFLATED)
        z.writestr(GRAPH, members[GRAPH], compress_type=zipfile.ZIP_DEFLATED)
        # binaries and params are stored as they are: they hardly compress, and loading stays fast
        z.writestr(KERNELS, members[KERNELS], compress_type=zipfile.ZIP_STORED)
        z.writestr(PARAMS, members[PARAMS], compress_type=zipfile.ZIP_STORED)
    return out.getvalue()


def write_artifact(path: str, factory: GraphExecutorFactoryModule) -> None:
    """Write the artifact of ``factory`` to ``path`` (atomically: a reader sees the old
    file or the whole new one)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ArtifactError(f"export_library: cannot write {path!r}: the folder {directory!r} does not exist; "
                            "create it first (os.makedirs)")
    atomic_write(path, artifact_bytes(factory))


# -------------------------------------------------------------------------------------------
# reading
# -------------------------------------------------------------------------------------------
def is_artifact(data: bytes) -> bool:
    """True if ``data`` looks like a model artifact (a zip whose first member, or any
    member, is the manifest) -- also when it is truncated, so that loading it says
    what is wrong with it rather than that it is something else."""
    head = data[_FIRST_NAME_OFFSET:_FIRST_NAME_OFFSET + len(MANIFEST)]
    if data[:4] == _ZIP_MAGIC and MANIFEST.encode().startswith(head):
        return True  # the manifest's name, or as much of it as a truncated file still holds
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = set(z.namelist())
    except (zipfile.BadZipFile, ValueError, OSError):
        return False
    return MANIFEST in names and "metadata.json" not in names


class ArtifactContents:
    """The verified members of an artifact: ``manifest`` (dict), ``graph_json``
    (str), ``params`` (name -> numpy array) and ``kernels`` (the kernel module's
    exported bytes)."""

    def __init__(self, manifest: dict, graph_json: str, params: dict, kernels: bytes):
        self.manifest = manifest
        self.graph_json = graph_json
        self.params = params
        self.kernels = kernels


def _read_member(z: zipfile.ZipFile, name: str, where: str) -> bytes:
    try:
        return z.read(name)
    except KeyError:
        raise ArtifactError(f"{where}: the member {name!r} is missing (an incomplete artifact); export the model "
                            "again") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as err:
        raise ArtifactError(f"{where}: the member {name!r} is corrupt ({err}); the file was damaged after "
                            "export: copy or export it again") from None


def _check_manifest(manifest, where: str) -> dict:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        got = manifest.get("format") if isinstance(manifest, dict) else None
        raise ArtifactError(f"{where}: manifest.json names the format {got!r}, not {FORMAT!r}: this is not a "
                            "tecc model artifact")
    version = manifest.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ArtifactError(f"{where}: manifest.json has format_version {version!r}; expected an integer from 1 "
                            f"to {FORMAT_VERSION}")
    if version > FORMAT_VERSION:
        raise ArtifactError(
            f"{where}: written by a newer tecc ({manifest.get('tecc_version', '?')}) in format version {version}; "
            f"this tecc ({_tecc_version()}) reads format versions up to {FORMAT_VERSION}: upgrade tecc, or export "
            "the model with this one")
    members = manifest.get("members")
    if not isinstance(members, dict):
        raise ArtifactError(f"{where}: manifest.json lacks the checksums of its members ('members')")
    for name in MEMBERS:
        entry = members.get(name)
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise ArtifactError(f"{where}: manifest.json has no sha256 of the member {name!r}; the manifest is "
                                "incomplete: export the model again")
    return manifest


def read_artifact(source, where: str = None) -> ArtifactContents:
    """Read and verify an artifact without loading its kernels.

    Parameters
    ----------
    source : str or bytes
        The artifact's path, or its bytes.
    where : str, optional
        How to name it in messages (defaults to the path).

    Raises
    ------
    ArtifactError
        If the file is missing, not a zip archive (truncated or corrupt), lacks a
        member, has a member whose sha256 differs from the manifest's (changed
        after export), or is of another format or a newer version.
    """
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
        where = where or "the model artifact"
    else:
        path = os.fspath(source)
        where = where or repr(path)
        if not os.path.exists(path):
            raise ArtifactError(f"no model artifact at {path!r}")
        with open(path, "rb") as f:
            data = f.read()
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as err:
        raise ArtifactError(f"{where}: not a complete zip archive ({err}): the file is truncated or corrupt "
                            f"({len(data)} bytes); copy or export it again") from None
    with z:
        if MANIFEST not in z.namelist():
            raise ArtifactError(f"{where}: no manifest.json: this is not a tecc model artifact (those are written by "
                                "GraphExecutorFactoryModule.export_library)")
        try:
            manifest = json.loads(_read_member(z, MANIFEST, where))
        except ValueError as err:
            raise ArtifactError(f"{where}: manifest.json is not valid JSON ({err})") from None
        manifest = _check_manifest(manifest, where)
        members = {}
        for name in MEMBERS:
            blob = _read_member(z, name, where)
            want = manifest["members"][name]["sha256"]
            got = _sha256(blob)
            if got != want:
                raise ArtifactError(f"{where}: the member {name!r} does not match its checksum (sha256 {got[:16]}..., "
                                    f"the manifest says {want[:16]}...): it was changed after export (tampered "
                                    "with or damaged); do not run it: export the model again")
            members[name] = blob
    try:
        graph_json = members[GRAPH].decode("utf-8")
        json.loads(graph_json)
    except ValueError as err:
        raise ArtifactError(f"{where}: graph.json is not valid JSON ({err})") from None
    try:
        with np.load(io.BytesIO(members[PARAMS]), allow_pickle=False) as npz:
            params = {name: npz[name] for name in npz.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as err:
        raise ArtifactError(f"{where}: params.npz cannot be read without pickle ({err})") from None
    return ArtifactContents(manifest, graph_json, params, members[KERNELS])


def load_artifact(path, cache: bool = True, data: bytes = None) -> GraphExecutorFactoryModule:
    """Load a model artifact: a :class:`GraphExecutorFactoryModule` again.

    Parameters
    ----------
    path : str
        The artifact.
    cache : bool
        Where the kernel module's library is written to be loaded: tecc's
        content-addressed cache (the default), or, with False, beside ``path``
        (``<path>.kernels``), as :func:`tecc.runtime.load_module` does.
    data : bytes, optional
        The file's bytes, when already read.

    Raises
    ------
    ArtifactError
        See :func:`read_artifact`.
    """
    from .module import load_module

    path = os.fspath(path)
    contents = read_artifact(path if data is None else data, repr(path))
    if cache:
        lib_path = _cached_file(contents.kernels, "kernels")
    else:
        lib_path = f"{path}.kernels"
        atomic_write(lib_path, contents.kernels)
    lib = load_module(lib_path, cache=False)
    manifest = contents.manifest
    try:
        return GraphExecutorFactoryModule(contents.graph_json, lib, contents.params,
                                          manifest.get("module_name", "default"), manifest.get("target", lib.target))
    except TeccError as err:
        raise ArtifactError(f"{path!r}: the graph does not fit its kernels or params: {err}") from None


__all__ = ["ArtifactContents", "ArtifactError", "FORMAT", "FORMAT_VERSION", "artifact_bytes", "is_artifact",
           "load_artifact", "read_artifact", "write_artifact"]

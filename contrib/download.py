"""Downloading files, and test data kept on disk (TVM's ``tvm.contrib.download``).

``download_testdata(url, relpath, module)`` returns the path of a file under the
test-data folder -- ``$TECC_TEST_DATA``, else ``~/.tecc/test_data`` -- downloading
it only when it is not there yet::

    path = download_testdata("https://example.com/cat.png", "cat.png", module="data")

A file that is present is returned with no network access, so on a machine that
is offline a file copied by hand to the path the error message names is used as
is.  Downloads go to a temporary file beside the destination and are renamed when
complete: an interrupted download leaves no partial file.
"""
from __future__ import annotations

import http.client
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from .. import config
from ..errors import TeccError

#: where download_testdata keeps its files (read on every call)
TEST_DATA = config.TEST_DATA
#: seconds a connection may stay silent before a download attempt fails
TIMEOUT_S = 60


def test_data_dir() -> Path:
    """The test-data folder: ``$TECC_TEST_DATA``, else ``~/.tecc/test_data``."""
    return Path(os.path.expanduser(TEST_DATA.read()))


def _remote_size(url: str, timeout: float):
    """The size the server announces for ``url`` (a HEAD request), or None."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout) as resp:
            length = resp.headers.get("Content-Length")
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return int(length) if length and length.isdigit() else None


def _fetch(url: str, path: Path, timeout: float) -> None:
    """One attempt: ``url`` into a temporary file beside ``path``, renamed to it
    once complete (removed otherwise)."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            shutil.copyfileobj(resp, out, 1 << 20)
            expected = resp.headers.get("Content-Length") if resp.headers else None
            written = out.tell()
        if expected and expected.isdigit() and int(expected) != written:
            raise OSError(f"the transfer stopped after {written} of {expected} bytes")
        os.chmod(tmp, 0o644)  # mkstemp made it private
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def download(url, path, overwrite=False, size_compare=False, retries=3) -> None:
    """Download ``url`` to the file ``path``.

    Parameters
    ----------
    url : str
        ``http(s)://``, ``ftp://`` or ``file://`` URL.
    path : str
        The destination; missing folders are created.
    overwrite : bool
        Download even when ``path`` exists (by default an existing file is kept
        and nothing is fetched).
    size_compare : bool
        When ``path`` exists, ask the server for the file's size and download again
        if it differs.
    retries : int
        Attempts before giving up (a missing file, HTTP 4xx, is not retried).

    Raises
    ------
    TeccError
        When every attempt failed (e.g. the machine is offline): the message names
        the URL and the exact path where a copy fetched by hand can be put.
    """
    path = Path(os.fspath(path)).expanduser().absolute()
    if path.is_file() and not overwrite:
        if not size_compare:
            return
        remote = _remote_size(url, TIMEOUT_S)
        if remote is None or remote == path.stat().st_size:
            return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise TeccError(f"download: cannot create the folder {str(path.parent)!r} for {url} ({err}); choose a "
                        f"writable place (for download_testdata: set {TEST_DATA.name})") from None
    attempts = max(1, int(retries))
    last = None
    for attempt in range(attempts):
        if attempt:
            time.sleep(0.5 * attempt)
        print(f"Downloading {url} to {path}", file=sys.stderr)
        try:
            _fetch(url, path, TIMEOUT_S)
            return
        except urllib.error.HTTPError as err:
            last = f"HTTP {err.code} {err.reason}"
            if 400 <= err.code < 500:
                break
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as err:
            reason = getattr(err, "reason", None) or err
            last = f"{type(err).__name__}: {reason}"
    raise TeccError(
        f"download: could not fetch {url} ({last}; {attempt + 1} attempt(s)). If this machine is offline, "
        f"download the file elsewhere and put it at exactly {str(path)!r}; it is then used without any "
        "network access")


def download_testdata(url, relpath, module=None, overwrite=False) -> str:
    """The local path of the test file ``relpath`` from ``url``, downloaded on
    first use into the test-data folder (:func:`test_data_dir`).

    Parameters
    ----------
    url : str
        Where the file comes from.
    relpath : str
        Its name (or relative path) under the folder.
    module : str or list of str, optional
        Subfolders, e.g. ``"onnx"`` or ``["data", "images"]``.
    overwrite : bool
        Download again even when the file is present.

    Returns
    -------
    str
        The absolute path of the file.  When it is present (and ``overwrite`` is
        False) it is returned with no network access.

    Raises
    ------
    TeccError
        When the download fails; the message names the path to put the file at.
    """
    if module is None:
        parts = []
    elif isinstance(module, str):
        parts = [module]
    elif isinstance(module, (list, tuple)) and all(isinstance(m, str) for m in module):
        parts = list(module)
    else:
        raise TeccError(f"download_testdata: module must be a str or a list of str (subfolders), "
                        f"got {module!r}")
    path = test_data_dir().joinpath(*parts, os.fspath(relpath)).absolute()
    download(url, path, overwrite=overwrite, size_compare=False)
    return str(path)

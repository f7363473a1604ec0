"""``tecc.contrib.download``: test data cached on disk, downloads through a
temporary file, and the message of a machine that is offline (no internet needed:
``file://`` URLs and a local HTTP server)."""
import http.server
import os
import threading
import urllib.request

import pytest

from tecc.contrib import download as dl
from tecc.errors import TeccError


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    root = tmp_path / "test_data"
    monkeypatch.setenv("TECC_TEST_DATA", str(root))
    return root


class _Handler(http.server.BaseHTTPRequestHandler):
    files = {}  # path -> bytes
    requests = []  # (method, path)

    def _reply(self, body: bool):
        self.requests.append((self.command, self.path))
        if self.path == "/truncated":  # announces more than it sends
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            if body:
                self.wfile.write(b"x" * 10)
            self.close_connection = True
            return
        data = self.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_GET(self):  # noqa: N802 - http.server's name
        self._reply(True)

    def do_HEAD(self):  # noqa: N802
        self._reply(False)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Handler.files = {"/model.bin": b"weights" * 1000, "/small.txt": b"hello"}
    _Handler.requests = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", _Handler
    httpd.shutdown()
    httpd.server_close()


def no_network(*_args, **_kwargs):
    raise AssertionError("a cached file must be returned without network access")


def test_default_folder(monkeypatch):
    monkeypatch.delenv("TECC_TEST_DATA", raising=False)
    assert dl.test_data_dir() == dl.Path(os.path.expanduser("~/.tecc/test_data"))


def test_file_url_then_cached_without_network(data_dir, tmp_path, monkeypatch):
    src = tmp_path / "source.txt"
    src.write_bytes(b"abc" * 100)
    path = dl.download_testdata(src.as_uri(), "copy.txt", module="sub")
    assert path == str(data_dir / "sub" / "copy.txt")
    assert open(path, "rb").read() == b"abc" * 100
    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    src.write_bytes(b"changed")
    assert dl.download_testdata(src.as_uri(), "copy.txt", module="sub") == path
    assert open(path, "rb").read() == b"abc" * 100


def test_module_list_and_bad_module(data_dir, tmp_path):
    src = tmp_path / "s.txt"
    src.write_text("x")
    path = dl.download_testdata(src.as_uri(), "deep/s.txt", module=["a", "b"])
    assert path == str(data_dir / "a" / "b" / "deep" / "s.txt") and os.path.isfile(path)
    with pytest.raises(TeccError, match="module must be a str or a list of str"):
        dl.download_testdata(src.as_uri(), "s.txt", module=3)


def test_http_download_overwrite_and_size_compare(data_dir, server):
    url, handler = server
    path = dl.download_testdata(url + "/model.bin", "model.bin", module="models")
    assert open(path, "rb").read() == handler.files["/model.bin"]
    assert handler.requests == [("GET", "/model.bin")]
    dl.download_testdata(url + "/model.bin", "model.bin", module="models")
    assert len(handler.requests) == 1  # present: no request at all
    handler.files["/model.bin"] = b"new weights"
    dl.download_testdata(url + "/model.bin", "model.bin", module="models", overwrite=True)
    assert open(path, "rb").read() == b"new weights"
    dl.download(url + "/small.txt", path, size_compare=True)  # sizes differ: fetched again
    assert open(path, "rb").read() == b"hello"
    count = len(handler.requests)
    dl.download(url + "/small.txt", path, size_compare=True)  # same size: only the HEAD request
    assert handler.requests[count:] == [("HEAD", "/small.txt")]


def test_offline_names_url_and_path_and_leaves_no_file(data_dir):
    url = "http://127.0.0.1:9/x.onnx"
    expected = data_dir / "models" / "x.onnx"
    with pytest.raises(TeccError, match=rf"could not fetch {url} .*offline.*put it at exactly "
                                        rf"'{expected}'"):
        dl.download_testdata(url, "x.onnx", module="models")
    assert not expected.exists() and os.listdir(expected.parent) == []


def test_truncated_transfer_leaves_no_partial_file(data_dir, server):
    url, handler = server
    with pytest.raises(TeccError, match=r"could not fetch .*/truncated .*3 attempt"):
        dl.download_testdata(url + "/truncated", "t.bin")
    assert os.listdir(data_dir) == []
    assert len(handler.requests) == 3


def test_missing_file_is_not_retried(data_dir, server):
    url, handler = server
    with pytest.raises(TeccError, match=r"HTTP 404 .*1 attempt"):
        dl.download_testdata(url + "/nothing.bin", "nothing.bin")
    assert handler.requests == [("GET", "/nothing.bin")]
    assert os.listdir(data_dir) == []

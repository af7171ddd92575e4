"""The small helpers tinygrad's examples import (nbgrad.helpers), and fetch against a local HTTP server."""
import functools
import os
import http.server
import threading
import urllib.error
import pytest

from nbgrad import helpers
from nbgrad.helpers import (Profiling, all_int, all_same, ansilen, argfix, argsort, colored, dedup, fetch, fully_flatten, get_child,
                            make_pair, merge_dicts, partition, round_up)


def test_small_helpers():
  assert dedup([3, 1, 3, 2, 1]) == [3, 1, 2] and all_int((1, 2)) and not all_int((1, 2.0))
  assert argfix((1, 2)) == argfix([1, 2]) == argfix(1, 2) == (1, 2) and argfix() == ()
  assert make_pair(3) == (3, 3) and make_pair(3, 3) == (3, 3, 3) and make_pair((1, 2)) == (1, 2)
  assert [round_up(n, 4) for n in (0, 1, 4, 5)] == [0, 4, 4, 8]
  assert partition([1, 2, 3, 4, 5], lambda x: x % 2) == ([1, 3, 5], [2, 4])
  # ANSI: 31 red, 91 bright red (an upper-case name), 42 a green background; 0 resets
  assert colored("x", "red") == "\x1b[31mx\x1b[0m" and colored("x", "RED") == "\x1b[91mx\x1b[0m"
  assert colored("x", "green", background=True) == "\x1b[42mx\x1b[0m" and colored("x", None) == "x"
  assert ansilen(colored("abc", "blue") + "de") == 5
  assert fully_flatten([1, (2, [3, (4,)]), [], 5]) == [1, 2, 3, 4, 5] and fully_flatten([]) == []
  assert all_same([2, 2, 2]) and all_same([]) and not all_same([2, 2.5])
  assert argsort([30, 10, 20]) == [1, 2, 0] and argsort((1.5, -1.0)) == (1, 0)
  assert merge_dicts([{"a": 1}, {"b": 2, "a": 1}]) == {"a": 1, "b": 2} and merge_dicts([]) == {}
  with pytest.raises(ValueError, match="'a' is both 1 and 3"): merge_dicts([{"a": 1}, {"a": 3}])
  assert helpers.CI == (os.getenv("CI", "") != "") and isinstance(helpers.OSX, bool)


def test_get_child_follows_a_state_dict_name():
  class Layer:
    def __init__(self): self.weight, self.cfg = "w", {"scale": 2}
  model = {"layers": [Layer(), Layer()]}
  assert get_child(model, "layers.1.weight") == "w" and get_child(model, "layers.0.cfg.scale") == 2
  with pytest.raises(AttributeError): get_child(model, "layers.0.bias")
  with pytest.raises(IndexError): get_child(model, "layers.2")


def test_profiling_prints_the_block_s_functions(capsys, tmp_path):
  def busy(): return sum(i * i for i in range(20000))
  with Profiling(frac=1.0, fn=str(tmp_path / "profile")): busy()
  printed = capsys.readouterr().out
  assert "busy" in printed and printed.startswith("n:") and (tmp_path / "profile").stat().st_size > 0
  with Profiling(enabled=False): busy()
  assert capsys.readouterr().out == ""


@pytest.fixture()
def server(tmp_path):
  """A local HTTP server of the folder served/ (its requests counted), and the cache folder."""
  served = tmp_path / "served"
  served.mkdir()
  (served / "data.bin").write_bytes(b"\x00\x01payload")
  requests = []

  class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args): requests.append(self.path)
  httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(served)))
  threading.Thread(target=httpd.serve_forever, daemon=True).start()
  yield f"http://127.0.0.1:{httpd.server_address[1]}", requests, tmp_path / "cache"
  httpd.shutdown()


def test_fetch_downloads_once_into_the_cache(server, monkeypatch):
  url, requests, cache = server
  monkeypatch.setenv("NBGRAD_CACHE_DIR", str(cache))
  path = fetch(f"{url}/data.bin")
  assert path.read_bytes() == b"\x00\x01payload" and path.parent == cache / "downloads"
  assert fetch(f"{url}/data.bin") == path and len(requests) == 1   # cached: no second request
  fetch(f"{url}/data.bin", allow_caching=False)
  assert len(requests) == 2
  named = fetch(f"{url}/data.bin", name="mine.bin")
  assert named == cache / "downloads" / "mine.bin" and named.read_bytes() == b"\x00\x01payload"
  with pytest.raises(urllib.error.HTTPError): fetch(f"{url}/missing.bin")
  assert not any(p.name.startswith("tmp") for p in (cache / "downloads").iterdir())   # no half file left
  assert fetch(str(path)) == path and helpers.fetch is fetch

"""nbgrad.nn.state: state dicts of nested models, load_state_dict, safetensors files (checked against the format
read and written by hand here) and torch.save files (written by torch)."""
import collections
import gzip
import hashlib
import json
import pickle
import struct
import zipfile
import numpy as np
import pytest
import torch

from nbgrad import Tensor, dtypes, nn
from nbgrad.nn.state import get_state_dict, get_parameters, load_state_dict, safe_save, safe_load, safe_load_metadata, torch_load
from same_values import check_same


class Block:
  def __init__(self):
    self.norm = nn.LayerNorm(3)
    self.layers = [nn.Linear(3, 4), nn.Linear(4, 2, bias=False)]
    self.extra = {"scale": Tensor([2.0])}
    self.name = "not a tensor"


Pair = collections.namedtuple("Pair", "left right")


def test_state_dict_names_follow_attributes_lists_dicts_and_namedtuples():
  model = Block()
  names = list(get_state_dict(model))
  assert names == ["norm.weight", "norm.bias", "layers.0.weight", "layers.0.bias", "layers.1.weight", "extra.scale"]
  assert get_state_dict(model)["layers.0.weight"] is model.layers[0].weight
  assert [t.shape for t in get_parameters(model)] == [(3,), (3,), (4, 3), (4,), (2, 4), (1,)]
  assert list(get_state_dict(Pair(Tensor([1]), [Tensor([2])]), prefix="p.")) == ["p.left", "p.right.0"]
  assert list(get_state_dict(collections.OrderedDict(b=Tensor([1]), a=Tensor([2])))) == ["b", "a"]


def test_load_state_dict_takes_values_shapes_must_match():
  model, other = Block(), Block()
  load_state_dict(other, get_state_dict(model))
  for name, t in get_state_dict(model).items(): np.testing.assert_array_equal(get_state_dict(other)[name].numpy(), t.numpy())
  state = {k: v for k, v in get_state_dict(model).items() if k != "extra.scale"}
  with pytest.raises(KeyError, match="extra.scale"): load_state_dict(other, state)
  with pytest.raises(RuntimeError, match="extra.scale"): load_state_dict(other, state)   # torch's error class too
  load_state_dict(other, state, strict=False, consume=True)
  assert state == {}
  before = {name: t.numpy() for name, t in get_state_dict(other).items()}
  wrong_last = {name: t + 1 for name, t in get_state_dict(model).items()} | {"extra.scale": Tensor.ones(4)}
  with pytest.raises(ValueError, match=r"'extra.scale' has shape \(4,\) in the state dict, \(1,\) in the model"):
    load_state_dict(other, wrong_last)
  for name, t in get_state_dict(other).items(): np.testing.assert_array_equal(t.numpy(), before[name])   # none loaded


def test_load_state_dict_casts_ints_into_a_float_model_as_torch_and_takes_a_float_entry_s_dtype_as_tinygrad():
  ours, theirs = nn.Linear(2, 2), torch.nn.Linear(2, 2)
  load_state_dict(ours, {"weight": Tensor([[1, 2], [3, 4]]), "bias": Tensor([True, False])})
  theirs.load_state_dict({"weight": torch.tensor([[1, 2], [3, 4]]), "bias": torch.tensor([True, False])})
  assert ours.weight.dtype == ours.bias.dtype == dtypes.float32
  np.testing.assert_array_equal(ours.weight.numpy(), theirs.weight.detach().numpy())
  np.testing.assert_array_equal(ours.bias.numpy(), theirs.bias.detach().numpy())
  load_state_dict(ours, {"weight": Tensor([[1.0, 2.0], [3.0, 4.0]], dtype=dtypes.float16), "bias": Tensor([0.5, 1.0])})
  assert ours.weight.dtype == dtypes.float16   # tinygrad's replace: half weights make a half layer


def test_load_state_dict_casts_numpy_entries_to_the_model_s_dtype_as_torch():
  """np.load gives float64 arrays: the model stays float32, as torch's load_state_dict keeps it, and trains on."""
  ours, theirs = nn.Linear(3, 2), torch.nn.Linear(3, 2)
  state = {"weight": np.random.default_rng(1).random((2, 3)), "bias": np.array([0.5, -1.0])}
  opt = nn.optim.Adam(get_parameters(ours))
  load_state_dict(ours, state)
  theirs.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
  assert ours.weight.dtype == ours.bias.dtype == dtypes.float32
  np.testing.assert_array_equal(ours.weight.numpy(), theirs.weight.detach().numpy())
  with Tensor.train():
    opt.zero_grad()
    ours(Tensor.ones(4, 3)).sum().backward()
    opt.step()
  assert ours.weight.dtype == dtypes.float32


# ---- safetensors
def tensors_of_every_dtype():
  rng = np.random.default_rng(0)
  out = {}
  for dt in (dtypes.bool, dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.uint16, dtypes.int32, dtypes.uint32, dtypes.int64,
             dtypes.uint64, dtypes.float16, dtypes.float32, dtypes.float64):
    out[dt.name] = Tensor(rng.integers(0, 100, (2, 3)).astype(np.dtype(dt.np)))
  out["bfloat16"] = Tensor([[1.5, -2.0, 3.25]]).cast(dtypes.bfloat16)
  out["scalar"], out["empty"] = Tensor(7.5), Tensor.zeros(0, 4)
  out["view"] = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).T[1:]   # not contiguous
  return out


def read_safetensors_by_hand(path):
  raw = open(path, "rb").read()
  (length,) = struct.unpack("<Q", raw[:8])
  header = json.loads(raw[8:8 + length])
  return header, raw[8 + length:], length


def test_safe_save_writes_the_format(tmp_path):
  tensors = tensors_of_every_dtype()
  safe_save(tensors, tmp_path / "every_dtype.safetensors", metadata={"format": "pt"})
  header, data, length = read_safetensors_by_hand(tmp_path / "every_dtype.safetensors")
  assert length % 8 == 0 and header["__metadata__"] == {"format": "pt"}
  assert header["bfloat16"]["dtype"] == "BF16" and header["int64"]["dtype"] == "I64" and header["bool"]["dtype"] == "BOOL"
  for name, t in tensors.items():
    begin, end = header[name]["data_offsets"]
    assert header[name]["shape"] == list(t.shape)
    expected = t.bitcast(dtypes.uint16).numpy() if t.dtype == dtypes.bfloat16 else t.numpy()
    assert data[begin:end] == np.ascontiguousarray(expected).tobytes(), name


def test_safe_load_reads_back_every_dtype(tmp_path):
  tensors = tensors_of_every_dtype()
  safe_save(tensors, tmp_path / "round_trip.safetensors")
  loaded = safe_load(tmp_path / "round_trip.safetensors")
  assert list(loaded) == list(tensors)
  for name, t in tensors.items():
    assert loaded[name].dtype == t.dtype and loaded[name].shape == t.shape, name
    if t.dtype == dtypes.bfloat16: np.testing.assert_array_equal(loaded[name].bitcast(dtypes.uint16).numpy(), t.bitcast(dtypes.uint16).numpy())
    else: check_same(loaded[name], t.numpy())


def test_safe_load_reads_a_file_written_by_hand(tmp_path):
  values = np.arange(6, dtype=np.float32).reshape(2, 3)
  header = json.dumps({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                       "i": {"dtype": "I16", "shape": [2], "data_offsets": [24, 28]}}).encode()
  with open(tmp_path / "by_hand.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + values.tobytes() + np.array([-3, 9], np.int16).tobytes())
  loaded = safe_load(tmp_path / "by_hand.safetensors")
  check_same(loaded["w"], values)
  check_same(loaded["i"], np.array([-3, 9], np.int16))
  data, length, parsed = safe_load_metadata(tmp_path / "by_hand.safetensors")
  assert length == len(header) and parsed["w"]["shape"] == [2, 3] and data.dtype == dtypes.uint8
  check_same(safe_load(data)["i"], np.array([-3, 9], np.int16))   # the file's bytes as a tensor


def test_a_model_saved_and_loaded_through_safetensors_computes_the_same(tmp_path):
  model, copy = nn.Linear(3, 2), nn.Linear(3, 2)
  safe_save(get_state_dict(model), tmp_path / "model.safetensors")
  load_state_dict(copy, safe_load(tmp_path / "model.safetensors"))
  x = Tensor(np.ones((1, 3), np.float32))
  np.testing.assert_array_equal(copy(x).numpy(), model(x).numpy())


def with_header(entry: dict, data: bytes = bytes(8)) -> bytes:
  header = json.dumps({"w": entry}).encode()
  return struct.pack("<Q", len(header)) + header + data


@pytest.mark.parametrize("content, match", [(b"\x01", "no header length"), (struct.pack("<Q", 100) + b"{}", "a header of 100 bytes"),
                                            (struct.pack("<Q", 2) + b"{x", "no valid safetensors header"),
                                            (struct.pack("<Q", 2) + b"[]", "no valid safetensors header"),
                                            (with_header({"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}), "non-negative integers"),
                                            (with_header({"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}), "non-negative integers"),
                                            (with_header({"dtype": "F32", "shape": [2], "data_offsets": [0.0, 8]}), "non-negative integers"),
                                            (with_header({"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}), "bytes 8..16 of the 8"),
                                            (with_header({"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}), r"do not hold \(3,\)"),
                                            (with_header("F32"), "unknown dtype")],
                         ids=["short", "header_past_end", "bad_json", "not_an_object", "negative_offset", "negative_size",
                              "float_offset", "offsets_past_end", "size_mismatch", "entry_not_an_object"])
def test_safe_load_of_a_broken_file_raises(content, match, tmp_path):
  with open(tmp_path / "broken.safetensors", "wb") as f: f.write(content)
  with pytest.raises(ValueError, match=match): safe_load(tmp_path / "broken.safetensors")


def test_safe_save_refuses_what_it_cannot_write(tmp_path):
  with pytest.raises(TypeError, match="'x' is a ndarray"): safe_save({"x": np.ones(2)}, tmp_path / "refused.safetensors")
  with pytest.raises(TypeError, match="takes a dict of tensors by name, got a list"): safe_save([Tensor([1.0])], tmp_path / "refused.safetensors")
  with pytest.raises(ValueError, match="other than '__metadata__'"): safe_save({"__metadata__": Tensor([1.0])}, tmp_path / "refused.safetensors")
  with pytest.raises(TypeError, match="metadata must be a dict of str to str"):
    safe_save({"x": Tensor([1.0])}, tmp_path / "refused.safetensors", metadata={"epoch": 3})
  with pytest.raises(TypeError, match="must be a path"): safe_save({"x": Tensor([1.0])}, 5)
  with pytest.raises(TypeError, match="must be a path"): safe_load(5)
  with pytest.raises(TypeError, match="must be a path"): torch_load(None)
  assert not (tmp_path / "refused.safetensors").exists()


# ---- torch.save files
def test_torch_load_reads_what_torch_saves(tmp_path):
  base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
  saved = collections.OrderedDict([
    ("weight", base), ("transposed", base.t()), ("sliced", base[1:, 2:]), ("half", base.half()), ("bf16", base.bfloat16()),
    ("int64", torch.tensor([-5, 2**40])), ("int8", torch.tensor([-3, 4], dtype=torch.int8)), ("bool", torch.tensor([True, False])),
    ("scalar", torch.tensor(2.5, dtype=torch.float64)), ("parameter", torch.nn.Parameter(torch.ones(2))), ("empty", torch.zeros(0, 3)),
    ("nested", [torch.tensor([1, 2]), {"inner": torch.tensor([3.0])}]), ("step", 7)])
  torch.save(saved, tmp_path / "torch.pt")
  loaded = torch_load(tmp_path / "torch.pt")
  assert list(loaded) == list(saved) and loaded["step"] == 7
  for name in ("weight", "transposed", "sliced", "half", "int64", "int8", "bool", "scalar", "parameter", "empty"):
    check_same(loaded[name], saved[name].detach().numpy())
  assert loaded["bf16"].dtype == dtypes.bfloat16
  np.testing.assert_array_equal(loaded["bf16"].numpy(), base.numpy())   # small integers are exact in bfloat16
  check_same(loaded["nested"][0], np.array([1, 2]))
  check_same(loaded["nested"][1]["inner"], np.array([3.0], np.float32))


@pytest.mark.parametrize("zip_file", [True, False], ids=["zip", "before_zip"])
def test_torch_load_reads_the_unsigned_dtypes_torch_2_saves_untyped_and_parameters_with_attributes(tmp_path, zip_file):
  """torch 2 keeps uint16/32/64 in untyped storages and names the dtype beside them; a Parameter with attributes
  of its own is pickled with its state. Both failed (the parameter loaded as a stub, silently)."""
  tagged = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
  tagged.note = "kept by torch"
  saved = {"u16": torch.tensor([1, 65535], dtype=torch.uint16), "u32": torch.tensor([[1, 2**32 - 1]], dtype=torch.uint32).t(),
           "u64": torch.tensor([3, 2**63 + 5], dtype=torch.uint64)[1:], "tagged": tagged}
  torch.save(saved, tmp_path / "unsigned.pt", _use_new_zipfile_serialization=zip_file)
  loaded = torch_load(tmp_path / "unsigned.pt")
  for name in ("u16", "u32", "u64"):
    assert loaded[name].dtype == getattr(dtypes, name.replace("u", "uint"))
    assert loaded[name].tolist() == saved[name].tolist()
  check_same(loaded["tagged"], np.array([1.0, -2.0], np.float32))


def test_torch_load_of_a_dtype_nbgrad_lacks_raises_naming_it(tmp_path):
  torch.save({"f8": torch.zeros(2, dtype=torch.float8_e4m3fn)}, tmp_path / "f8.pt")
  with pytest.raises(TypeError, match="float8_e4m3fn"): torch_load(tmp_path / "f8.pt")


def test_torch_load_of_a_torch_module_state_dict_loads_into_a_layer(tmp_path):
  torch.manual_seed(0)
  theirs = torch.nn.Linear(3, 2)
  torch.save(theirs.state_dict(), tmp_path / "linear.pt")
  ours = nn.Linear(3, 2)
  load_state_dict(ours, torch_load(tmp_path / "linear.pt"))
  x = np.ones((1, 3), np.float32)
  # float32 sums in another order: an output near 0 needs an absolute tolerance (an unseeded draw failed rtol alone)
  np.testing.assert_allclose(ours(Tensor(x)).numpy(), theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_a_torch_batchnorm_state_dict_loads_with_its_0d_batch_count(tmp_path):
  theirs = torch.nn.BatchNorm2d(3)
  x = np.random.default_rng(1).standard_normal((4, 3, 2, 2)).astype(np.float32)
  theirs(torch.from_numpy(x) * 2 + 1)   # training mode: the running statistics and num_batches_tracked move
  torch.save(theirs.state_dict(), tmp_path / "batchnorm.pt")
  ours = nn.BatchNorm2d(3)
  load_state_dict(ours, torch_load(tmp_path / "batchnorm.pt"))
  assert ours.num_batches_tracked.shape == (1,) and ours.num_batches_tracked.tolist() == [1]
  theirs.eval()
  np.testing.assert_allclose(ours(Tensor(x)).numpy(), theirs(torch.from_numpy(x)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_torch_load_reads_torch_s_format_before_zip_files(tmp_path):
  base = torch.arange(6, dtype=torch.float32).reshape(2, 3)
  saved = {"transposed": base.t(), "int64": torch.tensor([-1, 2**40]), "half": base.half(), "step": 3}
  torch.save(saved, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
  loaded = torch_load(tmp_path / "legacy.pt")
  assert loaded["step"] == 3
  for name in ("transposed", "int64", "half"): check_same(loaded[name], saved[name].numpy())


def test_torch_load_builds_containers_and_arrays_and_no_other_callable(tmp_path):
  saved = {"array": np.arange(3), "labels": {1, 2}, "optimizer": torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.5).state_dict()}
  torch.save(saved, tmp_path / "mixed.pt")
  loaded = torch_load(tmp_path / "mixed.pt")
  np.testing.assert_array_equal(loaded["array"], np.arange(3))
  assert loaded["labels"] == {1, 2} and loaded["optimizer"]["param_groups"][0]["lr"] == 0.5

  class RunsCode:
    def __reduce__(self): return (print, ("unpickling ran code",))
  with zipfile.ZipFile(tmp_path / "mixed.pt") as archive: files = {n: archive.read(n) for n in archive.namelist()}
  files[next(n for n in files if n.endswith("data.pkl"))] = pickle.dumps({"payload": RunsCode()})
  with zipfile.ZipFile(tmp_path / "hostile.pt", "w") as archive:
    for name, content in files.items(): archive.writestr(name, content)
  loaded = torch_load(tmp_path / "hostile.pt")   # print is no class it may build: a stub stands in
  assert type(loaded["payload"]).__name__ == "_Stub"


def test_torch_load_of_a_tensor_reading_past_its_storage_raises(tmp_path):
  """A damaged file whose tensor reads beyond its storage's bytes (here cut short) raises naming size, stride and
  offset (the elements past the storage were read from whatever memory followed)."""
  torch.save({"view": torch.arange(10, dtype=torch.float32)[2:].reshape(2, 4)}, tmp_path / "whole.pt")
  with zipfile.ZipFile(tmp_path / "whole.pt") as archive: files = {n: archive.read(n) for n in archive.namelist()}
  storage = next(n for n in files if n.endswith("data/0"))
  files[storage] = files[storage][:16]
  with zipfile.ZipFile(tmp_path / "cut.pt", "w") as archive:
    for name, content in files.items(): archive.writestr(name, content)
  with pytest.raises(ValueError, match=r"size \(2, 4\), stride \(4, 1\) and storage offset 2 reads element 9 of a storage of 4"):
    torch_load(tmp_path / "cut.pt")


@pytest.mark.parametrize("damage", ["pickle_cut_short", "pickle_of_garbage", "storage_missing", "legacy_cut_in_its_pickle",
                                    "legacy_cut_in_a_storage"])
def test_torch_load_of_a_damaged_file_raises_a_value_error_naming_it(damage, tmp_path):
  saved = {"w": torch.arange(3, dtype=torch.float32)}
  if damage.startswith("legacy"):
    torch.save(saved, tmp_path / "whole.pt", _use_new_zipfile_serialization=False)
    data = (tmp_path / "whole.pt").read_bytes()
    (tmp_path / "damaged.pt").write_bytes(data[:30] if damage == "legacy_cut_in_its_pickle" else data[:-5])
  else:
    torch.save(saved, tmp_path / "whole.pt")
    with zipfile.ZipFile(tmp_path / "whole.pt") as archive: files = {n: archive.read(n) for n in archive.namelist()}
    pickled, storage = next(n for n in files if n.endswith("data.pkl")), next(n for n in files if n.endswith("data/0"))
    if damage == "pickle_cut_short": files[pickled] = files[pickled][:20]
    elif damage == "pickle_of_garbage": files[pickled] = b"\x80\x04garbage"
    else: del files[storage]
    with zipfile.ZipFile(tmp_path / "damaged.pt", "w") as archive:
      for name, content in files.items(): archive.writestr(name, content)
  with pytest.raises(ValueError, match="damaged.pt is damaged"): torch_load(tmp_path / "damaged.pt")


def test_torch_load_of_a_file_torch_did_not_write_raises(tmp_path):
  with open(tmp_path / "not_torch.pt", "wb") as f: f.write(b"not a zip")
  with pytest.raises(ValueError, match="neither a zip file nor torch's earlier format"): torch_load(tmp_path / "not_torch.pt")


def test_the_safetensors_dtype_names_are_tinygrad_s_module_names():
  from nbgrad.nn.state import safe_dtypes, inverse_safe_dtypes
  # the names the safetensors format gives its dtypes
  assert {name: dt.name for name, dt in safe_dtypes.items()} == {
    "BOOL": "bool", "I8": "int8", "U8": "uint8", "I16": "int16", "U16": "uint16", "I32": "int32", "U32": "uint32", "I64": "int64",
    "U64": "uint64", "F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64"}
  assert all(safe_dtypes[name] == dt for dt, name in inverse_safe_dtypes.items()) and len(inverse_safe_dtypes) == 13


def _idx_gz(path, array: np.ndarray, magic: bytes):
  with gzip.open(path, "wb") as f: f.write(magic + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes())


def test_mnist_reads_the_idx_files_fetch_has_cached(tmp_path, monkeypatch):
  """mnist() as tinygrad's: uint8 images (n, 1, 28, 28) and labels (n,), from the four files in fetch's cache (here
  small ones written by hand, named as fetch names a download: the md5 of its url)."""
  from nbgrad.nn import datasets
  monkeypatch.setenv("NBGRAD_CACHE_DIR", str(tmp_path))
  (tmp_path / "downloads").mkdir()
  rng = np.random.default_rng(3)
  arrays = {"train-images-idx3-ubyte.gz": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8),
            "train-labels-idx1-ubyte.gz": rng.integers(0, 10, 5, dtype=np.uint8),
            "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (3, 28, 28), dtype=np.uint8),
            "t10k-labels-idx1-ubyte.gz": rng.integers(0, 10, 3, dtype=np.uint8)}
  def cached(file): return tmp_path / "downloads" / hashlib.md5((datasets.MNIST_URL + file).encode()).hexdigest()
  for file, array in arrays.items(): _idx_gz(cached(file), array, bytes([0, 0, 8, array.ndim]))
  x_train, y_train, x_test, y_test = datasets.mnist()
  for tensor, array in zip((x_train, y_train, x_test, y_test), arrays.values()):
    assert tensor.dtype == dtypes.uint8
    np.testing.assert_array_equal(tensor.numpy(), array.reshape(-1, 1, 28, 28) if array.ndim == 3 else array)
  # a file that is not what its header says raises, naming the file
  _idx_gz(cached("train-labels-idx1-ubyte.gz"), np.zeros(4, np.uint8), bytes([0, 0, 8, 3]))
  with pytest.raises(ValueError, match="train-labels-idx1-ubyte.gz is not an idx file"): datasets.mnist()
  with open(cached("train-labels-idx1-ubyte.gz"), "wb") as f: f.write(gzip.compress(bytes([0, 0, 8, 1]) + struct.pack(">I", 9) + bytes(4)))
  with pytest.raises(ValueError, match="holds 4 bytes after its header"): datasets.mnist()

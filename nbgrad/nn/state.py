"""A model's tensors by name (state dicts), and reading and writing them: safetensors files, and the zip files
torch.save writes. Files are read whole into host memory; each tensor is made on the default device."""
from __future__ import annotations
import json
import math
import os
import pickle
import zipfile
from collections import OrderedDict
from typing import Any, Optional, Union
import numpy as np
from nbgrad.dtype import DType, dtypes
from nbgrad.helpers import MissingStateKeys, ShapeMismatch
from nbgrad.tensor import Tensor

# safetensors' dtype names
safe_dtypes = {"BOOL": dtypes.bool, "I8": dtypes.int8, "U8": dtypes.uint8, "I16": dtypes.int16, "U16": dtypes.uint16,
               "I32": dtypes.int32, "U32": dtypes.uint32, "I64": dtypes.int64, "U64": dtypes.uint64,
               "F16": dtypes.float16, "BF16": dtypes.bfloat16, "F32": dtypes.float32, "F64": dtypes.float64}
inverse_safe_dtypes = {dt: name for name, dt in safe_dtypes.items()}


def get_state_dict(obj, prefix: str = "", tensor_type=Tensor) -> dict[str, Tensor]:
  """Every tensor reachable through obj's attributes, lists, tuples and dicts, named by its path ("l1.weight",
  "layers.0.bias")."""
  if isinstance(obj, tensor_type): return {prefix.strip("."): obj}
  if hasattr(obj, "_asdict"): return get_state_dict(obj._asdict(), prefix, tensor_type)   # a namedtuple
  if isinstance(obj, OrderedDict): return get_state_dict(dict(obj), prefix, tensor_type)
  if hasattr(obj, "__dict__"): return get_state_dict(obj.__dict__, prefix, tensor_type)
  found: dict[str, Tensor] = {}
  if isinstance(obj, (list, tuple)):
    for i, x in enumerate(obj): found.update(get_state_dict(x, f"{prefix}{i}.", tensor_type))
  elif isinstance(obj, dict):
    for k, x in obj.items(): found.update(get_state_dict(x, f"{prefix}{k}.", tensor_type))
  return found


def get_parameters(obj) -> list[Tensor]:
  """The tensors of get_state_dict(obj), in its order."""
  return list(get_state_dict(obj).values())


def load_state_dict(model, state_dict: dict[str, Tensor], strict: bool = True, verbose: bool = True, consume: bool = False) -> None:
  """Gives each tensor of the model the values of the tensor of its name, moved to the model tensor's device. A
  float Tensor entry gives its dtype too, as tinygrad's (half weights make a half model); an int or bool entry for a
  float tensor is cast to that tensor's dtype, as torch's (a float weight given ints stayed ints, and stopped
  training), and so is an entry that is not a Tensor (a numpy array from np.load, float64: it made the model float64).
  strict: every model tensor must be in state_dict (a KeyError, and a RuntimeError as in
  torch, naming the missing ones; nothing is loaded then, nor when an entry's shape differs). consume: drops
  each loaded entry from state_dict. verbose is accepted for tinygrad's signature; nothing is printed."""
  if not isinstance(state_dict, dict): raise TypeError(f"load_state_dict takes a dict of tensors by name, got {type(state_dict).__name__}")
  targets = get_state_dict(model)
  missing = [name for name in targets if name not in state_dict]
  if strict and missing: raise MissingStateKeys(f"load_state_dict: the state dict has no tensor for {missing}")
  sources = {}   # every entry checked before any model tensor changes
  for name, target in targets.items():
    if name not in state_dict: continue
    source = state_dict[name]
    if not isinstance(source, Tensor): source = Tensor(source).cast(target.dtype)
    if source.shape != target.shape and source.numel() == target.numel() == 1:
      source = source.reshape(target.shape)   # torch's num_batches_tracked is 0-d, tinygrad's and nbgrad's (1,)
    if source.shape != target.shape:
      raise ShapeMismatch(f"load_state_dict: {name!r} has shape {source.shape} in the state dict, {target.shape} in the model")
    sources[name] = source.cast(target.dtype) if dtypes.is_float(target.dtype) and not dtypes.is_float(source.dtype) else source
  for name, source in sources.items():
    targets[name].replace(source.to(targets[name].device).detach()).realize()
    if consume: del state_dict[name]


# ---- safetensors: an 8-byte little-endian header length, a JSON header, then the tensors' bytes
def _file_bytes(fn: Union[Tensor, str, os.PathLike]) -> np.ndarray:
  if isinstance(fn, Tensor):
    if fn.dtype != dtypes.uint8 or fn.ndim != 1: raise TypeError(f"a safetensors Tensor must hold 1-D uint8 bytes, got {fn.dtype} {fn.shape}")
    return fn.numpy()
  return np.fromfile(_checked_path(fn, "safetensors file"), dtype=np.uint8)


def _checked_path(fn, what: str):
  if not isinstance(fn, (str, os.PathLike)): raise TypeError(f"the {what} must be a path (str or os.PathLike), got {type(fn).__name__}")
  return fn


def _storage_dtype(dtype: DType) -> np.dtype:
  """The numpy dtype that holds dtype's bytes: bfloat16, which numpy lacks, as its 16-bit patterns."""
  return np.dtype(np.uint16 if dtype == dtypes.bfloat16 else dtype.np)


def _tensor_of(array: np.ndarray, dtype: DType) -> Tensor:
  """array (of _storage_dtype(dtype)) as a tensor of dtype."""
  return Tensor(array).bitcast(dtypes.bfloat16) if dtype == dtypes.bfloat16 else Tensor(array)


def _array_as_tensor(values: np.ndarray, dtype: DType, shape) -> Tensor:
  """values (the raw little-endian bytes of dtype) as a tensor of shape."""
  storage = _storage_dtype(dtype).newbyteorder("<")
  return _tensor_of(np.frombuffer(values.tobytes(), dtype=storage).astype(storage.newbyteorder("="), copy=False).reshape(shape), dtype)


def safe_load_metadata(fn: Union[Tensor, str, os.PathLike]) -> tuple[Tensor, int, Any]:
  """(the file's bytes as a uint8 tensor, the header's length, the parsed header)."""
  data = _file_bytes(fn)
  header_length, header = _safetensors_header(data, fn)
  return Tensor(data), header_length, header


def _safetensors_header(data: np.ndarray, fn) -> tuple[int, dict]:
  where = fn if not isinstance(fn, Tensor) else "the tensor"
  if data.size < 8: raise ValueError(f"{where} is not a safetensors file: {data.size} bytes, no header length")
  header_length = int(data[:8].view("<u8")[0])
  if 8 + header_length > data.size: raise ValueError(f"{where} is not a safetensors file: a header of {header_length} bytes in {data.size}")
  try: header = json.loads(data[8:8 + header_length].tobytes())
  except (UnicodeDecodeError, json.JSONDecodeError) as e: raise ValueError(f"{where} has no valid safetensors header: {e}") from None
  if not isinstance(header, dict): raise ValueError(f"{where} has no valid safetensors header: a {type(header).__name__}")
  return header_length, header


def safe_load(fn: Union[Tensor, str, os.PathLike]) -> dict[str, Tensor]:
  """The tensors of a safetensors file (a path, or its bytes as a uint8 tensor), by name."""
  data = _file_bytes(fn)
  header_length, header = _safetensors_header(data, fn)
  start = 8 + header_length
  tensors = {}
  for name, entry in header.items():
    if name == "__metadata__": continue
    if not isinstance(entry, dict) or entry.get("dtype") not in safe_dtypes:
      raise ValueError(f"safetensors tensor {name!r} has an unknown dtype: {entry!r}")
    dtype, shape, offsets = safe_dtypes[entry["dtype"]], entry.get("shape"), entry.get("data_offsets")
    if not (isinstance(shape, list) and all(_is_count(n) for n in shape) and isinstance(offsets, list) and len(offsets) == 2
            and all(_is_count(n) for n in offsets)):
      raise ValueError(f"safetensors tensor {name!r}: shape {shape!r} and data_offsets {offsets!r} must be lists of non-negative integers")
    (begin, end), shape = offsets, tuple(shape)
    if end - begin != math.prod(shape) * dtype.itemsize or start + end > data.size:
      raise ValueError(f"safetensors tensor {name!r}: bytes {begin}..{end} of the {data.size - start} after the header "
                       f"do not hold {shape} of {dtype}")
    tensors[name] = _array_as_tensor(data[start + begin:start + end], dtype, shape)
  return tensors


def _is_count(n) -> bool: return isinstance(n, int) and not isinstance(n, bool) and n >= 0


def _tensor_bytes(t: Tensor) -> bytes:
  values = t.bitcast(dtypes.uint16) if t.dtype == dtypes.bfloat16 else t
  return np.asarray(values.detach().numpy(), order="C").astype(np.dtype(values.dtype.np).newbyteorder("<"), copy=False).tobytes()


def safe_save(tensors: dict[str, Tensor], fn: Union[str, os.PathLike], metadata: Optional[dict[str, Any]] = None):
  """Writes tensors (by name) to a safetensors file, with an optional string-to-string metadata dict."""
  if not isinstance(tensors, dict): raise TypeError(f"safe_save takes a dict of tensors by name, got a {type(tensors).__name__}")
  if metadata is not None and not (isinstance(metadata, dict) and all(isinstance(v, str) for kv in metadata.items() for v in kv)):
    raise TypeError(f"safetensors metadata must be a dict of str to str, got {metadata!r}")
  _checked_path(fn, "safetensors file")
  header: dict[str, Any] = {"__metadata__": metadata} if metadata else {}
  blobs, offset = [], 0
  for name, t in tensors.items():
    if not isinstance(name, str) or name == "__metadata__":
      raise ValueError(f"safe_save: a tensor's name must be a str other than '__metadata__' (the header's own key), got {name!r}")
    if not isinstance(t, Tensor): raise TypeError(f"safe_save: {name!r} is a {type(t).__name__}, not a Tensor")
    if t.dtype not in inverse_safe_dtypes: raise TypeError(f"safe_save: {name!r} has dtype {t.dtype}, which safetensors has no name for")
    blobs.append(_tensor_bytes(t))
    header[name] = {"dtype": inverse_safe_dtypes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(blobs[-1])]}
    offset += len(blobs[-1])
  text = json.dumps(header, separators=(",", ":"))
  text += " " * (-len(text) % 8)   # the tensors start 8-byte aligned
  with open(fn, "wb") as f:
    f.write(len(text).to_bytes(8, "little"))
    f.write(text.encode())
    for blob in blobs: f.write(blob)


# ---- torch.save's files: a pickle whose tensors name storages, kept as files beside it (zip) or after it
TORCH_STORAGES = {"FloatStorage": dtypes.float32, "DoubleStorage": dtypes.float64, "HalfStorage": dtypes.float16,
                  "BFloat16Storage": dtypes.bfloat16, "LongStorage": dtypes.int64, "IntStorage": dtypes.int32,
                  "ShortStorage": dtypes.int16, "CharStorage": dtypes.int8, "ByteStorage": dtypes.uint8, "BoolStorage": dtypes.bool,
                  "UInt16Storage": dtypes.uint16, "UInt32Storage": dtypes.uint32, "UInt64Storage": dtypes.uint64}


# torch 2's storages of the other dtypes are untyped (bytes), and the tensor names its dtype (_rebuild_tensor_v3)
UNTYPED_STORAGE = "UntypedStorage"
TORCH_DTYPES = {name: getattr(dtypes, name) for name in ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                                                          "uint64", "float16", "bfloat16", "float32", "float64")}


class _StorageType:
  def __init__(self, name: str):
    self.name = name
    self.dtype = dtypes.uint8 if name == UNTYPED_STORAGE else TORCH_STORAGES.get(name)


class _TorchDType:
  """A torch dtype a pickle names (torch.uint16), with its nbgrad dtype (None if nbgrad has none: float8, complex)."""
  def __init__(self, name: str): self.name, self.dtype = name, TORCH_DTYPES.get(name)


class _Stub:
  """What a pickled object of any class outside SAFE_CLASSES loads as (a model's, a callable's): no code runs."""
  def __init__(self, *args, **kwargs): pass
  def __setstate__(self, state): self.state = state


def _rebuild_tensor(storage, storage_offset, size, stride, requires_grad=None, backward_hooks=None, metadata=None) -> Tensor:
  dtype, values = storage
  flat = np.frombuffer(values, dtype=_storage_dtype(dtype))
  size, stride = tuple(size), tuple(stride)
  numbers = (storage_offset, *size, *stride)
  if len(stride) != len(size) or not all(_is_count(n) for n in numbers):
    raise ValueError(f"a torch tensor of size {size}, stride {stride} and storage offset {storage_offset}: these must be "
                     "non-negative integers, one stride per dimension")
  if 0 in size: return _tensor_of(np.zeros(size, flat.dtype), dtype)
  if (last := storage_offset + sum((n - 1) * s for n, s in zip(size, stride))) >= flat.size:
    raise ValueError(f"a torch tensor of size {size}, stride {stride} and storage offset {storage_offset} reads element "
                     f"{last} of a storage of {flat.size} elements ({len(values)} bytes): the file is damaged")
  view = np.lib.stride_tricks.as_strided(flat[storage_offset:], tuple(size), tuple(s * flat.itemsize for s in stride))
  return _tensor_of(np.array(view, order="C"), dtype)   # a copy (ascontiguousarray would make a 0-d view 1-d)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None) -> Tensor:
  """torch 2's form for the dtypes whose storage is untyped: storage holds bytes, dtype names what they are."""
  if not isinstance(dtype, _TorchDType) or dtype.dtype is None:
    raise TypeError(f"a torch tensor of dtype {getattr(dtype, 'name', dtype)}: nbgrad has no such dtype")
  _, values = storage
  return _rebuild_tensor((dtype.dtype, values), storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks, *state) -> Tensor: return data   # state: a Parameter's attributes


# what a checkpoint's pickle may build besides tensors: containers, numbers and numpy arrays
SAFE_CLASSES = {("collections", "OrderedDict"), ("_codecs", "encode"),
                *(("builtins", n) for n in ("set", "frozenset", "tuple", "list", "dict", "int", "float", "complex", "bool", "slice", "bytearray")),
                *((m, n) for m in ("numpy.core.multiarray", "numpy._core.multiarray") for n in ("_reconstruct", "scalar")),
                ("numpy", "ndarray"), ("numpy", "dtype")}


class _TorchUnpickler(pickle.Unpickler):
  """Unpickles what torch.save pickled, each storage's bytes from read_storage(key, dtype). skim: tensors load as
  None, so that a first pass can find the storages a file keeps after its pickle."""
  def __init__(self, file, read_storage, fn, skim=False):
    super().__init__(file)
    self.read_storage, self.fn, self.skim = read_storage, fn, skim

  def find_class(self, module: str, name: str):
    if module == "torch._utils" and name == "_rebuild_tensor_v2": return (lambda *args, **kwargs: None) if self.skim else _rebuild_tensor
    if module == "torch._utils" and name == "_rebuild_tensor_v3": return (lambda *args, **kwargs: None) if self.skim else _rebuild_tensor_v3
    if module == "torch._utils" and name in ("_rebuild_parameter", "_rebuild_parameter_with_state"): return _rebuild_parameter
    if (module == "torch" and name.endswith("Storage")) or (module, name) == ("torch.storage", UNTYPED_STORAGE): return _StorageType(name)
    if module == "torch" and (name in TORCH_DTYPES or name.startswith(("float8", "complex"))): return _TorchDType(name)
    if ({"__builtin__": "builtins"}.get(module, module), name) in SAFE_CLASSES: return super().find_class(module, name)   # protocol 2's name
    if module == "torch" and name == "Size": return tuple
    return _Stub   # never a function: unpickling must not run code the file names

  def persistent_load(self, pid):
    kind, storage_type, key = pid[:3]   # ("storage", its type, its key, its device, its size[, a view's metadata])
    if kind != "storage" or not isinstance(storage_type, _StorageType): raise ValueError(f"{self.fn}: an unknown torch storage {pid!r}")
    if storage_type.dtype is None: raise TypeError(f"{self.fn}: torch storage type {storage_type.name} has no nbgrad dtype")
    return storage_type.dtype, self.read_storage(key, storage_type.dtype)


LEGACY_MAGIC = 0x1950A86A20F9469CFC6C   # the first pickle of a file torch.save wrote in its format before 1.6


def torch_load(fn: Union[str, os.PathLike]) -> dict[str, Tensor]:
  """What torch.save wrote to fn (a state dict, or any nesting of dicts and lists of tensors), with its tensors as
  nbgrad Tensors: the zip files torch writes by default, and its earlier format (_use_new_zipfile_serialization=False).
  Objects of other classes load as stubs holding their pickled state."""
  try: return _torch_load_any(_checked_path(fn, "torch file"))
  except (pickle.UnpicklingError, EOFError, KeyError, IndexError, AttributeError, zipfile.BadZipFile) as e:
    raise ValueError(f"{fn} is damaged: {type(e).__name__}: {e}") from e


def _torch_load_any(fn):
  if not zipfile.is_zipfile(fn): return _torch_load_legacy(fn)
  with zipfile.ZipFile(fn) as archive:
    pickles = [n for n in archive.namelist() if n == "data.pkl" or n.endswith("/data.pkl")]
    if not pickles: raise ValueError(f"{fn} holds no data.pkl: not a file torch.save wrote")
    data_folder = pickles[0][:-len("data.pkl")] + "data/"   # the storages sit in data/ beside data.pkl
    with archive.open(pickles[0]) as f: return _TorchUnpickler(f, lambda key, dtype: archive.read(data_folder + key), fn).load()


def _torch_load_legacy(fn):
  """The format before zip files: pickles of the magic number, the protocol and the machine's sizes, the object, the
  storages' keys in order, then each storage as its element count (8 bytes) and its bytes."""
  with open(fn, "rb") as f:
    dtypes_of: dict = {}
    def skim(): return _TorchUnpickler(f, lambda key, dtype: dtypes_of.setdefault(key, dtype), fn, skim=True).load()
    try: magic = skim()
    except Exception: magic = None   # any bytes that are no pickle: the error below says what the file should be
    if magic != LEGACY_MAGIC:
      raise ValueError(f"{fn} is neither a zip file nor torch's earlier format: torch_load reads what torch.save writes")
    skim(), skim()   # the protocol version, the machine's sizes
    start = f.tell()
    skim()   # the object, its tensors as None: the storages' dtypes
    storages = {}
    for key in skim():
      count = int.from_bytes(f.read(8), "little")
      storages[key] = f.read(count * dtypes_of[key].itemsize)
      if len(storages[key]) != count * dtypes_of[key].itemsize:
        raise ValueError(f"{fn} is damaged: storage {key} has {len(storages[key])} of its {count * dtypes_of[key].itemsize} bytes")
    f.seek(start)
    return _TorchUnpickler(f, lambda key, dtype: storages[key], fn).load()

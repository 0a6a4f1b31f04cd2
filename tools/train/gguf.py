"""A small GGUF v3 writer (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).

Layout: magic "GGUF", version 3, tensor count and metadata count (uint64), the metadata
key/value pairs, the tensor infos (name, dimension count, dimensions innermost first, type,
offset into the data section), padding to the alignment, then the tensor data, each tensor
starting at a multiple of the alignment. All little-endian.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

# Metadata value types.
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
# Tensor types (ggml_type).
GGML_F32, GGML_F16 = 0, 1
ALIGNMENT = 32


@dataclass
class Value:
    type: int
    value: object
    elem_type: int = -1  # for arrays


def u32(v: int) -> Value:
    return Value(UINT32, int(v))


def i32(v: int) -> Value:
    return Value(INT32, int(v))


def f32(v: float) -> Value:
    return Value(FLOAT32, float(v))


def boolean(v: bool) -> Value:
    return Value(BOOL, bool(v))


def string(v: str) -> Value:
    return Value(STRING, v)


def array(elem_type: int, values: list) -> Value:
    return Value(ARRAY, list(values), elem_type)


_SCALAR = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i",
           FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}
_NUMPY = {UINT8: "<u1", INT8: "<i1", UINT16: "<u2", INT16: "<i2", UINT32: "<u4", INT32: "<i4",
          FLOAT32: "<f4", UINT64: "<u8", INT64: "<i8", FLOAT64: "<f8"}


def _string(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(type_: int, v, elem_type: int = -1) -> bytes:
    if type_ == STRING:
        return _string(v)
    if type_ == ARRAY:
        head = struct.pack("<IQ", elem_type, len(v))
        if elem_type == STRING:
            return head + b"".join(_string(s) for s in v)
        if elem_type in _NUMPY:
            return head + np.asarray(v, dtype=_NUMPY[elem_type]).tobytes()
        return head + b"".join(_value(elem_type, x) for x in v)
    return struct.pack(_SCALAR[type_], v)


def _pad(n: int) -> int:
    return (ALIGNMENT - n % ALIGNMENT) % ALIGNMENT


def write(path: str, metadata: dict[str, Value], tensors: list[tuple[str, np.ndarray]]) -> None:
    """tensors: (name, array) with arrays float32 or float16 in numpy (row-major) order; GGUF's
    dimensions are the numpy shape reversed."""
    out = bytearray(b"GGUF")
    out += struct.pack("<IQQ", 3, len(tensors), len(metadata))
    for key, val in metadata.items():
        out += _string(key) + struct.pack("<I", val.type) + _value(val.type, val.value, val.elem_type)
    offset = 0
    blobs = []
    for name, arr in tensors:
        if arr.dtype == np.float32:
            gtype = GGML_F32
        elif arr.dtype == np.float16:
            gtype = GGML_F16
        else:
            raise ValueError(f"{name}: unsupported dtype {arr.dtype}")
        dims = list(reversed(arr.shape))
        out += _string(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", gtype, offset)
        data = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        blobs.append(data)
        offset += len(data) + _pad(len(data))
    out += b"\0" * _pad(len(out))
    with open(path, "wb") as f:
        f.write(out)
        for data in blobs:
            f.write(data)
            f.write(b"\0" * _pad(len(data)))


def _read_value(buf: memoryview, at: int, type_: int) -> tuple[object, int]:
    if type_ == STRING:
        n = struct.unpack_from("<Q", buf, at)[0]
        return bytes(buf[at + 8:at + 8 + n]).decode("utf-8"), at + 8 + n
    if type_ == ARRAY:
        elem_type, n = struct.unpack_from("<IQ", buf, at)
        at += 12
        if elem_type in _NUMPY:
            size = np.dtype(_NUMPY[elem_type]).itemsize * n
            return np.frombuffer(buf[at:at + size], dtype=_NUMPY[elem_type]), at + size
        values = []
        for _ in range(n):
            v, at = _read_value(buf, at, elem_type)
            values.append(v)
        return values, at
    fmt = _SCALAR[type_]
    return struct.unpack_from(fmt, buf, at)[0], at + struct.calcsize(fmt)


def read(path: str) -> tuple[dict[str, object], dict[str, np.ndarray]]:
    """The metadata and the F32/F16 tensors of a GGUF file (numpy shape = GGUF dimensions
    reversed, as write() takes them); other tensor types are refused."""
    with open(path, "rb") as f:
        buf = memoryview(f.read())
    if bytes(buf[:4]) != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    version, n_tensors, n_meta = struct.unpack_from("<IQQ", buf, 4)
    if version != 3:
        raise ValueError(f"{path}: GGUF version {version}, this reader knows 3")
    at, meta = 24, {}
    for _ in range(n_meta):
        key, at = _read_value(buf, at, STRING)
        type_ = struct.unpack_from("<I", buf, at)[0]
        meta[key], at = _read_value(buf, at + 4, type_)
    infos = []
    for _ in range(n_tensors):
        name, at = _read_value(buf, at, STRING)
        n_dims = struct.unpack_from("<I", buf, at)[0]
        dims = struct.unpack_from(f"<{n_dims}Q", buf, at + 4)
        gtype, offset = struct.unpack_from("<IQ", buf, at + 4 + 8 * n_dims)
        at += 4 + 8 * n_dims + 12
        infos.append((name, dims, gtype, offset))
    alignment = int(meta.get("general.alignment", ALIGNMENT))
    data_start = at + (alignment - at % alignment) % alignment
    tensors = {}
    for name, dims, gtype, offset in infos:
        if gtype not in (GGML_F32, GGML_F16):
            raise ValueError(f"{path}: tensor {name} has ggml type {gtype}; only F32/F16 are read")
        dtype = np.dtype("<f4" if gtype == GGML_F32 else "<f2")
        count = int(np.prod(dims))
        start = data_start + offset
        arr = np.frombuffer(buf[start:start + count * dtype.itemsize], dtype=dtype)
        tensors[name] = arr.reshape(tuple(reversed(dims))).copy()
    return meta, tensors

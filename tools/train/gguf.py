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

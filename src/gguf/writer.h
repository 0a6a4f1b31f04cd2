// GGUF writer: builds a GGUF v3 file from metadata and tensors.
//
// Layout (the same one llama.cpp writes, so a file read and written back is byte-identical):
// header, metadata in insertion order, tensor infos in insertion order, zero padding up to
// general.alignment (default 32), then each tensor's bytes followed by zero padding to the
// alignment; tensor offsets are relative to the data section. A file without tensors ends right
// after its metadata, as vocab-only files do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/dtype.h"
#include "base/result.h"
#include "gguf/gguf.h"

namespace strata::gguf {

class Writer {
 public:
  // Sets `key`; an existing key keeps its position in the file, a new one is appended.
  void set(std::string_view key, Value value);
  // Removes `key`; false if it was not set.
  bool remove(std::string_view key);
  const Value* find(std::string_view key) const;
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  // Copies every metadata entry of `file` in file order, general.alignment included.
  void copy_metadata(const File& file);
  // Sets general.alignment (uint32); tensor data offsets become multiples of it.
  void set_alignment(uint32_t alignment) { set("general.alignment", Value::uint32(alignment)); }

  // Adds a tensor whose bytes stay owned by the caller and must stay valid until the last
  // write()/serialize() (e.g. a TensorInfo's data inside an open File).
  // kInvalidArgument if the name repeats, the shape is not 1..4 dims of >= 1, the row length is
  // not a multiple of the type's block size, or `size` is not the shape's byte size.
  Status add_tensor_view(std::string name, DType type, std::vector<uint64_t> dims,
                         const uint8_t* data, size_t size);
  // Adds a tensor of an open File unchanged (its bytes viewed in place; the File must stay open).
  Status add_tensor_view(const TensorInfo& tensor) {
    return add_tensor_view(tensor.name, tensor.type, tensor.dims, tensor.data, tensor.n_bytes);
  }
  // Adds a tensor that owns its bytes.
  Status add_tensor(std::string name, DType type, std::vector<uint64_t> dims,
                    std::vector<uint8_t> bytes);
  // Adds a tensor whose bytes are produced only while the file is written: `generate` fills
  // exactly the shape's byte size at `dst`, once per write()/serialize(), tensors in insertion
  // order. write() holds one generated tensor in memory at a time, so files larger than memory
  // (synthesized or quantized models) stream to disk. Same validation as add_tensor_view.
  using TensorGenerator = std::function<void(uint8_t* dst)>;
  Status add_tensor_generator(std::string name, DType type, std::vector<uint64_t> dims,
                              TensorGenerator generate);
  size_t tensor_count() const { return tensors_.size(); }

  // The whole file image in memory (tests, small files).
  Result<std::vector<uint8_t>> serialize() const;
  // Writes to `path`.tmp and renames it to `path`, so a failed write never leaves a partial file
  // at `path`. kInvalidArgument for an inconsistent Value (named by key), kIo if the OS refuses.
  Status write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    DType type;
    std::vector<uint64_t> dims;
    std::vector<uint8_t> owned;
    const uint8_t* data = nullptr;
    size_t size = 0;
    TensorGenerator generate;  // set instead of `data` for generated tensors
  };

  // Shape, type and name checks shared by every way of adding a tensor; returns the byte size.
  Result<size_t> check_tensor(const std::string& name, DType type,
                              const std::vector<uint64_t>& dims) const;

  // Header, metadata and tensor infos, padded to the alignment when tensors follow.
  Result<std::vector<uint8_t>> encode_header(uint64_t* alignment) const;

  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace strata::gguf

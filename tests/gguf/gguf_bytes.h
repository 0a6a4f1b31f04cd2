// Hand-assembles GGUF images byte by byte, independently of gguf::Writer, so that tests can build
// both valid files (as an oracle for the writer) and files with exactly one thing wrong.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "platform/mapped_file.h"

namespace strata::gguf::testing {

class GgufBytes {
 public:
  GgufBytes& u8(uint8_t v) { return le(v, 1); }
  GgufBytes& u16(uint16_t v) { return le(v, 2); }
  GgufBytes& u32(uint32_t v) { return le(v, 4); }
  GgufBytes& u64(uint64_t v) { return le(v, 8); }
  GgufBytes& f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return u32(bits);
  }
  GgufBytes& str(std::string_view s) {
    u64(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
    return *this;
  }
  // magic "GGUF", version, tensor_count, metadata_kv_count
  GgufBytes& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    for (char c : std::string_view("GGUF")) bytes.push_back(static_cast<uint8_t>(c));
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  GgufBytes& kv_u32(std::string_view key, uint32_t v) {
    return str(key).u32(static_cast<uint32_t>(ValueType::kUint32)).u32(v);
  }
  GgufBytes& kv_string(std::string_view key, std::string_view v) {
    return str(key).u32(static_cast<uint32_t>(ValueType::kString)).str(v);
  }
  GgufBytes& tensor_info(std::string_view name, const std::vector<uint64_t>& dims, uint32_t type,
                         uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
  GgufBytes& pad_to(size_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
    return *this;
  }
  GgufBytes& fill(size_t n, uint8_t value) {
    bytes.insert(bytes.end(), n, value);
    return *this;
  }

  std::vector<uint8_t> bytes;

 private:
  GgufBytes& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) bytes.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
};

// Parses bytes that must outlive the returned File.
inline Result<std::unique_ptr<File>> parse_bytes(const std::vector<uint8_t>& bytes) {
  return File::parse(MappedFile::from_memory(bytes.data(), bytes.size()));
}

}  // namespace strata::gguf::testing

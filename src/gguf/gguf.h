// GGUF reader: metadata and tensor views over a read-only file image.
//
// Format (GGUF spec, versions 2 and 3), all little-endian:
//   header:  magic "GGUF", uint32 version, uint64 tensor_count, uint64 metadata_kv_count
//   kv:      gguf_string key, uint32 value_type, value
//   tensor:  gguf_string name, uint32 n_dimensions, uint64 dimensions[n], uint32 type, uint64
//   offset data:    at align_up(end of tensor infos, general.alignment (default 32)); each tensor's
//   data at
//            data_start + offset.
// dimensions[0] is the fastest-varying (row length), as in ggml's ne[].
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/dtype.h"
#include "base/result.h"
#include "platform/mapped_file.h"

namespace strata::gguf {

inline constexpr uint32_t kMaxDims = 4;            // GGML_MAX_DIMS: n_dimensions is 1..4
inline constexpr int kMaxArrayDepth = 16;          // arrays of arrays; writers nest at most 2 deep
inline constexpr uint64_t kDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT

// gguf_metadata_value_type ids.
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

struct Value;
// An array keeps its element type so a writer can reproduce it exactly (e.g. an empty array).
struct Array {
  ValueType element_type = ValueType::kUint8;
  std::vector<Value> values;
};

struct Value {
  ValueType type = ValueType::kUint8;
  // Integers of every width are held widened; `type` records the stored width.
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> data;

  std::optional<int64_t> as_int() const;    // any integer type (uint64 above INT64_MAX: nullopt)
  std::optional<uint64_t> as_uint() const;  // any integer type holding a value >= 0
  std::optional<double> as_float() const;   // any numeric type
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;
  const Array* as_array() const;

  // Values of each GGUF type, for the writer and for tests.
  static Value uint8(uint8_t v) { return {ValueType::kUint8, uint64_t{v}}; }
  static Value int8(int8_t v) { return {ValueType::kInt8, int64_t{v}}; }
  static Value uint16(uint16_t v) { return {ValueType::kUint16, uint64_t{v}}; }
  static Value int16(int16_t v) { return {ValueType::kInt16, int64_t{v}}; }
  static Value uint32(uint32_t v) { return {ValueType::kUint32, uint64_t{v}}; }
  static Value int32(int32_t v) { return {ValueType::kInt32, int64_t{v}}; }
  static Value uint64(uint64_t v) { return {ValueType::kUint64, v}; }
  static Value int64(int64_t v) { return {ValueType::kInt64, v}; }
  static Value float32(float v) { return {ValueType::kFloat32, double{v}}; }
  static Value float64(double v) { return {ValueType::kFloat64, v}; }
  static Value boolean(bool v) { return {ValueType::kBool, v}; }
  static Value string(std::string v) { return {ValueType::kString, std::move(v)}; }
  static Value array(ValueType element_type, std::vector<Value> values) {
    return {ValueType::kArray, Array{element_type, std::move(values)}};
  }
  static Value string_array(const std::vector<std::string>& values);
  static Value float32_array(const std::vector<float>& values);
  static Value int32_array(const std::vector<int32_t>& values);
};

// Same type and same value; floating-point NaNs compare equal to each other so that a value read
// back from a file equals the one written.
bool operator==(const Value& a, const Value& b);
bool operator==(const Array& a, const Array& b);

// The spec's name of a value type ("uint32", "string", "array"); "unknown" for ids past float64.
std::string_view value_type_name(ValueType type);
// True for the eight integer value types (any width, signed or not).
bool is_integer_type(ValueType type);

struct TensorInfo {
  std::string name;
  DType type = DType::kF32;
  std::vector<uint64_t> dims;  // dims[0] = row length (ne[0])
  uint64_t offset = 0;         // relative to the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // points into the file image; valid while the File lives

  uint64_t rows() const { return dims.empty() ? 0 : n_elements / dims[0]; }
};

class File {
 public:
  // Opens and fully validates a GGUF file. Errors name the problem (and the tensor or key):
  // kInvalidFile for corrupt or inconsistent contents, kUnsupported for GGUF v1, big-endian files
  // and unknown tensor types, kOutOfRange past strata's limits (2^24 metadata values including
  // array elements, 2^20 tensors), kNotFound / kIo from opening the file.
  static Result<std::unique_ptr<File>> open(const std::string& path,
                                            MappedFile::Mode mode = MappedFile::Mode::kMmap);
  // Parses an image that is already in memory (tests, fuzzing). For MappedFile::from_memory the
  // bytes must outlive the File.
  static Result<std::unique_ptr<File>> parse(std::unique_ptr<MappedFile> image);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  // Start of the data section: the end of the tensor infos rounded up to alignment(). A file
  // without tensors may end before it (vocab-only files do).
  uint64_t data_offset() const { return data_offset_; }
  const MappedFile& image() const { return *image_; }
  // Writable image bytes (resident images only, else nullptr), for a model that rearranges its
  // weight tensors in place; the file's tensor data is then the model's, not GGUF's.
  uint8_t* mutable_image_data() { return image_->mutable_data(); }

  // Metadata in file order.
  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  const Array* get_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // The tensor or a kNotFound error naming it.
  Result<const TensorInfo*> require_tensor(std::string_view name) const;

 private:
  File() = default;
  std::unique_ptr<MappedFile> image_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;

  friend class Parser;
};

// Human-readable rendering of a value (strings quoted, long arrays abbreviated), for `strata info`.
// Arrays longer than max_array_items show their first items and the count; strings longer than
// max_string_bytes (0 = no limit) are cut with "...". Control characters are escaped, so the
// result is always one line.
std::string format_value(const Value& value, size_t max_array_items = 8,
                         size_t max_string_bytes = 0);

}  // namespace strata::gguf

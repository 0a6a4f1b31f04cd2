// GGUF reader: parses and validates the header, metadata and tensor infos of a file image, then
// points each TensorInfo at its bytes inside the image (zero-copy).
//
// Every count and length read from the file is checked against the bytes that remain before it
// is used to allocate or advance, and all offset arithmetic is overflow-checked, so a corrupt or
// hostile file yields an Error and never an out-of-bounds read or an allocation far larger than
// the file.
#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "gguf/cursor.h"
#include "gguf/gguf.h"
#include "gguf/names.h"

namespace strata::gguf {
namespace {

// Smallest encodings, used to reject counts that the remaining bytes cannot hold:
// a kv is key length (8) + type (4) + at least a 1-byte value; a tensor info is name length (8)
// + n_dimensions (4) + type (4) + offset (8).
constexpr uint64_t kMinKvBytes = 13;
constexpr uint64_t kMinTensorInfoBytes = 24;
// Parsed values cost ~50 bytes each however few bytes encode them, so their number is capped
// (largest real vocabularies: ~1.5M values for tokens, scores, types and merges); likewise
// tensor infos (real models: a few thousand).
constexpr uint64_t kMaxMetadataValues = uint64_t{1} << 24;
constexpr uint64_t kMaxTensors = uint64_t{1} << 20;

Error invalid(std::string message) {
  return make_error(ErrorCode::kInvalidFile, std::move(message));
}

std::string truncated(const std::string& what, const Cursor& c) {
  return what + ": unexpected end of file at offset " + std::to_string(c.position()) +
         " (file size " + std::to_string(c.size()) + "; file truncated or corrupt)";
}

// Bytes the smallest element of each type occupies; 0 for ids that are not value types.
uint64_t min_encoded_bytes(uint32_t type) {
  switch (static_cast<ValueType>(type)) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kBool:
      return 1;
    case ValueType::kUint16:
    case ValueType::kInt16:
      return 2;
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kFloat32:
      return 4;
    case ValueType::kUint64:
    case ValueType::kInt64:
    case ValueType::kFloat64:
    case ValueType::kString:  // the uint64 length of an empty string
      return 8;
    case ValueType::kArray:  // element type + uint64 count of an empty array
      return 12;
  }
  return 0;
}

// Overflow-checked a + b and a * b.
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
}
bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

}  // namespace

// Fills a File from its image. A class (rather than free functions) so that it can be File's
// friend and hold the cursor and the current error context in one place.
class Parser {
 public:
  explicit Parser(File* file) : file_(file), cur_(file->image_->data(), file->image_->size()) {}

  Status run() {
    STRATA_RETURN_IF_ERROR(parse_header());
    STRATA_RETURN_IF_ERROR(parse_metadata());
    STRATA_RETURN_IF_ERROR(apply_alignment());
    STRATA_RETURN_IF_ERROR(parse_tensor_infos());
    return place_tensors();
  }

 private:
  template <typename T>
  Result<T> read(const std::string& what) {
    std::optional<T> v = cur_.read_le<T>();
    if (!v) return invalid(truncated(what, cur_));
    return *v;
  }

  Result<std::string> read_string(const std::string& what) {
    STRATA_ASSIGN_OR_RETURN(uint64_t n, read<uint64_t>(what));
    if (n > cur_.remaining()) {
      return invalid(what + ": string length " + std::to_string(n) + " exceeds remaining " +
                     std::to_string(cur_.remaining()) + " bytes (file truncated or corrupt)");
    }
    return std::string(cur_.take(static_cast<size_t>(n)));
  }

  Status parse_header() {
    const MappedFile& image = *file_->image_;
    if (image.size() < 4) {
      return invalid("file too short for a GGUF header (" + std::to_string(image.size()) +
                     " bytes; file truncated or not a GGUF file)");
    }
    std::string_view magic = cur_.take(4);
    if (magic != "GGUF") {
      return invalid("not a GGUF file: magic is " + quoted_name(magic) + ", expected \"GGUF\"");
    }
    STRATA_ASSIGN_OR_RETURN(uint32_t version, read<uint32_t>("header"));
    if (version == 1) {
      return make_error(ErrorCode::kUnsupported,
                        "GGUF version 1 is not supported (strata reads versions 2 and 3); "
                        "re-convert the model with a current llama.cpp");
    }
    if (version != 2 && version != 3) {
      // A big-endian file (allowed since v3) stores the version byte-swapped.
      uint32_t swapped = __builtin_bswap32(version);
      if (swapped >= 1 && swapped <= 3) {
        return make_error(
            ErrorCode::kUnsupported,
            "big-endian GGUF files are not supported; use a little-endian conversion");
      }
      return make_error(ErrorCode::kUnsupported,
                        "GGUF version " + std::to_string(version) +
                            " is not supported (strata reads versions 2 and 3)");
    }
    file_->version_ = version;
    STRATA_ASSIGN_OR_RETURN(tensor_count_, read<uint64_t>("header"));
    STRATA_ASSIGN_OR_RETURN(kv_count_, read<uint64_t>("header"));
    if (kv_count_ > cur_.remaining() / kMinKvBytes) {
      return invalid("header: metadata_kv_count " + std::to_string(kv_count_) +
                     " cannot fit in the remaining " + std::to_string(cur_.remaining()) +
                     " bytes (file truncated or corrupt)");
    }
    if (kv_count_ > kMaxMetadataValues) {
      return make_error(ErrorCode::kOutOfRange,
                        "header: metadata_kv_count " + std::to_string(kv_count_) +
                            " exceeds strata's limit of " + std::to_string(kMaxMetadataValues) +
                            " metadata values (file corrupt?)");
    }
    if (tensor_count_ > cur_.remaining() / kMinTensorInfoBytes) {
      return invalid("header: tensor_count " + std::to_string(tensor_count_) +
                     " cannot fit in the remaining " + std::to_string(cur_.remaining()) +
                     " bytes (file truncated or corrupt)");
    }
    if (tensor_count_ > kMaxTensors) {
      return make_error(ErrorCode::kOutOfRange,
                        "header: tensor_count " + std::to_string(tensor_count_) +
                            " exceeds strata's limit of " + std::to_string(kMaxTensors) +
                            " tensors (file corrupt?)");
    }
    return ok_status();
  }

  Status parse_metadata() {
    file_->metadata_.reserve(static_cast<size_t>(kv_count_));
    for (uint64_t i = 0; i < kv_count_; ++i) {
      STRATA_ASSIGN_OR_RETURN(std::string key, read_string("metadata key #" + std::to_string(i)));
      const std::string where = "metadata key " + quoted_name(key);
      if (file_->metadata_index_.count(key) != 0) return invalid("duplicate " + where);
      STRATA_ASSIGN_OR_RETURN(uint32_t type, read<uint32_t>(where));
      STRATA_ASSIGN_OR_RETURN(Value value, read_value(type, where, 0));
      file_->metadata_index_.emplace(key, file_->metadata_.size());
      file_->metadata_.emplace_back(std::move(key), std::move(value));
    }
    return ok_status();
  }

  Result<Value> read_value(uint32_t type_id, const std::string& where, int depth) {
    if (min_encoded_bytes(type_id) == 0) {
      return invalid(where + ": unknown value type " + std::to_string(type_id));
    }
    ++value_count_;  // the array checks below keep this within kMaxMetadataValues
    Value v;
    v.type = static_cast<ValueType>(type_id);
    switch (v.type) {
      case ValueType::kUint8: {
        STRATA_ASSIGN_OR_RETURN(uint8_t x, read<uint8_t>(where));
        v.data = uint64_t{x};
        break;
      }
      case ValueType::kInt8: {
        STRATA_ASSIGN_OR_RETURN(uint8_t x, read<uint8_t>(where));
        v.data = int64_t{static_cast<int8_t>(x)};
        break;
      }
      case ValueType::kUint16: {
        STRATA_ASSIGN_OR_RETURN(uint16_t x, read<uint16_t>(where));
        v.data = uint64_t{x};
        break;
      }
      case ValueType::kInt16: {
        STRATA_ASSIGN_OR_RETURN(uint16_t x, read<uint16_t>(where));
        v.data = int64_t{static_cast<int16_t>(x)};
        break;
      }
      case ValueType::kUint32: {
        STRATA_ASSIGN_OR_RETURN(uint32_t x, read<uint32_t>(where));
        v.data = uint64_t{x};
        break;
      }
      case ValueType::kInt32: {
        STRATA_ASSIGN_OR_RETURN(uint32_t x, read<uint32_t>(where));
        v.data = int64_t{static_cast<int32_t>(x)};
        break;
      }
      case ValueType::kUint64: {
        STRATA_ASSIGN_OR_RETURN(uint64_t x, read<uint64_t>(where));
        v.data = x;
        break;
      }
      case ValueType::kInt64: {
        STRATA_ASSIGN_OR_RETURN(uint64_t x, read<uint64_t>(where));
        v.data = static_cast<int64_t>(x);
        break;
      }
      case ValueType::kFloat32: {
        STRATA_ASSIGN_OR_RETURN(uint32_t x, read<uint32_t>(where));
        float f;
        static_assert(sizeof(f) == sizeof(x));
        __builtin_memcpy(&f, &x, sizeof(f));
        v.data = double{f};
        break;
      }
      case ValueType::kFloat64: {
        STRATA_ASSIGN_OR_RETURN(uint64_t x, read<uint64_t>(where));
        double d;
        __builtin_memcpy(&d, &x, sizeof(d));
        v.data = d;
        break;
      }
      case ValueType::kBool: {
        STRATA_ASSIGN_OR_RETURN(uint8_t x, read<uint8_t>(where));
        if (x > 1) return invalid(where + ": bool value " + std::to_string(x) + " is not 0 or 1");
        v.data = x == 1;
        break;
      }
      case ValueType::kString: {
        STRATA_ASSIGN_OR_RETURN(std::string s, read_string(where));
        v.data = std::move(s);
        break;
      }
      case ValueType::kArray: {
        STRATA_ASSIGN_OR_RETURN(Array a, read_array(where, depth));
        v.data = std::move(a);
        break;
      }
    }
    return v;
  }

  Result<Array> read_array(const std::string& where, int depth) {
    if (depth >= kMaxArrayDepth) {
      return invalid(where + ": arrays nested more than " + std::to_string(kMaxArrayDepth) +
                     " deep (file corrupt)");
    }
    STRATA_ASSIGN_OR_RETURN(uint32_t element_type, read<uint32_t>(where));
    uint64_t min_bytes = min_encoded_bytes(element_type);
    if (min_bytes == 0) {
      return invalid(where + ": unknown array element type " + std::to_string(element_type));
    }
    STRATA_ASSIGN_OR_RETURN(uint64_t count, read<uint64_t>(where));
    if (count > cur_.remaining() / min_bytes) {
      return invalid(where + ": array of " + std::to_string(count) + " " +
                     std::string(value_type_name(static_cast<ValueType>(element_type))) +
                     " elements exceeds remaining " + std::to_string(cur_.remaining()) +
                     " bytes (file truncated or corrupt)");
    }
    if (count > kMaxMetadataValues - std::min(value_count_, kMaxMetadataValues)) {
      return make_error(ErrorCode::kOutOfRange,
                        where + ": array of " + std::to_string(count) +
                            " elements takes the metadata past strata's limit of " +
                            std::to_string(kMaxMetadataValues) + " values (file corrupt?)");
    }
    Array a;
    a.element_type = static_cast<ValueType>(element_type);
    a.values.reserve(static_cast<size_t>(count));
    for (uint64_t i = 0; i < count; ++i) {
      // The element's position is only spelled out for errors, keeping the common path cheap.
      Result<Value> element = read_value(element_type, where, depth + 1);
      if (!element.ok()) {
        const std::string& msg = element.error().message;
        std::string indexed = where + "[" + std::to_string(i) + "]";
        return make_error(element.error().code,
                          indexed + msg.substr(std::min(msg.size(), where.size())));
      }
      a.values.push_back(std::move(element).value());
    }
    return a;
  }

  Status apply_alignment() {
    const Value* v = file_->find("general.alignment");
    if (v == nullptr) {
      file_->alignment_ = kDefaultAlignment;
      return ok_status();
    }
    std::optional<uint64_t> a = is_integer_type(v->type) ? v->as_uint() : std::nullopt;
    if (!a) {
      return invalid(
          "metadata key 'general.alignment': must be an unsigned integer (uint32), got " +
          format_value(*v, 4, 40));
    }
    if (*a == 0 || (*a & (*a - 1)) != 0) {
      return invalid("metadata key 'general.alignment': must be a non-zero power of two, got " +
                     std::to_string(*a));
    }
    file_->alignment_ = *a;
    return ok_status();
  }

  Status parse_tensor_infos() {
    file_->tensors_.reserve(static_cast<size_t>(tensor_count_));
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      TensorInfo t;
      STRATA_ASSIGN_OR_RETURN(t.name, read_string("tensor info #" + std::to_string(i)));
      const std::string where = "tensor " + quoted_name(t.name);
      if (file_->tensor_index_.count(t.name) != 0) return invalid("duplicate " + where);
      STRATA_ASSIGN_OR_RETURN(uint32_t n_dims, read<uint32_t>(where));
      if (n_dims < 1 || n_dims > kMaxDims) {
        return invalid(where + ": n_dimensions is " + std::to_string(n_dims) +
                       ", must be between 1 and " + std::to_string(kMaxDims));
      }
      t.dims.resize(n_dims);
      uint64_t n_elements = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        STRATA_ASSIGN_OR_RETURN(t.dims[d], read<uint64_t>(where));
        if (t.dims[d] == 0) {
          return invalid(where + ": dimension " + std::to_string(d) + " is 0, must be at least 1");
        }
        // ggml counts elements in int64_t, so the product must also fit there.
        if (mul_overflows(n_elements, t.dims[d], &n_elements) ||
            n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          return invalid(where + ": element count " + shape_string(t.dims, d + 1) +
                         " overflows 64 bits (file corrupt)");
        }
      }
      t.n_elements = n_elements;
      STRATA_ASSIGN_OR_RETURN(uint32_t type_id, read<uint32_t>(where));
      std::optional<DTypeTraits> traits = dtype_traits(type_id);
      if (!traits) {
        return make_error(ErrorCode::kUnsupported,
                          where + ": unknown tensor type " + std::to_string(type_id) +
                              " (a newer quantization format? update strata or re-quantize)");
      }
      t.type = static_cast<DType>(type_id);
      if (t.dims[0] % traits->block_size != 0) {
        return invalid(where + ": row length " + std::to_string(t.dims[0]) +
                       " is not a multiple of the " + std::string(traits->name) + " block size " +
                       std::to_string(traits->block_size));
      }
      if (mul_overflows(n_elements / traits->block_size, traits->type_size, &t.n_bytes)) {
        return invalid(where + ": byte size overflows 64 bits (file corrupt)");
      }
      STRATA_ASSIGN_OR_RETURN(t.offset, read<uint64_t>(where));
      file_->tensor_index_.emplace(t.name, file_->tensors_.size());
      file_->tensors_.push_back(std::move(t));
    }
    return ok_status();
  }

  // The data section starts at the end of the tensor infos rounded up to the alignment. Files
  // without tensors may end right after the metadata (vocab-only files do), so only a file with
  // tensors needs its data section to lie inside it.
  Status place_tensors() {
    uint64_t end_of_infos = cur_.position();
    uint64_t a = file_->alignment_;
    uint64_t rounded;
    if (add_overflows(end_of_infos, a - 1, &rounded))
      return invalid("data section offset overflows");
    file_->data_offset_ = rounded / a * a;
    const uint64_t file_size = cur_.size();
    if (file_->tensors_.empty()) return ok_status();
    if (file_->data_offset_ > file_size) {
      return invalid("data section starts at offset " + std::to_string(file_->data_offset_) +
                     ", past the end of the file (size " + std::to_string(file_size) +
                     "; file truncated)");
    }
    const uint64_t data_size = file_size - file_->data_offset_;
    for (TensorInfo& t : file_->tensors_) {
      const std::string where = "tensor " + quoted_name(t.name);
      if (t.offset % a != 0) {
        return invalid(where + ": data offset " + std::to_string(t.offset) +
                       " is not a multiple of general.alignment " + std::to_string(a));
      }
      uint64_t end;
      if (add_overflows(t.offset, t.n_bytes, &end) || end > data_size) {
        return invalid(where + ": data extends past end of file (offset " +
                       std::to_string(t.offset) + ", size " + std::to_string(t.n_bytes) +
                       ", data section size " + std::to_string(data_size) + ", file size " +
                       std::to_string(file_size) + ")");
      }
      t.data = file_->image_->data() + file_->data_offset_ + t.offset;
    }
    // Sorted by offset, each tensor must end before the next begins.
    std::vector<const TensorInfo*> by_offset;
    by_offset.reserve(file_->tensors_.size());
    for (const TensorInfo& t : file_->tensors_) by_offset.push_back(&t);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* x, const TensorInfo* y) { return x->offset < y->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const TensorInfo& prev = *by_offset[i - 1];
      const TensorInfo& next = *by_offset[i];
      if (prev.offset + prev.n_bytes > next.offset) {
        return invalid("tensor " + quoted_name(next.name) + " (offset " +
                       std::to_string(next.offset) + ") overlaps tensor " + quoted_name(prev.name) +
                       " (offset " + std::to_string(prev.offset) + ", size " +
                       std::to_string(prev.n_bytes) + ")");
      }
    }
    return ok_status();
  }

  File* file_;
  Cursor cur_;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
  uint64_t value_count_ = 0;  // metadata values parsed so far, array elements included
};

Result<std::unique_ptr<File>> File::open(const std::string& path, MappedFile::Mode mode) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> image, MappedFile::open(path, mode));
  Result<std::unique_ptr<File>> file = parse(std::move(image));
  if (!file.ok()) return make_error(file.error().code, path + ": " + file.error().message);
  return file;
}

Result<std::unique_ptr<File>> File::parse(std::unique_ptr<MappedFile> image) {
  if (image == nullptr) return make_error(ErrorCode::kInvalidArgument, "no file image to parse");
  std::unique_ptr<File> file(new File());
  file->image_ = std::move(image);
  Parser parser(file.get());
  STRATA_RETURN_IF_ERROR(parser.run());
  return file;
}

const Value* File::find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

std::optional<int64_t> File::get_int(std::string_view key) const {
  const Value* v = find(key);
  return v ? v->as_int() : std::nullopt;
}

std::optional<uint64_t> File::get_uint(std::string_view key) const {
  const Value* v = find(key);
  return v ? v->as_uint() : std::nullopt;
}

std::optional<double> File::get_float(std::string_view key) const {
  const Value* v = find(key);
  return v ? v->as_float() : std::nullopt;
}

std::optional<bool> File::get_bool(std::string_view key) const {
  const Value* v = find(key);
  return v ? v->as_bool() : std::nullopt;
}

std::optional<std::string> File::get_string(std::string_view key) const {
  const Value* v = find(key);
  const std::string* s = v ? v->as_string() : nullptr;
  return s ? std::optional<std::string>(*s) : std::nullopt;
}

const Array* File::get_array(std::string_view key) const {
  const Value* v = find(key);
  return v ? v->as_array() : nullptr;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Result<const TensorInfo*> File::require_tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (t == nullptr) {
    return make_error(ErrorCode::kNotFound, image_->path() + ": no tensor " + quoted_name(name) +
                                                " (the file may be for a different architecture)");
  }
  return t;
}

}  // namespace strata::gguf

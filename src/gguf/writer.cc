// GGUF v3 writer (layout in writer.h). Values are checked against their declared types while
// they are encoded, so a Writer can never produce a file that the reader rejects.
#include "gguf/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "gguf/names.h"

namespace strata::gguf {
namespace {

constexpr uint32_t kVersion = 3;

Error bad_value(const std::string& where, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, where + ": " + what);
}

void put_le(std::vector<uint8_t>* out, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void put_string(std::vector<uint8_t>* out, std::string_view s) {
  put_le(out, s.size(), 8);
  out->insert(out->end(), s.begin(), s.end());
}

void pad_to(std::vector<uint8_t>* out, uint64_t alignment) {
  while (out->size() % alignment != 0) out->push_back(0);
}

uint64_t padded(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

// The value as an unsigned integer within [0, max] or as a signed one within [min, max],
// whichever alternative the Value holds; nullopt if it does not fit the declared width.
std::optional<uint64_t> fit_unsigned(const Value& v, uint64_t max) {
  std::optional<uint64_t> u = v.as_uint();
  if (!u || *u > max) return std::nullopt;
  return u;
}

std::optional<int64_t> fit_signed(const Value& v, int64_t min, int64_t max) {
  std::optional<int64_t> i = v.as_int();
  if (!i || *i < min || *i > max) return std::nullopt;
  return i;
}

Status encode_value(std::vector<uint8_t>* out, const Value& v, const std::string& where, int depth);

Status encode_unsigned(std::vector<uint8_t>* out, const Value& v, const std::string& where,
                       size_t bytes) {
  uint64_t max =
      bytes == 8 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << (8 * bytes)) - 1;
  std::optional<uint64_t> u = fit_unsigned(v, max);
  if (!u) {
    return bad_value(where, "value " + format_value(v, 4, 40) + " does not fit " +
                                std::string(value_type_name(v.type)));
  }
  put_le(out, *u, bytes);
  return ok_status();
}

Status encode_signed(std::vector<uint8_t>* out, const Value& v, const std::string& where,
                     size_t bytes) {
  int64_t max =
      bytes == 8 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (8 * bytes - 1)) - 1;
  std::optional<int64_t> i = fit_signed(v, -max - 1, max);
  if (!i) {
    return bad_value(where, "value " + format_value(v, 4, 40) + " does not fit " +
                                std::string(value_type_name(v.type)));
  }
  put_le(out, static_cast<uint64_t>(*i), bytes);
  return ok_status();
}

Status encode_value(std::vector<uint8_t>* out, const Value& v, const std::string& where,
                    int depth) {
  switch (v.type) {
    case ValueType::kUint8:
      return encode_unsigned(out, v, where, 1);
    case ValueType::kUint16:
      return encode_unsigned(out, v, where, 2);
    case ValueType::kUint32:
      return encode_unsigned(out, v, where, 4);
    case ValueType::kUint64:
      return encode_unsigned(out, v, where, 8);
    case ValueType::kInt8:
      return encode_signed(out, v, where, 1);
    case ValueType::kInt16:
      return encode_signed(out, v, where, 2);
    case ValueType::kInt32:
      return encode_signed(out, v, where, 4);
    case ValueType::kInt64:
      return encode_signed(out, v, where, 8);
    case ValueType::kFloat32:
    case ValueType::kFloat64: {
      const double* d = std::get_if<double>(&v.data);
      if (d == nullptr) return bad_value(where, "float value does not hold a double");
      if (v.type == ValueType::kFloat64) {
        uint64_t bits;
        std::memcpy(&bits, d, sizeof(bits));
        put_le(out, bits, 8);
        return ok_status();
      }
      if (std::isfinite(*d) && std::fabs(*d) > std::numeric_limits<float>::max()) {
        return bad_value(where, "value " + std::to_string(*d) + " is out of float32 range");
      }
      float f = static_cast<float>(*d);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      put_le(out, bits, 4);
      return ok_status();
    }
    case ValueType::kBool: {
      const bool* b = std::get_if<bool>(&v.data);
      if (b == nullptr) return bad_value(where, "bool value does not hold a bool");
      out->push_back(*b ? 1 : 0);
      return ok_status();
    }
    case ValueType::kString: {
      const std::string* s = std::get_if<std::string>(&v.data);
      if (s == nullptr) return bad_value(where, "string value does not hold a string");
      put_string(out, *s);
      return ok_status();
    }
    case ValueType::kArray: {
      const Array* a = std::get_if<Array>(&v.data);
      if (a == nullptr) return bad_value(where, "array value does not hold an Array");
      if (depth >= kMaxArrayDepth) {
        return bad_value(where, "arrays nested more than " + std::to_string(kMaxArrayDepth) +
                                    " deep cannot be read back");
      }
      if (value_type_name(a->element_type) == "unknown") {
        return bad_value(where, "unknown array element type " +
                                    std::to_string(static_cast<uint32_t>(a->element_type)));
      }
      put_le(out, static_cast<uint32_t>(a->element_type), 4);
      put_le(out, a->values.size(), 8);
      for (size_t i = 0; i < a->values.size(); ++i) {
        const Value& e = a->values[i];
        if (e.type != a->element_type) {
          return bad_value(where + "[" + std::to_string(i) + "]",
                           "element of type " + std::string(value_type_name(e.type)) +
                               " in an array of " + std::string(value_type_name(a->element_type)));
        }
        if (e.type == ValueType::kArray) {
          STRATA_RETURN_IF_ERROR(
              encode_value(out, e, where + "[" + std::to_string(i) + "]", depth + 1));
        } else {
          STRATA_RETURN_IF_ERROR(encode_value(out, e, where, depth + 1));
        }
      }
      return ok_status();
    }
  }
  return bad_value(where, "unknown value type " + std::to_string(static_cast<uint32_t>(v.type)));
}

Error io_error(const std::string& what, const std::string& path) {
  return make_error(ErrorCode::kIo, what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

void Writer::set(std::string_view key, Value value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::string(key), std::move(value));
}

bool Writer::remove(std::string_view key) {
  for (auto it = metadata_.begin(); it != metadata_.end(); ++it) {
    if (it->first == key) {
      metadata_.erase(it);
      return true;
    }
  }
  return false;
}

const Value* Writer::find(std::string_view key) const {
  for (const auto& [k, v] : metadata_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Writer::copy_metadata(const File& file) {
  for (const auto& [key, value] : file.metadata()) set(key, value);
}

Result<size_t> Writer::check_tensor(const std::string& name, DType type,
                                    const std::vector<uint64_t>& dims) const {
  const std::string where = "tensor " + quoted_name(name);
  auto invalid = [&](const std::string& what) {
    return make_error(ErrorCode::kInvalidArgument, where + ": " + what);
  };
  if (name.empty()) return invalid("name is empty");
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) return invalid("added twice");
  }
  if (dims.empty() || dims.size() > kMaxDims) {
    return invalid("has " + std::to_string(dims.size()) + " dimensions, must have 1 to " +
                   std::to_string(kMaxDims));
  }
  uint64_t n = 1;
  for (uint64_t d : dims) {
    if (d == 0) return invalid("shape " + shape_string(dims) + " has a zero dimension");
    if (__builtin_mul_overflow(n, d, &n) ||
        n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return invalid("shape " + shape_string(dims) + " has too many elements");
    }
  }
  DTypeTraits traits = strata::traits(type);
  if (dims[0] % traits.block_size != 0) {
    return invalid("row length " + std::to_string(dims[0]) + " is not a multiple of the " +
                   std::string(traits.name) + " block size " + std::to_string(traits.block_size));
  }
  uint64_t expected;
  if (__builtin_mul_overflow(n / traits.block_size, uint64_t{traits.type_size}, &expected) ||
      expected > std::numeric_limits<size_t>::max()) {
    return invalid("shape " + shape_string(dims) + " is too large");
  }
  return static_cast<size_t>(expected);
}

Status Writer::add_tensor_view(std::string name, DType type, std::vector<uint64_t> dims,
                               const uint8_t* data, size_t size) {
  STRATA_ASSIGN_OR_RETURN(size_t expected, check_tensor(name, type, dims));
  const std::string where = "tensor " + quoted_name(name);
  if (size != expected) {
    return make_error(ErrorCode::kInvalidArgument,
                      where + ": " + std::to_string(size) + " bytes given, expected " +
                          std::to_string(expected) + " for " + std::string(dtype_name(type)) + " " +
                          shape_string(dims));
  }
  if (data == nullptr) return make_error(ErrorCode::kInvalidArgument, where + ": no data");
  tensors_.push_back({std::move(name), type, std::move(dims), {}, data, size, {}});
  return ok_status();
}

Status Writer::add_tensor_generator(std::string name, DType type, std::vector<uint64_t> dims,
                                    TensorGenerator generate) {
  STRATA_ASSIGN_OR_RETURN(size_t size, check_tensor(name, type, dims));
  if (!generate) {
    return make_error(ErrorCode::kInvalidArgument,
                      "tensor " + quoted_name(name) + ": no generator");
  }
  tensors_.push_back(
      {std::move(name), type, std::move(dims), {}, nullptr, size, std::move(generate)});
  return ok_status();
}

Status Writer::add_tensor(std::string name, DType type, std::vector<uint64_t> dims,
                          std::vector<uint8_t> bytes) {
  STRATA_RETURN_IF_ERROR(
      add_tensor_view(std::move(name), type, std::move(dims), bytes.data(), bytes.size()));
  // The vector's heap buffer keeps its address when moved, so `data` stays valid.
  tensors_.back().owned = std::move(bytes);
  return ok_status();
}

Result<std::vector<uint8_t>> Writer::encode_header(uint64_t* alignment) const {
  *alignment = kDefaultAlignment;
  if (const Value* a = find("general.alignment")) {
    std::optional<uint64_t> n = a->as_uint();
    if (!n || *n == 0 || (*n & (*n - 1)) != 0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "metadata key 'general.alignment': must be a non-zero power of two, got " +
                            format_value(*a, 4, 40));
    }
    // Padding is materialized, so cap it where tensors make it real.
    if (!tensors_.empty() && *n > (uint64_t{1} << 30)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "metadata key 'general.alignment': " + std::to_string(*n) +
                            " is too large for a file with tensors (at most 2^30)");
    }
    *alignment = *n;
  }
  std::vector<uint8_t> out;
  for (char c : std::string_view("GGUF")) out.push_back(static_cast<uint8_t>(c));
  put_le(&out, kVersion, 4);
  put_le(&out, tensors_.size(), 8);
  put_le(&out, metadata_.size(), 8);
  for (const auto& [key, value] : metadata_) {
    put_string(&out, key);
    put_le(&out, static_cast<uint32_t>(value.type), 4);
    STRATA_RETURN_IF_ERROR(encode_value(&out, value, "metadata key " + quoted_name(key), 0));
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    put_string(&out, t.name);
    put_le(&out, t.dims.size(), 4);
    for (uint64_t d : t.dims) put_le(&out, d, 8);
    put_le(&out, static_cast<uint32_t>(t.type), 4);
    put_le(&out, offset, 8);
    offset += padded(t.size, *alignment);
  }
  if (!tensors_.empty()) pad_to(&out, *alignment);
  return out;
}

Result<std::vector<uint8_t>> Writer::serialize() const {
  uint64_t alignment;
  STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> out, encode_header(&alignment));
  for (const PendingTensor& t : tensors_) {
    if (t.generate) {
      const size_t at = out.size();
      out.resize(at + t.size);
      t.generate(out.data() + at);
    } else {
      out.insert(out.end(), t.data, t.data + t.size);
    }
    pad_to(&out, alignment);
  }
  return out;
}

Status Writer::write(const std::string& path) const {
  uint64_t alignment;
  STRATA_ASSIGN_OR_RETURN(std::vector<uint8_t> header, encode_header(&alignment));
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return io_error("cannot create", tmp);
  static constexpr uint8_t kZeros[64] = {};
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  // One buffer, as large as the largest generated tensor, reused for each of them.
  std::vector<uint8_t> generated;
  for (const PendingTensor& t : tensors_) {
    if (!ok) break;
    const uint8_t* data = t.data;
    if (t.generate) {
      if (generated.size() < t.size) {
        generated.clear();
        generated.shrink_to_fit();
        generated.resize(t.size);
      }
      t.generate(generated.data());
      data = generated.data();
    }
    ok = std::fwrite(data, 1, t.size, f) == t.size;
    for (uint64_t pad = padded(t.size, alignment) - t.size; ok && pad > 0;) {
      size_t n = pad < sizeof(kZeros) ? static_cast<size_t>(pad) : sizeof(kZeros);
      ok = std::fwrite(kZeros, 1, n, f) == n;
      pad -= n;
    }
  }
  // fsync before rename so that a crash cannot leave `path` naming a file whose data never
  // reached the disk.
  ok = ok && std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  Error failure = ok ? Error{} : io_error("cannot write", tmp);
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    failure = io_error("cannot write", tmp);
  }
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    failure = io_error("cannot rename " + tmp + " to", path);
  }
  if (!ok) {
    std::remove(tmp.c_str());
    return failure;
  }
  return ok_status();
}

}  // namespace strata::gguf

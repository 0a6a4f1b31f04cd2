#include "quant/imatrix.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "gguf/gguf.h"

namespace strata::quant {
namespace {

constexpr std::string_view kSumSuffix = ".in_sum2";
constexpr std::string_view kCountSuffix = ".counts";
// Longest tensor name a legacy entry may carry (GGML_MAX_NAME is 64; generous).
constexpr int32_t kMaxNameLength = 1024;

Error invalid(const std::string& path, const std::string& why) {
  return make_error(ErrorCode::kInvalidFile,
                    "importance matrix " + path + ": " + why +
                        " (expected a llama-imatrix .gguf or legacy .dat file)");
}

Status check_values(const std::string& path, const std::string& name,
                    const std::vector<float>& values) {
  for (float v : values) {
    if (!std::isfinite(v) || v < 0) {
      return invalid(path, "entry " + name + " has a negative or non-finite value");
    }
  }
  return ok_status();
}

Result<std::vector<float>> read_f32_tensor(const std::string& path, const gguf::TensorInfo& t) {
  if (t.type != DType::kF32) {
    return invalid(
        path, "tensor " + t.name + " is " + std::string(dtype_name(t.type)) + ", expected f32");
  }
  std::vector<float> v(t.n_elements);
  std::memcpy(v.data(), t.data, t.n_elements * sizeof(float));
  return v;
}

Result<ImportanceMatrix> load_gguf(const std::string& path) {
  Result<std::unique_ptr<gguf::File>> opened = gguf::File::open(path);
  if (!opened.ok()) return invalid(path, opened.error().message);
  const gguf::File& file = **opened;
  ImportanceMatrix m;
  m.format = "gguf";
  for (const gguf::TensorInfo& sums : file.tensors()) {
    if (!sums.name.ends_with(kSumSuffix)) continue;
    const std::string name = sums.name.substr(0, sums.name.size() - kSumSuffix.size());
    const gguf::TensorInfo* counts = file.find_tensor(name + std::string(kCountSuffix));
    if (counts == nullptr)
      return invalid(path, "tensor " + sums.name + " has no " + name + ".counts");
    const uint64_t n_mat = sums.dims.size() > 1 ? sums.dims[1] : 1;
    if (sums.dims.size() > 2 || counts->n_elements != n_mat || counts->dims[0] != 1) {
      return invalid(path, "tensors " + sums.name + " and " + counts->name +
                               " disagree on the number of matrices");
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<float> values, read_f32_tensor(path, sums));
    STRATA_ASSIGN_OR_RETURN(std::vector<float> n, read_f32_tensor(path, *counts));
    const size_t columns = sums.dims[0];
    for (size_t j = 0; j < n_mat; ++j) {
      if (!std::isfinite(n[j]) || n[j] < 0) {
        return invalid(path, "tensor " + counts->name + " has a negative or non-finite count");
      }
      for (size_t i = 0; i < columns; ++i) {
        float& v = values[j * columns + i];
        v = n[j] > 0 ? v / n[j] : 1.0f;
      }
    }
    STRATA_RETURN_IF_ERROR(check_values(path, name, values));
    m.values.emplace(name, std::move(values));
  }
  if (m.values.empty()) return invalid(path, "no *.in_sum2 tensors");
  return m;
}

// Sequential little-endian reads from a byte buffer; every read is bounds-checked.
class ByteReader {
 public:
  explicit ByteReader(const std::vector<char>& bytes) : bytes_(bytes) {}
  bool read(void* dst, size_t n) {
    if (bytes_.size() - pos_ < n) return false;
    std::memcpy(dst, bytes_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool read_i32(int32_t* v) { return read(v, sizeof(*v)); }

 private:
  const std::vector<char>& bytes_;
  size_t pos_ = 0;
};

Result<ImportanceMatrix> load_legacy(const std::string& path, const std::vector<char>& bytes) {
  ByteReader in(bytes);
  int32_t n_entries = 0;
  if (!in.read_i32(&n_entries) || n_entries <= 0) return invalid(path, "no entries");
  ImportanceMatrix m;
  m.format = "dat";
  for (int32_t e = 0; e < n_entries; ++e) {
    const std::string where = "entry " + std::to_string(e);
    int32_t length = 0;
    if (!in.read_i32(&length) || length <= 0 || length > kMaxNameLength) {
      return invalid(path, where + " has a bad name length");
    }
    std::string name(static_cast<size_t>(length), '\0');
    int32_t calls = 0, n_values = 0;
    if (!in.read(name.data(), name.size()) || !in.read_i32(&calls) || !in.read_i32(&n_values) ||
        n_values <= 0) {
      return invalid(path, where + " (" + name + ") is truncated or has no values");
    }
    std::vector<float> values(static_cast<size_t>(n_values));
    if (!in.read(values.data(), values.size() * sizeof(float))) {
      return invalid(path, where + " (" + name + ") is truncated");
    }
    if (calls > 0) {
      for (float& v : values) v /= static_cast<float>(calls);
    }
    STRATA_RETURN_IF_ERROR(check_values(path, name, values));
    if (!m.values.emplace(name, std::move(values)).second) {
      return invalid(path, "entry " + name + " appears twice");
    }
  }
  return m;
}

}  // namespace

const std::vector<float>* ImportanceMatrix::find(const std::string& tensor_name) const {
  const auto it = values.find(tensor_name);
  return it == values.end() ? nullptr : &it->second;
}

Result<ImportanceMatrix> load_importance_matrix(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const ErrorCode code = errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo;
    return make_error(code, "cannot open importance matrix " + path + ": " + std::strerror(errno));
  }
  char magic[4] = {};
  file.read(magic, sizeof(magic));
  if (file.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0) return load_gguf(path);
  file.clear();
  file.seekg(0);
  const std::vector<char> bytes{std::istreambuf_iterator<char>(file),
                                std::istreambuf_iterator<char>()};
  return load_legacy(path, bytes);
}

}  // namespace strata::quant

// libFuzzer target: parses arbitrary bytes as GGUF. Anything that parses is read end to end
// (every metadata value, every tensor byte, both summaries) and written back with the Writer; the
// rewritten image must parse to the same metadata and tensor bytes. Crashes, sanitizer reports
// and __builtin_trap() on a broken invariant are findings.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gguf/describe.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"

namespace {

using strata::MappedFile;
using strata::gguf::File;
using strata::gguf::TensorInfo;
using strata::gguf::Value;

void check(bool condition) {
  if (!condition) __builtin_trap();
}

// Reads every accessor of a value so that any inconsistency inside it is exercised.
uint64_t touch(const Value& v) {
  uint64_t sum = v.as_int().value_or(0) + v.as_uint().value_or(0) +
                 static_cast<uint64_t>(v.as_float().has_value()) + v.as_bool().value_or(false);
  if (const std::string* s = v.as_string()) sum += s->size();
  if (const strata::gguf::Array* a = v.as_array()) {
    for (const Value& e : a->values) {
      check(e.type == a->element_type);
      sum += touch(e);
    }
  }
  return sum;
}

void round_trip(const File& file) {
  strata::gguf::Writer writer;
  writer.copy_metadata(file);
  for (const TensorInfo& t : file.tensors()) {
    check(writer.add_tensor_view(t.name, t.type, t.dims, t.data, t.n_bytes).ok());
  }
  strata::Result<std::vector<uint8_t>> bytes = writer.serialize();
  check(bytes.ok());
  auto again = File::parse(MappedFile::from_memory(bytes->data(), bytes->size()));
  check(again.ok());
  check((*again)->metadata().size() == file.metadata().size());
  for (size_t i = 0; i < file.metadata().size(); ++i) {
    check((*again)->metadata()[i] == file.metadata()[i]);
  }
  check((*again)->tensors().size() == file.tensors().size());
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const TensorInfo& a = (*again)->tensors()[i];
    const TensorInfo& b = file.tensors()[i];
    check(a.name == b.name && a.type == b.type && a.dims == b.dims && a.n_bytes == b.n_bytes);
    check(std::memcmp(a.data, b.data, a.n_bytes) == 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = File::parse(MappedFile::from_memory(data, size));
  if (!file.ok()) {
    check(!file.error().message.empty());
    check(file.error().message.find('\n') == std::string::npos);
    return 0;
  }
  const File& f = **file;
  uint64_t sum = 0;
  for (const auto& [key, value] : f.metadata()) {
    check(f.find(key) == &value);
    sum += touch(value) + strata::gguf::format_value(value).size();
  }
  for (const TensorInfo& t : f.tensors()) {
    check(f.find_tensor(t.name) == &t);
    check(t.data >= data && t.n_bytes <= static_cast<uint64_t>(data + size - t.data));
    for (uint64_t i = 0; i < t.n_bytes; ++i) sum += t.data[i];
  }
  sum += strata::gguf::describe_text(f).size();
  sum += strata::gguf::describe_json(f).dump().size();
  round_trip(f);
  // Keeps the reads above from being optimized away.
  volatile uint64_t sink = sum;
  (void)sink;
  return 0;
}

// Read-only views of files: memory-mapped (zero-copy, pages come from the page cache) or read
// into resident memory (immune to page-cache eviction mid-run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"

namespace strata {

class MappedFile {
 public:
  enum class Mode { kMmap, kResident };

  static Result<std::unique_ptr<MappedFile>> open(const std::string& path, Mode mode = Mode::kMmap);
  // Wraps caller-owned bytes (tests, fuzzing); the bytes must outlive the view.
  static std::unique_ptr<MappedFile> from_memory(const uint8_t* data, size_t size);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  // The bytes of a resident image, for rearranging them in place; nullptr for a mapping or a
  // caller-owned view.
  uint8_t* mutable_data() { return resident_.get(); }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  Mode mode() const { return mode_; }

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  Mode mode_ = Mode::kMmap;
  bool owns_mapping_ = false;
  std::unique_ptr<uint8_t[], void (*)(uint8_t*)> resident_{nullptr, [](uint8_t*) {}};
};

}  // namespace strata

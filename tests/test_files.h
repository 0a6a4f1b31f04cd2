// Files the engine's model-tool tests share: the stories260K model, a sample text, temporary
// output paths and whole-file reads.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace strata::test_files {

inline const char* kStories = "../shared/models/stories260K.gguf";
inline const char* kText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her friends. One day, she saw a big red ball under a tree.";

// A path in the test's temporary directory, removed when the test ends. The process id keeps
// test binaries that ctest runs in parallel apart.
class TempFile {
 public:
  explicit TempFile(const std::string& name)
      : path_(::testing::TempDir() + "/strata_" + std::to_string(::getpid()) + "_" + name) {}
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace strata::test_files

#include "platform/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace strata {
namespace {

TEST(MappedFileTest, BothModesSeeTheSameBytes) {
  std::string path = ::testing::TempDir() + "/mapped_file_test.bin";
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 5000; ++i) out.put(static_cast<char>(i * 7));
  }
  for (auto mode : {MappedFile::Mode::kMmap, MappedFile::Mode::kResident}) {
    auto file = MappedFile::open(path, mode);
    ASSERT_TRUE(file.ok()) << file.error().message;
    ASSERT_EQ((*file)->size(), 5000u);
    for (int i = 0; i < 5000; ++i) ASSERT_EQ((*file)->data()[i], static_cast<uint8_t>(i * 7));
  }
  std::remove(path.c_str());
}

TEST(MappedFileTest, MissingFileIsNotFound) {
  auto file = MappedFile::open("/nonexistent/strata/model.gguf");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().code, ErrorCode::kNotFound);
  EXPECT_NE(file.error().message.find("/nonexistent/strata/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace strata

// ScratchMapping (--kv-offload): zeroed, writable memory backed by a file nobody can open (none
// is left in the folder), and a folder that cannot hold it refused with its name.
#include "platform/scratch_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace strata {
namespace {

TEST(ScratchMappingTest, IsZeroedWritableAndLeavesNoFileBehind) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "strata-scratch-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  {
    Result<ScratchMapping> m = ScratchMapping::create(dir.string(), 3 << 20);
    ASSERT_TRUE(m.ok()) << m.error().message;
    ASSERT_EQ(m->size(), size_t{3} << 20);
    for (size_t i = 0; i < m->size(); i += 4096) EXPECT_EQ(m->data()[i], 0);
    for (size_t i = 0; i < m->size(); ++i) m->data()[i] = static_cast<unsigned char>(i * 7);
    ScratchMapping moved = std::move(m).value();
    for (size_t i = 0; i < moved.size(); i += 1237) {
      ASSERT_EQ(moved.data()[i], static_cast<unsigned char>(i * 7));
    }
    EXPECT_TRUE(std::filesystem::is_empty(dir));  // unlinked from the start
  }
  std::filesystem::remove_all(dir);
}

TEST(ScratchMappingTest, AFolderThatCannotHoldItIsNamed) {
  Result<ScratchMapping> m = ScratchMapping::create("/nonexistent/strata", 4096);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(m.error().message.find("--kv-offload /nonexistent/strata"), std::string::npos)
      << m.error().message;
}

}  // namespace
}  // namespace strata

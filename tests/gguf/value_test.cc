// Value accessors (integer width conversion where the value fits) and format_value.
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "gguf/gguf.h"

namespace strata::gguf {
namespace {

TEST(GgufValue, IntegerAccessorsConvertWhenTheValueFits) {
  EXPECT_EQ(Value::uint32(4294967295u).as_int(), 4294967295);
  EXPECT_EQ(Value::uint8(7).as_uint(), 7u);
  EXPECT_EQ(Value::int8(-5).as_int(), -5);
  EXPECT_FALSE(Value::int8(-5).as_uint().has_value());
  EXPECT_EQ(Value::int64(5).as_uint(), 5u);
  const uint64_t big = std::numeric_limits<uint64_t>::max();
  EXPECT_FALSE(Value::uint64(big).as_int().has_value());
  EXPECT_EQ(Value::uint64(big).as_uint(), big);
  EXPECT_EQ(Value::uint64(uint64_t{1} << 63).as_int(), std::nullopt);
  EXPECT_EQ(Value::uint64((uint64_t{1} << 63) - 1).as_int(), std::numeric_limits<int64_t>::max());
}

TEST(GgufValue, FloatAccessorAcceptsAnyNumber) {
  EXPECT_EQ(Value::float32(0.5f).as_float(), 0.5);
  EXPECT_EQ(Value::int16(-3).as_float(), -3.0);
  EXPECT_EQ(Value::uint64(1u << 20).as_float(), 1048576.0);
  // Floats are not silently truncated to integers, and bools are not numbers.
  EXPECT_FALSE(Value::float32(2.0f).as_int().has_value());
  EXPECT_FALSE(Value::boolean(true).as_float().has_value());
  EXPECT_FALSE(Value::boolean(true).as_int().has_value());
}

TEST(GgufValue, KindAccessorsAreExclusive) {
  Value s = Value::string("llama");
  ASSERT_NE(s.as_string(), nullptr);
  EXPECT_EQ(*s.as_string(), "llama");
  EXPECT_EQ(s.as_array(), nullptr);
  EXPECT_FALSE(s.as_int().has_value());
  EXPECT_FALSE(s.as_bool().has_value());
  EXPECT_EQ(Value::boolean(false).as_bool(), false);
  EXPECT_EQ(Value::uint8(1).as_bool(), std::nullopt);
  EXPECT_EQ(Value::uint8(1).as_string(), nullptr);
  Value a = Value::int32_array({1, 2});
  ASSERT_NE(a.as_array(), nullptr);
  EXPECT_EQ(a.as_array()->element_type, ValueType::kInt32);
  EXPECT_FALSE(a.as_int().has_value());
  // A Value whose payload disagrees with its type yields nothing rather than a wrong answer.
  Value inconsistent{ValueType::kString, uint64_t{3}};
  EXPECT_EQ(inconsistent.as_string(), nullptr);
  EXPECT_FALSE(inconsistent.as_int().has_value());
}

TEST(GgufValue, EqualityComparesTypeAndValue) {
  EXPECT_TRUE(Value::uint32(5) == Value::uint32(5));
  EXPECT_FALSE(Value::uint32(5) == Value::uint64(5));
  EXPECT_FALSE(Value::uint32(5) == Value::uint32(6));
  EXPECT_TRUE(Value::float32(std::numeric_limits<float>::quiet_NaN()) ==
              Value::float32(std::numeric_limits<float>::quiet_NaN()));
  EXPECT_FALSE(Value::array(ValueType::kInt32, {}) == Value::array(ValueType::kUint8, {}));
  EXPECT_TRUE(Value::string_array({"a"}) == Value::string_array({"a"}));
}

TEST(GgufValue, TypeNames) {
  EXPECT_EQ(value_type_name(ValueType::kUint32), "uint32");
  EXPECT_EQ(value_type_name(ValueType::kFloat64), "float64");
  EXPECT_EQ(value_type_name(ValueType::kArray), "array");
  EXPECT_EQ(value_type_name(static_cast<ValueType>(13)), "unknown");
}

TEST(GgufFormat, Scalars) {
  EXPECT_EQ(format_value(Value::uint32(2048)), "2048");
  EXPECT_EQ(format_value(Value::int64(-7)), "-7");
  EXPECT_EQ(format_value(Value::boolean(true)), "true");
  // float32 shortest round-trip text: 1e-5f is not exactly 1e-5, but prints as it.
  EXPECT_EQ(format_value(Value::float32(1e-5f)), "1e-05");
  EXPECT_EQ(format_value(Value::float32(0.1f)), "0.1");
  EXPECT_EQ(format_value(Value::float64(0.1)), "0.1");
  EXPECT_EQ(format_value(Value::float64(std::numeric_limits<double>::infinity())), "inf");
}

TEST(GgufFormat, StringsAreQuotedAndEscaped) {
  EXPECT_EQ(format_value(Value::string("llama")), "\"llama\"");
  EXPECT_EQ(format_value(Value::string("a\"b\\c\nd\x01")), "\"a\\\"b\\\\c\\nd\\x01\"");
  EXPECT_EQ(format_value(Value::string("it's")), "\"it's\"");
  EXPECT_EQ(format_value(Value::string("\xe2\x96\x81the")), "\"\xe2\x96\x81the\"");
  EXPECT_EQ(format_value(Value::string("abcdefgh"), 8, 3), "\"abc...\" (8 bytes)");
}

TEST(GgufFormat, LongArraysAreAbbreviated) {
  std::vector<int32_t> ids(10);
  for (int i = 0; i < 10; ++i) ids[i] = i;
  EXPECT_EQ(format_value(Value::int32_array(ids), 3), "[0, 1, 2, ...] (10 items)");
  EXPECT_EQ(format_value(Value::int32_array(ids), 10), "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]");
  EXPECT_EQ(format_value(Value::int32_array(ids), 0), "[...] (10 items)");
  EXPECT_EQ(format_value(Value::string_array({"<unk>", "<s>"})), "[\"<unk>\", \"<s>\"]");
  EXPECT_EQ(format_value(Value::array(ValueType::kUint8, {})), "[]");
  Value nested =
      Value::array(ValueType::kArray, {Value::int32_array({1, 2, 3}), Value::int32_array({})});
  EXPECT_EQ(format_value(nested, 2), "[[1, 2, ...] (3 items), []]");
}

}  // namespace
}  // namespace strata::gguf

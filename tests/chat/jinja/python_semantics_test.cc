// The Python behaviours templates rely on: float/str repr, json.dumps formatting, str methods.
// Expected values are Python 3.11's documented outputs for the same inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "chat/jinja/json_dump.h"
#include "chat/jinja/py_string.h"
#include "chat/jinja/template.h"
#include "chat/jinja/value.h"

namespace strata::jinja {
namespace {

TEST(PyFloatRepr, ShortestRoundTripWithPythonExponentRules) {
  EXPECT_EQ(py_float_repr(1.0), "1.0");
  EXPECT_EQ(py_float_repr(0.1), "0.1");
  EXPECT_EQ(py_float_repr(1e16), "1e+16");
  EXPECT_EQ(py_float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(py_float_repr(1e-5), "1e-05");
  EXPECT_EQ(py_float_repr(0.0001), "0.0001");
  EXPECT_EQ(py_float_repr(-0.0), "-0.0");
  EXPECT_EQ(py_float_repr(123.456), "123.456");
  EXPECT_EQ(py_float_repr(1.5e300), "1.5e+300");
  EXPECT_EQ(py_float_repr(2.5e-7), "2.5e-07");
  EXPECT_EQ(py_float_repr(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(py_float_repr(5e-324), "5e-324");
  EXPECT_EQ(py_float_repr(123456789012345678.0), "1.2345678901234568e+17");
  EXPECT_EQ(py_float_repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(py_float_repr(std::nan("")), "nan");
}

TEST(PyStringRepr, QuotesAndEscapesLikePython) {
  EXPECT_EQ(py_string_repr("abc"), "'abc'");
  EXPECT_EQ(py_string_repr("it's"), "\"it's\"");
  EXPECT_EQ(py_string_repr("a'b\"c"), "'a\\'b\"c'");
  EXPECT_EQ(py_string_repr("x\x01\x7f\u00e9\u00a0"), "'x\\x01\\x7f\u00e9\\xa0'");
  EXPECT_EQ(py_string_repr("a\nb\t\\"), "'a\\nb\\t\\\\'");
  EXPECT_EQ(py_string_repr("\u4f60\U0001F999"), "'\u4f60\U0001F999'");
}

TEST(JsonDumps, DefaultSeparatorsKeepOrderAndUnicode) {
  auto v = Value::from_json(
      nlohmann::ordered_json::parse(R"({"z": 1, "a": [1.0, true, null, "\u00e9\u001f"]})"));
  ASSERT_TRUE(v.ok());
  auto text = json_dumps(*v, JsonDumpOptions{});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "{\"z\": 1, \"a\": [1.0, true, null, \"\u00e9\\u001f\"]}");
}

TEST(JsonDumps, IndentMatchesPython) {
  auto v =
      Value::from_json(nlohmann::ordered_json::parse(R"({"a": [1, {"b": []}, {}], "c": "x"})"));
  ASSERT_TRUE(v.ok());
  JsonDumpOptions options;
  options.indent = "  ";
  options.item_separator = ",";
  auto text = json_dumps(*v, options);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(
      *text,
      "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    },\n    {}\n  ],\n  \"c\": \"x\"\n}");
}

TEST(JsonDumps, EnsureAsciiUsesSurrogatePairs) {
  JsonDumpOptions options;
  options.ensure_ascii = true;
  auto text = json_dumps(Value::string("\U0001F999\u00e9"), options);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "\"\\ud83e\\udd99\\u00e9\"");
}

TEST(JsonDumps, NonStringKeysAreCoercedAndUndefinedFails) {
  Dict d;
  d.items.emplace_back(Value::integer(1), Value::floating(2.0));
  d.items.emplace_back(Value::none(), Value::boolean(true));
  auto text = json_dumps(Value::dict(d), JsonDumpOptions{});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "{\"1\": 2.0, \"null\": true}");
  EXPECT_FALSE(json_dumps(Value::undefined(), JsonDumpOptions{}).ok());
}

TEST(PyStr, SplitStripSplitlinesUseUnicodeWhitespace) {
  EXPECT_EQ(py_split("a\u3000b  c", std::nullopt, -1), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(py_split("a,b,c", std::string_view(","), 1), (std::vector<std::string>{"a", "b,c"}));
  EXPECT_EQ(py_rsplit("a,b,c", std::string_view(","), 1), (std::vector<std::string>{"a,b", "c"}));
  EXPECT_EQ(py_splitlines("x\r\ny\rz\n"), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(py_splitlines("ab\u2028cd"), (std::vector<std::string>{"ab", "cd"}));
  EXPECT_EQ(py_strip("\u00e9a\u00e9", std::string_view("\u00e9"), true, true), "a");
  EXPECT_EQ(py_strip("\u00a0 x \n", std::nullopt, true, true), "x");
  EXPECT_EQ(py_replace("abc", "", "-", -1), "-a-b-c-");
  EXPECT_EQ(py_title("hello wORLD-x"), "Hello World-X");
}

TEST(PyEquality, NumbersCompareAcrossTypesContainersElementwise) {
  EXPECT_TRUE(py_equal(Value::integer(1), Value::floating(1.0)));
  EXPECT_TRUE(py_equal(Value::boolean(true), Value::integer(1)));
  EXPECT_FALSE(py_equal(Value::string("1"), Value::integer(1)));
  EXPECT_FALSE(py_equal(Value::list({Value::integer(1)}), Value::list({Value::integer(1)}, true)));
  EXPECT_FALSE(py_compare(Value::string("a"), Value::integer(1)).ok());
}

TEST(ContextOrder, DictIterationAndTojsonKeepInsertionOrder) {
  auto tmpl = Template::parse("{% for k in d %}{{ k }}{% endfor %} {{ d | tojson }} {{ d }}");
  ASSERT_TRUE(tmpl.ok());
  auto out =
      tmpl->render(nlohmann::ordered_json::parse(R"({"d": {"z": 1, "a": 2}})"), RenderOptions{});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "za {\"z\": 1, \"a\": 2} {'z': 1, 'a': 2}");
}

}  // namespace
}  // namespace strata::jinja

// Renders every chat template in ../shared/testdata/chat-templates/ with every conversation of
// conversations.json and compares with the output jinja2 produced (expected/<name>.json), in the
// environment transformers' apply_chat_template sets up (see that folder's README).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "chat/jinja/chat_template.h"

namespace strata::jinja {
namespace {

const char kDir[] = "../shared/testdata/chat-templates/";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::ordered_json read_json(const std::string& path) {
  return nlohmann::ordered_json::parse(read_file(path), nullptr, /*allow_exceptions=*/false);
}

struct RenderCase {
  std::string template_name;
  std::string case_name;
};

std::vector<RenderCase> all_cases() {
  std::vector<RenderCase> cases;
  auto manifest = read_json(std::string(kDir) + "manifest.json");
  auto conversations = read_json(std::string(kDir) + "conversations.json");
  if (!manifest.is_object() || !conversations.is_object()) return {{"missing_testdata", "none"}};
  for (const auto& [name, entry] : manifest["templates"].items())
    for (const auto& [case_name, conversation] : conversations.items())
      cases.push_back({name, case_name});
  return cases;
}

// The README pins strftime_now() to 2025-01-15 12:00:00.
std::tm fixed_now() {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 0;
  tm.tm_mday = 15;
  tm.tm_hour = 12;
  return tm;
}

class TemplateFilesTest : public ::testing::TestWithParam<RenderCase> {};

TEST_P(TemplateFilesTest, MatchesJinja2Render) {
  const RenderCase& param = GetParam();
  auto manifest = read_json(std::string(kDir) + "manifest.json");
  auto conversations = read_json(std::string(kDir) + "conversations.json");
  ASSERT_TRUE(manifest.is_object())
      << "cannot read " << kDir << "manifest.json (run from the repo root)";
  const auto& entry = manifest["templates"][param.template_name];
  const auto& conversation = conversations[param.case_name];
  auto expected_all = read_json(std::string(kDir) + entry["expected"].get<std::string>());
  const auto& expected = expected_all[param.case_name];
  std::string source = read_file(std::string(kDir) + entry["template"].get<std::string>());
  ASSERT_FALSE(source.empty());

  ChatTemplateInputs inputs;
  inputs.messages = conversation["messages"];
  inputs.tools = conversation["tools"];
  inputs.add_generation_prompt = conversation["add_generation_prompt"].get<bool>();
  if (entry["bos_token"].is_string()) inputs.bos_token = entry["bos_token"].get<std::string>();
  if (entry["eos_token"].is_string()) inputs.eos_token = entry["eos_token"].get<std::string>();
  RenderOptions options;
  options.now = fixed_now();

  auto result = render_chat(source, inputs, options);
  if (expected.contains("output")) {
    ASSERT_TRUE(result.ok()) << result.error().message;
    EXPECT_EQ(*result, expected["output"].get<std::string>());
  } else {
    ASSERT_FALSE(result.ok()) << "expected failure: " << expected["error"] << "\ngot:\n" << *result;
    // Messages from the template's own raise_exception() must come through verbatim; Python
    // runtime errors (TypeError, ...) only have to fail.
    if (entry["case_status"][param.case_name] == "TemplateError") {
      EXPECT_EQ(result.error().message, expected["error"].get<std::string>());
    }
  }
}

std::string case_test_name(const ::testing::TestParamInfo<RenderCase>& info) {
  std::string name = info.param.template_name + "__" + info.param.case_name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(ChatTemplates, TemplateFilesTest, ::testing::ValuesIn(all_cases()),
                         case_test_name);

}  // namespace
}  // namespace strata::jinja

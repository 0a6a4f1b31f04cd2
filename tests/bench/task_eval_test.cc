// `strata eval --task`: the scorer, the report's JSON, the prompts file, the heatmap, and a whole
// run on stories260K (which retrieves nothing: the structure and totals are what is checked).
#include "bench/task_eval.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/heatmap.h"
#include "test_files.h"

namespace strata::bench {
namespace {

using test_files::kStories;
using test_files::read_bytes;
using test_files::TempFile;

TEST(TaskScoreTest, LeadingWhitespaceIsDroppedAndTheAnswerMustComeFirst) {
  EXPECT_TRUE(score_answer(" 41547.", "41547"));
  EXPECT_TRUE(score_answer("41547", "41547"));
  EXPECT_TRUE(score_answer("\n  41547 is it", "41547"));
  EXPECT_FALSE(score_answer(" 41574.", "41547"));
  EXPECT_FALSE(score_answer(" 4154", "41547"));  // cut short
  EXPECT_FALSE(score_answer(" the key is 41547", "41547"));
  EXPECT_FALSE(score_answer("", "41547"));
  EXPECT_TRUE(score_answer(" ABCDE FGHIJ KLMNO", "ABCDE FGHIJ KLMNO"));
  EXPECT_FALSE(score_answer(" ABCDE  FGHIJ KLMNO", "ABCDE FGHIJ KLMNO"));
}

TaskEvalReport two_by_two() {
  TaskEvalReport r;
  r.model_path = "m.gguf";
  r.task = LongTask::kVt;
  r.seed = 3;
  r.samples = 2;
  r.lengths = {1024, 2048};
  r.depths = {0, 1};
  r.cells = {{1024, 0, 2, 2}, {2048, 0, 1, 2}, {1024, 1, 0, 2}, {2048, 1, 1, 2}};
  r.correct = 4;
  r.total = 8;
  r.ran = true;
  return r;
}

TEST(TaskReportTest, JsonHasTheTaskAccuracyAndCells) {
  const nlohmann::json j = nlohmann::json::parse(format_task_json(two_by_two()));
  EXPECT_EQ(j["task"], "vt");
  EXPECT_DOUBLE_EQ(j["accuracy"].get<double>(), 0.5);
  EXPECT_EQ(j["seed"], 3);
  EXPECT_EQ(j["samples"], 2);
  ASSERT_EQ(j["cells"].size(), 4u);
  const nlohmann::json& c = j["cells"][1];
  EXPECT_EQ(c["length"], 2048);
  EXPECT_EQ(c["depth"], 0.0);
  EXPECT_EQ(c["correct"], 1);
  EXPECT_EQ(c["total"], 2);
  const std::string table = format_task_table(two_by_two());
  EXPECT_NE(table.find(" 0.00     1.00    0.50"), std::string::npos) << table;
  EXPECT_NE(table.find("overall accuracy 0.500 (4/8)"), std::string::npos) << table;
}

TEST(TaskReportTest, HeatmapColoursCellsByAccuracyAndIsAPng) {
  const Image image = render_heatmap(two_by_two());
  ASSERT_GT(image.width, 2 * 80);
  ASSERT_EQ(image.rgb.size(), static_cast<size_t>(image.width) * image.height * 3);
  uint8_t red[3], green[3];
  accuracy_colour(0, red);
  accuracy_colour(1, green);
  EXPECT_GT(red[0], red[1]);
  EXPECT_GT(green[1], green[0]);
  // Cells are the only pixels of these colours: a green one (1.00) and a red one (0.00).
  size_t greens = 0, reds = 0;
  for (size_t p = 0; p < image.rgb.size(); p += 3) {
    greens += std::equal(green, green + 3, &image.rgb[p]);
    reds += std::equal(red, red + 3, &image.rgb[p]);
  }
  EXPECT_GT(greens, 1000u);
  EXPECT_GT(reds, 1000u);
  TempFile png("heatmap.png");
  ASSERT_TRUE(write_heatmap_png(png.path(), two_by_two()).ok());
  const std::vector<uint8_t> bytes = read_bytes(png.path());
  ASSERT_GT(bytes.size(), 8u);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 8),
            (std::vector<uint8_t>{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}));
}

TaskEvalOptions stories_passkey() {
  TaskEvalOptions o;
  o.engine.model_path = kStories;
  o.engine.threads = 2;
  o.task = LongTask::kPasskey;
  o.lengths = {256};
  o.depths = {0, 1};
  o.samples = 2;
  o.seed = 1;
  return o;
}

TEST(TaskEvalTest, PromptsAreWrittenAsJsonLinesWithoutLoadingTheModel) {
  TempFile prompts("prompts.jsonl");
  TaskEvalOptions o = stories_passkey();
  o.run = false;
  o.prompts_path = prompts.path();
  Result<TaskEvalReport> r = run_task_eval(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->ran);
  EXPECT_EQ(r->total, 4);
  std::ifstream in(prompts.path());
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(lines.size(), 4u);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i]["length"], 256);
    EXPECT_EQ(lines[i]["depth"], i < 2 ? 0.0 : 1.0);
    const std::string prompt = lines[i]["prompt"], answer = lines[i]["answer"];
    EXPECT_TRUE(prompt.starts_with("There is an important info"));
    EXPECT_NE(prompt.find("The pass key is " + answer + "."), std::string::npos);
  }
}

TEST(TaskEvalTest, PasskeyRunOnStoriesCountsEveryCase) {
  Result<TaskEvalReport> r = run_task_eval(stories_passkey());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->ran);
  EXPECT_EQ(r->total, 4);
  EXPECT_LE(r->correct, r->total);
  EXPECT_GT(r->prompt_tokens, 4u * 240);
  EXPECT_LE(r->prompt_tokens, 4u * 256);
  ASSERT_EQ(r->cells.size(), 2u);
  EXPECT_EQ(r->cells[0].depth, 0.0);
  EXPECT_EQ(r->cells[1].depth, 1.0);
  int correct = 0;
  for (const TaskCell& c : r->cells) {
    EXPECT_EQ(c.length, 256);
    EXPECT_EQ(c.total, 2);
    correct += c.correct;
  }
  EXPECT_EQ(correct, r->correct);
  // The same run again scores the same (greedy decoding of the same prompts).
  EXPECT_EQ(run_task_eval(stories_passkey())->correct, r->correct);
}

}  // namespace
}  // namespace strata::bench

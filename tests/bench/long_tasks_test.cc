// The long-context tasks' prompts: the trained formats of tools/train/tasks.py, needles where
// their depth says, token counts at the budget, and the same prompts for the same seed.
#include "bench/long_tasks.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "bench/task_eval.h"
#include "strata/tokenizer.h"
#include "test_files.h"

namespace strata::bench {
namespace {

using test_files::kStories;
using test_files::TempFile;

constexpr std::string_view kPasskeyIntro =
    "There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
    "I will quiz you about the important information there.\n";

const TextTokenizer& stories_tokenizer() {
  static const std::unique_ptr<TextTokenizer> tokenizer =
      std::move(TextTokenizer::load(kStories)).value();
  return *tokenizer;
}

TokenizeFn stories_tokenize() {
  return [](std::string_view text, bool add_special) {
    return stories_tokenizer().tokenize(text, add_special, false);
  };
}

int count_tokens(const std::string& prompt) {
  return static_cast<int>(stories_tokenizer().tokenize(prompt, true, false).size());
}

TaskEvalOptions options(LongTask task, std::vector<int> lengths, std::vector<double> depths,
                        uint64_t seed = 7, int samples = 1) {
  TaskEvalOptions o;
  o.task = task;
  o.lengths = std::move(lengths);
  o.depths = std::move(depths);
  o.seed = seed;
  o.samples = samples;
  return o;
}

std::vector<TaskCase> cases_of(const TaskEvalOptions& o) {
  Result<std::vector<TaskCase>> cases = make_task_cases(o, stories_tokenize());
  EXPECT_TRUE(cases.ok()) << cases.error().message;
  return cases.ok() ? *cases : std::vector<TaskCase>{};
}

// A haystack of numbered lines, so a line's place in the prompt is easy to read back.
class Haystack {
 public:
  Haystack() : file_("haystack.txt") {
    std::ofstream out(file_.path());
    for (int i = 0; i < 400; ++i) {
      out << "Line " << i << " of the story: the cat sat on the mat and looked at the dog.\n";
      if (i % 7 == 0) out << "   \n";  // blank lines are not part of the haystack
    }
  }
  const std::string& path() const { return file_.path(); }

 private:
  TempFile file_;
};

TEST(SplitMix64Test, MatchesTheReferenceSequenceAndMapsRangesUniformly) {
  // The first outputs of Vigna's splitmix64.c from state 0.
  SplitMix64 rng(0);
  EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ULL);
  SplitMix64 r(42);
  std::vector<int> seen(7, 0);
  for (int i = 0; i < 7000; ++i) ++seen[r.below(7)];
  for (int n : seen) EXPECT_NEAR(n, 1000, 150);
  for (int i = 0; i < 1000; ++i) {
    const double u = r.unit();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
  EXPECT_EQ(r.below(1), 0u);
}

TEST(LongTasksTest, SameSeedSamePromptsAndAnotherSeedOthers) {
  for (LongTask task : {LongTask::kPasskey, LongTask::kVt}) {
    const TaskEvalOptions o = options(task, {400, 500}, {0, 0.5, 1}, 7, 2);
    const std::vector<TaskCase> a = cases_of(o), b = cases_of(o);
    ASSERT_EQ(a.size(), 12u);
    std::set<std::string> distinct;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].prompt, b[i].prompt);
      EXPECT_EQ(a[i].answer, b[i].answer);
      distinct.insert(a[i].prompt);
    }
    EXPECT_EQ(distinct.size(), a.size());  // samples of one cell differ too
    const std::vector<TaskCase> c = cases_of(options(task, {400, 500}, {0, 0.5, 1}, 8, 2));
    size_t same = 0;
    for (size_t i = 0; i < a.size(); ++i) same += a[i].prompt == c[i].prompt;
    EXPECT_EQ(same, 0u);
  }
  // The seed of a case names it: the same case in a run with other cells is the same prompt.
  EXPECT_EQ(cases_of(options(LongTask::kPasskey, {500}, {0.5}))[0].prompt,
            cases_of(options(LongTask::kPasskey, {400, 500}, {0, 0.5}))[3].prompt);
}

TEST(LongTasksTest, PasskeyIsLandmarksFormat) {
  // stories260K's 512-entry vocabulary spends a token on every few characters, so its prompts
  // hold little filler per token; the lengths here leave room for several sentences.
  for (const TaskCase& c : cases_of(options(LongTask::kPasskey, {600}, {0, 0.3, 1}, 3, 3))) {
    const int key = std::stoi(c.answer);
    EXPECT_GE(key, 1);
    EXPECT_LE(key, 50000);
    EXPECT_EQ(std::to_string(key), c.answer);
    EXPECT_TRUE(c.prompt.starts_with(kPasskeyIntro)) << c.prompt;
    // On its own line; the filler goes on after it with a space, as tasks.py joins them.
    const std::string needle =
        "\nThe pass key is " + c.answer + ". Remember it. " + c.answer + " is the pass key.";
    const size_t at = c.prompt.find(needle);
    ASSERT_NE(at, std::string::npos) << c.prompt;
    const char after = c.prompt[at + needle.size()];
    EXPECT_TRUE(after == ' ' || after == '\n') << c.prompt;
    EXPECT_TRUE(c.prompt.ends_with(".\nWhat is the pass key? The pass key is")) << c.prompt;
    // The filler: the five sentences in their cycle, separated by single spaces.
    EXPECT_NE(c.prompt.find("The grass is green. The sky is blue. The sun is yellow. Here we go. "
                            "There and back again."),
              std::string::npos);
    EXPECT_EQ(c.prompt.find("  "), std::string::npos);
    EXPECT_FALSE(c.prompt.starts_with(" "));
  }
}

TEST(LongTasksTest, MultikeyIsRulersNiahMultikey1InHaystackLines) {
  Haystack hay;
  TaskEvalOptions o = options(LongTask::kMultikey, {1000}, {0.5}, 11, 3);
  o.haystack_path = hay.path();
  const std::regex needle(R"(One of the special magic numbers for ([a-z]+-[a-z]+) is: (\d{7})\.)");
  for (const TaskCase& c : cases_of(o)) {
    EXPECT_TRUE(c.prompt.starts_with(
        "Some special magic numbers are hidden within the following text. Make sure to memorize "
        "it. I will quiz you about the numbers afterwards.\n"));
    std::map<std::string, std::string> values;
    std::istringstream lines(c.prompt);
    std::string question;
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (std::regex_search(line, m, needle)) {
        EXPECT_EQ(m.position(0), 0) << "a needle is a line of its own: " << line;
        EXPECT_EQ(static_cast<size_t>(m.length(0)), line.size()) << line;
        values[m[1]] = m[2];
      }
      question = line;
    }
    ASSERT_EQ(values.size(), 4u) << c.prompt;
    const std::regex q(
        R"(What is the special magic number for ([a-z-]+) mentioned in the provided text\? )"
        R"(The special magic number for ([a-z-]+) mentioned in the provided text is)");
    std::smatch m;
    ASSERT_TRUE(std::regex_match(question, m, q)) << question;
    EXPECT_EQ(m[1], m[2]);
    EXPECT_EQ(values[m[1]], c.answer);
    EXPECT_NE(c.prompt.find("\nLine "), std::string::npos);  // the haystack's own lines
  }
  o.haystack_path.clear();
  Result<std::vector<TaskCase>> none = make_task_cases(o, stories_tokenize());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("--haystack FILE"), std::string::npos);
}

TEST(LongTasksTest, VariableTrackingIsRulersChainOfFourHops) {
  for (const TaskCase& c : cases_of(options(LongTask::kVt, {800}, {0, 0.5}, 5, 2))) {
    EXPECT_TRUE(
        c.prompt.starts_with("Memorize and track the chain(s) of variable assignment "
                             "hidden in the following text."));
    std::smatch m;
    ASSERT_TRUE(std::regex_match(c.answer, m,
                                 std::regex("([A-Z]{5}) ([A-Z]{5}) ([A-Z]{5}) "
                                            "([A-Z]{5}) ([A-Z]{5})")))
        << c.answer;
    const std::regex first("VAR " + m[1].str() + R"( = (\d{5})\.)");
    std::smatch v;
    ASSERT_TRUE(std::regex_search(c.prompt, v, first)) << c.prompt;
    size_t at = static_cast<size_t>(v.position(0));
    for (int hop = 1; hop < 5; ++hop) {  // each hop after the one it copies
      const size_t next = c.prompt.find("VAR " + m[hop + 1].str() + " = VAR " + m[hop].str() + ".");
      ASSERT_NE(next, std::string::npos) << hop;
      EXPECT_GT(next, at);
      at = next;
    }
    const std::string value = v[1];
    EXPECT_TRUE(c.prompt.ends_with(
        "\nQuestion: Find all variables that are assigned the value " + value +
        " in the text above. Answer: According to the chain(s) of variable assignment in the "
        "text above, 5 variables are assigned the value " +
        value + ", they are:"));
  }
}

TEST(LongTasksTest, NeedleDepthOrdersItsPlace) {
  const std::vector<double> depths = {0, 0.25, 0.5, 0.75, 1};
  const std::vector<TaskCase> cases = cases_of(options(LongTask::kPasskey, {3000}, depths));
  ASSERT_EQ(cases.size(), depths.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string& p = cases[i].prompt;
    const double where = static_cast<double>(p.find("The pass key is")) / p.size();
    EXPECT_NEAR(where, depths[i], 0.06) << "depth " << depths[i];
  }
  // Depth 0: right after the intro; depth 1: right before the question.
  EXPECT_TRUE(cases[0].prompt.starts_with(std::string(kPasskeyIntro) + "The pass key is"));
  EXPECT_TRUE(
      cases[4].prompt.ends_with(" is the pass key.\nWhat is the pass key? The pass key is"));
}

TEST(LongTasksTest, PromptsFillTheirLengthWithoutPassingIt) {
  Haystack hay;
  for (LongTask task : {LongTask::kPasskey, LongTask::kMultikey, LongTask::kVt}) {
    TaskEvalOptions o = options(task, {600, 1000, 2000}, {0, 0.5, 1});
    o.haystack_path = hay.path();
    for (const TaskCase& c : cases_of(o)) {
      SCOPED_TRACE(std::string(long_task_name(task)) + " " + std::to_string(c.length));
      EXPECT_EQ(c.tokens, count_tokens(c.prompt));  // BOS counted
      EXPECT_LE(c.tokens, c.length);
      // Short by less than one filler unit: a sentence (up to 16 tokens in stories260K's small
      // vocabulary, about 6 in a trained one) or one of the haystack's lines (about 40 here).
      EXPECT_GE(c.tokens, c.length - (task == LongTask::kMultikey ? 60 : 16));
      EXPECT_GT(c.answer_tokens, 0);
    }
  }
  // A length too short for the intro, needle and question is refused, saying so.
  Result<std::vector<TaskCase>> tiny =
      make_task_cases(options(LongTask::kPasskey, {20}, {0}), stories_tokenize());
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.error().message.find("at least"), std::string::npos);
}

}  // namespace
}  // namespace strata::bench

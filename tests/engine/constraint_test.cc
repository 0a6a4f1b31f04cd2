// Constrained generation on stories260K: whatever the model prefers, the output is a sentence of
// the grammar; lazy (triggered) constraints leave text before the trigger alone; a bad grammar
// is refused at submit.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "strata/engine.h"

namespace strata {
namespace {

std::unique_ptr<Engine> make_engine() {
  EngineOptions options;
  options.model_path = "../shared/models/stories260K.gguf";
  options.threads = 1;
  options.max_sequences = 4;
  Result<std::unique_ptr<Engine>> engine = Engine::create(options);
  EXPECT_TRUE(engine.ok()) << engine.error().message;
  return engine.ok() ? std::move(engine).value() : nullptr;
}

struct Output {
  std::string text;
  FinishReason finish = FinishReason::kNone;
  std::string error;
};

Output generate(Engine& engine, const GenerationRequest& r) {
  Output out;
  Result<GenerationStats> stats = engine.generate(r, [&](const TokenEvent& e) {
    out.text += e.text;
    if (e.finish != FinishReason::kNone) out.error = e.error;
    return true;
  });
  EXPECT_TRUE(stats.ok());
  if (stats.ok()) out.finish = stats->finish;
  return out;
}

GenerationRequest request(Engine& engine, const std::string& prompt, float temperature,
                          uint64_t seed = 1) {
  GenerationRequest r;
  r.prompt = engine.tokenize(prompt, true, false);
  r.max_tokens = 200;
  r.sampling.temperature = temperature;
  r.sampling.seed = seed;
  return r;
}

TEST(ConstraintTest, GrammarOverridesTheModelsPreference) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  // Greedy alone continues ", there was a little girl named Lily."
  GenerationRequest r = request(*engine, "Once upon a time", 0);
  r.constraint.kind = ConstraintKind::kGrammar;
  r.constraint.text = R"(root ::= " the answer is " ("yes" | "no") ".")";
  const Output out = generate(*engine, r);
  EXPECT_TRUE(out.text == " the answer is yes." || out.text == " the answer is no.") << out.text;
  EXPECT_EQ(out.finish, FinishReason::kStop);  // the grammar ended: nothing may follow
}

// Several constrained sequences fill their masks on the thread pool in the same step; each gets
// what it gets alone.
TEST(ConstraintTest, ConstrainedSequencesInOneStepGetWhatTheyGetAlone) {
  EngineOptions options;
  options.model_path = "../shared/models/stories260K.gguf";
  options.threads = 4;
  options.max_sequences = 4;
  Result<std::unique_ptr<Engine>> made = Engine::create(options);
  ASSERT_TRUE(made.ok());
  Engine& engine = **made;
  const std::vector<std::string> grammars = {
      "root ::= [0-9]{1,3} (\",\" [0-9]{1,3}){0,4}", "root ::= (\"yes\" | \"no\") \".\"",
      "root ::= [a-z ]{1,40} \".\"", "root ::= \"Lily \" [a-z]+"};
  std::vector<GenerationRequest> requests;
  std::vector<std::string> alone;
  for (size_t i = 0; i < grammars.size(); ++i) {
    GenerationRequest r = request(engine, "Once upon a time", i % 2 == 0 ? 0.0f : 1.0f, i + 1);
    r.max_tokens = 40;
    r.constraint.kind = ConstraintKind::kGrammar;
    r.constraint.text = grammars[i];
    requests.push_back(r);
    alone.push_back(generate(engine, r).text);
  }
  std::vector<std::string> together(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_TRUE(engine
                    .submit(requests[i],
                            [&together, i](const TokenEvent& e) {
                              together[i] += e.text;
                              return true;
                            })
                    .ok());
  }
  while (engine.has_work()) ASSERT_TRUE(engine.step().ok());
  EXPECT_EQ(together, alone);
}

TEST(ConstraintTest, SampledOutputsAlwaysFitTheGrammar) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    GenerationRequest r = request(*engine, "Lily saw", 1.5f, seed);
    r.sampling.top_k = 0;
    r.sampling.top_p = 1;
    r.sampling.min_p = 0;
    r.constraint.kind = ConstraintKind::kGrammar;
    r.constraint.text = "root ::= [0-9]{1,3} (\",\" [0-9]{1,3}){0,4}";
    const Output out = generate(*engine, r);
    ASSERT_FALSE(out.text.empty());
    size_t digits = 0;
    for (char c : out.text) {
      if (c == ',') {
        EXPECT_GT(digits, 0u) << out.text;
        digits = 0;
      } else {
        EXPECT_TRUE(c >= '0' && c <= '9') << out.text;
        EXPECT_LE(++digits, 3u) << out.text;
      }
    }
  }
}

TEST(ConstraintTest, JsonObjectModeGivesParsableJson) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    GenerationRequest r = request(*engine, "Tom said", 1.0f, seed);
    r.max_tokens = 400;
    r.constraint.kind = ConstraintKind::kJsonObject;
    const Output out = generate(*engine, r);
    if (out.finish == FinishReason::kLength) continue;  // allowed to end early, never wrongly
    EXPECT_TRUE(nlohmann::json::accept(out.text)) << out.text;
    EXPECT_EQ(out.text.find_first_not_of(" \t\n"), out.text.find('{')) << out.text;
  }
}

// Near max_tokens the mask keeps only tokens after which the JSON can still be closed in time,
// so even short budgets give whole objects (finish stop, not length).
TEST(ConstraintTest, ShortBudgetsStillEndInWholeJson) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    GenerationRequest r = request(*engine, "Tom said", 1.0f, seed);
    r.max_tokens = 12 + static_cast<int>(seed) * 3;
    r.constraint.kind = ConstraintKind::kJsonObject;
    const Output out = generate(*engine, r);
    EXPECT_EQ(out.finish, FinishReason::kStop) << out.text;
    EXPECT_TRUE(nlohmann::json::accept(out.text)) << out.text;
  }
}

TEST(ConstraintTest, TriggeredGrammarLeavesTheTextBeforeItAlone) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  GenerationRequest r = request(*engine, "Once upon a time", 0);
  r.constraint.kind = ConstraintKind::kGrammar;
  r.constraint.text = R"(root ::= "little " ("cat" | "dog") " ran home.")";
  r.constraint.triggers = {"little"};
  const Output out = generate(*engine, r);
  // Free greedy text up to the trigger, then the grammar.
  const std::string free_part = ", there was a ";
  ASSERT_EQ(out.text.substr(0, free_part.size()), free_part) << out.text;
  const std::string rest = out.text.substr(free_part.size());
  EXPECT_TRUE(rest == "little cat ran home." || rest == "little dog ran home.") << out.text;
  EXPECT_EQ(out.finish, FinishReason::kStop);
}

TEST(ConstraintTest, BadGrammarsAreRefusedAtSubmit) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  GenerationRequest r = request(*engine, "Once", 0);
  r.constraint.kind = ConstraintKind::kGrammar;
  for (const char* bad :
       {"root ::= undefined-rule", "root ::= root \"a\"", "root ::= \"a", "not a grammar"}) {
    r.constraint.text = bad;
    Result<uint64_t> id = engine->submit(r, {});
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_FALSE(id.error().message.empty());
  }
  r.constraint.kind = ConstraintKind::kJsonSchema;
  r.constraint.text = R"({"type": "object", "properties": {"a": {"$ref": "http://x.org/a.json"}}})";
  Result<uint64_t> id = engine->submit(r, {});
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().message.find("http://x.org/a.json"), std::string::npos)
      << id.error().message;
  EXPECT_FALSE(engine->has_work());
}

// prepare_constraint is called from server request threads while the engine thread steps:
// several threads preparing the same and different schemas at once get the same verdicts as
// submit, and a prepared constraint then constrains a generation as usual.
TEST(ConstraintTest, ConstraintsPreparedFromManyThreadsAgreeWithSubmit) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  std::vector<OutputConstraint> constraints(4);
  constraints[0].kind = ConstraintKind::kJsonSchema;
  constraints[0].text = R"({"type": "object", "properties": {"n": {"type": "integer"}},
                            "required": ["n"], "additionalProperties": false})";
  constraints[1].kind = ConstraintKind::kGrammar;
  constraints[1].text = "root ::= \"yes\" | \"no\"";
  constraints[2].kind = ConstraintKind::kGrammar;
  constraints[2].text = "root ::= root \"a\"";  // left-recursive: refused
  constraints[3].kind = ConstraintKind::kJsonObject;
  std::vector<std::thread> threads;
  std::vector<std::vector<bool>> verdicts(4);
  for (size_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t round = 0; round < 3; ++round) {
        for (size_t c = 0; c < constraints.size(); ++c) {
          verdicts[t].push_back(engine->prepare_constraint(constraints[(c + t) % 4]).ok());
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < 4; ++t) {
    for (size_t i = 0; i < verdicts[t].size(); ++i) {
      EXPECT_EQ(verdicts[t][i], (i % 4 + t) % 4 != 2) << "thread " << t << " call " << i;
    }
  }
  GenerationRequest r = request(*engine, "Once", 1.0f);
  r.constraint = constraints[1];
  const Output out = generate(*engine, r);
  EXPECT_TRUE(out.text == "yes" || out.text == "no") << out.text;
  r.constraint = constraints[2];
  EXPECT_FALSE(engine->submit(r, {}).ok());
}

TEST(ConstraintTest, SchemaConstrainedOutputsHaveTheRequiredShape) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  const char* schema = R"({"type": "object",
      "properties": {"name": {"type": "string", "maxLength": 8},
                     "age": {"type": "integer", "minimum": 0, "maximum": 120},
                     "pet": {"enum": ["cat", "dog"]}},
      "required": ["name", "age", "pet"], "additionalProperties": false})";
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    GenerationRequest r = request(*engine, "The girl", 1.0f, seed);
    r.constraint.kind = ConstraintKind::kJsonSchema;
    r.constraint.text = schema;
    const Output out = generate(*engine, r);
    if (out.finish == FinishReason::kLength) continue;
    const nlohmann::json j = nlohmann::json::parse(out.text, nullptr, false);
    ASSERT_TRUE(j.is_object()) << out.text;
    ASSERT_EQ(j.size(), 3u) << out.text;
    EXPECT_LE(j["name"].get<std::string>().size(), 8u);
    EXPECT_GE(j["age"].get<int>(), 0);
    EXPECT_LE(j["age"].get<int>(), 120);
    EXPECT_TRUE(j["pet"] == "cat" || j["pet"] == "dog") << out.text;
  }
}

// uniqueItems over strings is kept by the matcher, not the grammar: sampled arrays of
// one-character strings, where the model would repeat itself, still hold distinct items.
TEST(ConstraintTest, UniqueItemsStayDistinctWhileSampling) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  const char* schema = R"({"type": "array", "uniqueItems": true, "minItems": 6, "maxItems": 10,
      "items": {"type": "string", "minLength": 1, "maxLength": 1, "pattern": "^[a-z]$"}})";
  int checked = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    GenerationRequest r = request(*engine, "Tom and", 1.0f, seed);
    r.constraint.kind = ConstraintKind::kJsonSchema;
    r.constraint.text = schema;
    const Output out = generate(*engine, r);
    ASSERT_TRUE(out.error.empty()) << out.error;
    if (out.finish == FinishReason::kLength) continue;
    const nlohmann::json j = nlohmann::json::parse(out.text, nullptr, false);
    ASSERT_TRUE(j.is_array()) << out.text;
    EXPECT_GE(j.size(), 6u) << out.text;
    for (size_t a = 0; a < j.size(); ++a) {
      for (size_t b = a + 1; b < j.size(); ++b) EXPECT_NE(j[a], j[b]) << out.text;
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// The attack on the server: a schema nested 20,000 deep crashed compilation (a recursive walk
// overflowed the stack), and 100,000 properties compiled for minutes whatever the request's
// timeout. Both now end in errors; a budget stops compilation and leaves the cache usable.
std::string flat_object_schema(size_t n) {
  std::string properties, required;
  for (size_t i = 0; i < n; ++i) {
    const std::string name = "\"p" + std::to_string(i) + "\"";
    properties += (i ? "," : "") + name + R"(:{"type":"string"})";
    required += (i ? "," : "") + name;
  }
  return R"({"type":"object","properties":{)" + properties + "},\"required\":[" + required + "]}";
}

TEST(ConstraintTest, DeepSchemaIsAnErrorNotACrash) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  OutputConstraint c;
  c.kind = ConstraintKind::kJsonSchema;
  c.text = "{\"x\":" + std::string(20000, '[') + std::string(20000, ']') + "}";
  Status prepared = engine->prepare_constraint(c);
  ASSERT_FALSE(prepared.ok());
  EXPECT_EQ(prepared.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(prepared.error().message.find("20001"), std::string::npos) << prepared.error().message;
  GenerationRequest r = request(*engine, "Once", 0);
  r.constraint = c;
  EXPECT_FALSE(engine->submit(r, {}).ok());
}

TEST(ConstraintTest, CompileBudgetStopsPrepareConstraint) {
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_TRUE(engine);
  OutputConstraint large;
  large.kind = ConstraintKind::kJsonSchema;
  large.text = flat_object_schema(100000);
  CompileBudget soon;
  soon.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  Status late = engine->prepare_constraint(large, soon);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, ErrorCode::kDeadlineExceeded);
  EXPECT_NE(late.error().message.find("--timeout"), std::string::npos) << late.error().message;

  std::atomic<bool> cancelled{true};
  CompileBudget abandoned;
  abandoned.cancelled = &cancelled;
  OutputConstraint small;
  small.kind = ConstraintKind::kJsonSchema;
  small.text = flat_object_schema(3);
  Status stopped = engine->prepare_constraint(small, abandoned);
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.error().code, ErrorCode::kCancelled);
  // Failures are not cached: the same schema compiles once the budget allows it, and then comes
  // from the cache even under a budget that is already spent.
  EXPECT_TRUE(engine->prepare_constraint(small).ok());
  EXPECT_TRUE(engine->prepare_constraint(small, abandoned).ok());
}

}  // namespace
}  // namespace strata

// Hostile nesting: templates whose syntax trees are far taller than the parser allows, trees
// freed without recursion, and caller JSON nested past kMaxJsonDepth. Each case once crashed a
// server with a stack overflow, so a regression shows up as a crash of this test binary.
#include <gtest/gtest.h>
#include <pthread.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/chat_template.h"
#include "chat/jinja/parser.h"
#include "chat/jinja/template.h"
#include "strata/json_depth.h"

namespace strata::jinja {
namespace {

// Far past kMaxParseDepth: the size of the attacker's templates.
constexpr int kTerms = 300'000;

std::string repeat(std::string_view part, int n) {
  std::string out;
  out.reserve(part.size() * static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out += part;
  return out;
}

Result<std::string> render(const std::string& source) {
  STRATA_ASSIGN_OR_RETURN(Template tmpl, Template::parse(source));
  return tmpl.render(nlohmann::ordered_json::parse(R"({"x": [[1]], "messages": []})"),
                     RenderOptions{});
}

std::string rendered(const std::string& source) {
  auto r = render(source);
  return r.ok() ? *r : "(error: " + r.error().message + ")";
}

std::string error_of(const std::string& source) {
  auto r = render(source);
  return r.ok() ? "(rendered: " + r->substr(0, 100) + ")" : r.error().message;
}

struct DeepCase {
  const char* name;
  std::string source;
};

std::vector<DeepCase> deep_cases() {
  const auto chain = [](std::string head, std::string_view link, std::string tail) {
    return "{{ " + head + repeat(link, kTerms) + tail + " }}";
  };
  return {
      {"plus", chain("1", " + 1", "")},
      {"minus", chain("1", " - 1", "")},
      {"times", chain("1", " * 1", "")},
      {"divide", chain("1", " / 1", "")},
      {"floor_divide", chain("1", " // 1", "")},
      {"modulo", chain("1", " % 1", "")},
      {"power", chain("1", " ** 1", "")},
      {"concat", chain("'a'", " ~ 'a'", "")},
      {"and", chain("true", " and true", "")},
      {"or", chain("false", " or false", "")},
      {"attribute", chain("x", ".a", "")},
      {"dot_index", chain("x", ".0 ", "")},
      {"subscript", chain("x", "[0]", "")},
      {"slice", chain("x", "[:]", "")},
      {"call", chain("range", "()", "")},
      {"filter", chain("x", "|string", "")},
      {"filter_with_args", chain("x", "|default(1)", "")},
      {"test", chain("1", " is divisibleby(1)", "")},
      {"mixed_postfix", chain("x", ".a[0]()", "")},
      {"filter_and_test", chain("1", "|string is string", "")},
      {"conditional_without_else", chain("1", " if x", "")},
      {"conditional_with_else", chain("1", " if x else 1", "")},
      {"not", chain("", "not ", "x")},
      {"negate", chain("", "- ", "1")},
      {"plus_sign", chain("", "+ ", "1")},
      {"in_set", "{% set y = 1" + repeat(" + 1", kTerms) + " %}"},
      {"in_for", "{% for i in x" + repeat("|list", kTerms) + " %}{% endfor %}"},
      {"in_macro_default", "{% macro m(a=1" + repeat(" + 1", kTerms) + ") %}{% endmacro %}"},
      {"in_call_argument", "{{ range(1" + repeat(" + 1", kTerms) + ") }}"},
      {"in_list", "{{ [1" + repeat(" ~ 1", kTerms) + "] }}"},
      {"nested_if", repeat("{% if true %}", kTerms / 3) + "x" + repeat("{% endif %}", kTerms / 3)},
      {"nested_for",
       repeat("{% for i in x %}", kTerms / 3) + "x" + repeat("{% endfor %}", kTerms / 3)},
      {"nested_macro",
       repeat("{% macro m() %}", kTerms / 3) + repeat("{% endmacro %}", kTerms / 3)},
  };
}

TEST(DeepTemplates, EveryKindOfChainIsRefusedWithTheLine) {
  for (const DeepCase& c : deep_cases()) {
    std::string e = error_of(c.source);
    EXPECT_EQ(e.rfind("line 1: ", 0), 0u) << c.name << ": " << e;
    EXPECT_NE(e.find("nests deeper than " + std::to_string(kMaxParseDepth) + " levels"),
              std::string::npos)
        << c.name << ": " << e;
  }
}

TEST(DeepTemplates, ErrorNamesTheLineOfTheChain) {
  EXPECT_EQ(error_of("a\n\nb{{ x" + repeat(".a", 1000) + " }}"),
            "line 3: expression nests deeper than 128 levels; split long chains of operators, "
            "filters, attributes or calls with {% set %}");
}

TEST(DeepTemplates, ChainsUpToTheLimitRender) {
  // A chain of n terms is a tree of n levels.
  EXPECT_EQ(rendered("{{ 1" + repeat(" + 1", kMaxParseDepth - 1) + " }}"),
            std::to_string(kMaxParseDepth));
  EXPECT_NE(error_of("{{ 1" + repeat(" + 1", kMaxParseDepth) + " }}").find("nests deeper"),
            std::string::npos);
  EXPECT_EQ(rendered("{{ x" + repeat("|first", 2) + repeat("|string", kMaxParseDepth - 3) + " }}"),
            "1");
  EXPECT_EQ(rendered("{{ 'a'" + repeat(" ~ 'a'", 99) + " }}"), std::string(100, 'a'));
}

TEST(DeepTemplates, ComparisonChainsAreFlat) {
  // `a == b == c` is one node with many operands, so a long chain is wide, not deep: it renders
  // (Python's chained comparison) or runs into the step limit, and never recurses per operand.
  auto r = render("{{ 1" + repeat(" == 1", kTerms) + " }}");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "True");
}

// Runs `fn` on a thread with a 2 MiB stack, glibc's default when the stack limit is unlimited.
void run_on_small_stack(const std::function<void()>& fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 2u << 20);
  pthread_t thread;
  auto* arg = const_cast<std::function<void()>*>(&fn);
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* p) -> void* {
                  (*static_cast<std::function<void()>*>(p))();
                  return nullptr;
                },
                arg),
            0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

TEST(DeepTemplates, MacroRecursionThroughNestedStatementsStopsInsideTheStack) {
  // Each macro call starts the template's nesting over: 64 calls of a body nested 120
  // statements deep with a 100-level argument would recurse ~14k levels without a shared bound.
  const std::string body = repeat("{% if true %}", 120) + "{{ m(n + 1" + repeat(" + 0", 99) +
                           ") }}" + repeat("{% endif %}", 120);
  const std::string source = "{% macro m(n) %}" + body + "{% endmacro %}{{ m(0) }}";
  std::string e;
  run_on_small_stack([&] { e = error_of(source); });
  EXPECT_NE(e.find("recursion depth limit exceeded"), std::string::npos) << e;
}

// Trees built by hand, past anything the parser accepts: freeing them must not recurse.
TEST(AstTeardown, DeepExpressionTreesAreFreedIteratively) {
  constexpr int kDepth = 2'000'000;
  auto root = std::make_unique<Expr>();
  Expr* tip = root.get();
  for (int i = 0; i < kDepth; ++i) {
    auto next = std::make_unique<Expr>();
    Expr* raw = next.get();
    if (i % 2 == 0) {
      tip->children.push_back(std::move(next));
    } else {
      tip->kwargs.emplace_back("k", std::move(next));
    }
    tip = raw;
  }
  root.reset();
  EXPECT_EQ(root, nullptr);
}

TEST(AstTeardown, DeepStatementTreesAreFreedIteratively) {
  constexpr int kDepth = 2'000'000;
  auto root = std::make_unique<Stmt>();
  Stmt* tip = root.get();
  for (int i = 0; i < kDepth; ++i) {
    auto next = std::make_unique<Stmt>();
    Stmt* raw = next.get();
    switch (i % 3) {
      case 0:
        tip->body.push_back(std::move(next));
        break;
      case 1:
        tip->else_body.push_back(std::move(next));
        break;
      default:
        tip->branches.emplace_back(std::make_unique<Expr>(), StmtList{});
        tip->branches.back().second.push_back(std::move(next));
        break;
    }
    tip = raw;
  }
  root.reset();
  EXPECT_EQ(root, nullptr);
}

TEST(AstTeardown, MoveAssignmentFreesTheOldTreeIteratively) {
  Expr root;
  Expr* tip = &root;
  for (int i = 0; i < 2'000'000; ++i) {
    tip->children.push_back(std::make_unique<Expr>());
    tip = tip->children.back().get();
  }
  root = Expr();
  EXPECT_TRUE(root.children.empty());
}

// JSON nested ten times past kMaxJsonDepth, with `inner` at the bottom.
std::string deep_json_text(std::string_view inner = "1") {
  const size_t depth = 10 * kMaxJsonDepth;
  return repeat("[", static_cast<int>(depth)) + std::string(inner) +
         repeat("]", static_cast<int>(depth));
}

TEST(DeepJson, ChatInputsPastTheLimitAreRefused) {
  // nlohmann parses and frees without recursion; copying and dump() would recurse.
  const nlohmann::ordered_json deep = nlohmann::ordered_json::parse(deep_json_text());
  const std::string limit = std::to_string(kMaxJsonDepth);

  ChatTemplateInputs inputs;
  inputs.messages = nlohmann::ordered_json::array();
  inputs.messages.push_back({{"role", "user"}, {"content", deep}});
  auto r = render_chat("{{ messages }}", inputs, RenderOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "the chat messages nest deeper than " + limit +
                                   " levels of arrays and objects; send flatter JSON");

  inputs.messages = nlohmann::ordered_json::array();
  inputs.tools = nlohmann::ordered_json::array({deep});
  r = render_chat("{{ tools }}", inputs, RenderOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the chat tools nest deeper than " + limit), std::string::npos);

  r = render_chat("{{ messages }}", nlohmann::ordered_json::array({deep}), nullptr, false,
                  std::nullopt, std::nullopt, std::nullopt);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the chat messages nest deeper than " + limit),
            std::string::npos);

  inputs.tools = nullptr;
  inputs.extra = {{"deep", deep}};
  r = render_chat("{{ deep }}", inputs, RenderOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the chat template arguments nest deeper than " + limit),
            std::string::npos);
}

TEST(DeepJson, PlainJsonContextPastTheLimitIsRefusedBeforeDump) {
  auto tmpl = Template::parse("{{ x }}");
  ASSERT_TRUE(tmpl.ok());
  nlohmann::json context = {{"x", nlohmann::json::parse(deep_json_text())}};
  auto r = tmpl->render(context, RenderOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("template context nests deeper than"), std::string::npos)
      << r.error().message;
}

TEST(DeepJson, ShallowerJsonStillRenders) {
  ChatTemplateInputs inputs;
  inputs.messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": [[["hi"]]]}])");
  auto r = render_chat("{{ messages[0].content[0][0][0] }}", inputs, RenderOptions{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, "hi");
}

TEST(DeepJson, DepthMeasureMatchesTheTextMeasure) {
  for (std::string text : {"1", "[]", "[[1]]", R"({"a": [{"b": 1}]})", R"([[], [[[]]], {}])"}) {
    const size_t depth = json_nesting_depth(text);
    const auto parsed = nlohmann::ordered_json::parse(text);
    EXPECT_FALSE(json_deeper_than(parsed, depth)) << text;
    if (depth > 0) {
      EXPECT_TRUE(json_deeper_than(parsed, depth - 1)) << text;
    }
  }
}

}  // namespace
}  // namespace strata::jinja

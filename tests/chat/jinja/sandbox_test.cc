// Sandbox limits, hostile templates and error messages (with line numbers).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "chat/jinja/template.h"

namespace strata::jinja {
namespace {

Result<std::string> render(const std::string& source,
                           const RenderOptions& options = RenderOptions{}) {
  STRATA_ASSIGN_OR_RETURN(Template tmpl, Template::parse(source));
  return tmpl.render(
      nlohmann::ordered_json::parse(R"({"messages": [{"role": "user", "content": "hi"}]})"),
      options);
}

std::string error_of(const std::string& source, const RenderOptions& options = RenderOptions{}) {
  auto r = render(source, options);
  return r.ok() ? "(rendered: " + *r + ")" : r.error().message;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SandboxLimits, RecursionDepth) {
  RenderOptions options;
  options.max_recursion_depth = 20;
  std::string e = error_of("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", options);
  EXPECT_TRUE(contains(e, "recursion depth limit (20")) << e;
  // Recursion inside the limit works.
  auto ok = render(
      "{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(5) }}",
      options);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "54321");
}

TEST(SandboxLimits, LoopIterations) {
  RenderOptions options;
  options.max_loop_iterations = 10'000;
  std::string e = error_of(
      "{% for i in range(100) %}{% for j in range(100) %}{% for k in range(2) %}{% endfor %}"
      "{% endfor %}{% endfor %}",
      options);
  EXPECT_TRUE(contains(e, "loop iteration limit (10000)")) << e;
  EXPECT_TRUE(
      contains(error_of("{{ range(100000000000) | length }}", options), "loop iteration limit"))
      << e;
  EXPECT_TRUE(
      render("{% for i in range(100) %}{% for j in range(99) %}{% endfor %}{% endfor %}", options)
          .ok());
}

TEST(SandboxLimits, OutputSize) {
  RenderOptions options;
  options.max_output_bytes = 1 << 16;
  EXPECT_TRUE(contains(error_of("{% for i in range(1000) %}{{ 'x' * 100 }}{% endfor %}", options),
                       "output size limit (65536 bytes)"));
  EXPECT_TRUE(contains(error_of("{{ 'ab' * 1000000000000 }}", options), "output size limit"));
  EXPECT_TRUE(contains(error_of("{% set ns = namespace(s='x') %}{% for i in range(64) %}"
                                "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                                options),
                       "output size limit"));
  EXPECT_TRUE(contains(error_of("{{ [1] * 100000000 }}", options), "output size limit"));
}

TEST(SandboxLimits, ListSize) {
  RenderOptions options;
  options.max_loop_iterations = 1000;
  EXPECT_TRUE(contains(error_of("{% for c in 'x' * 5000 %}{% endfor %}", options),
                       "list size limit (1000 items"));
  EXPECT_TRUE(
      contains(error_of("{{ ('a,' * 5000).split(',') | length }}", options), "list size limit"));
  EXPECT_TRUE(contains(error_of("{{ ([0] * 600) + ([0] * 600) }}", options), "list size limit"));
  EXPECT_TRUE(contains(error_of("{{ ('x' * 5000) | list | length }}", options), "list size limit"));
  auto ok = render("{{ ('a,' * 500).split(',') | length }}", options);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "501");
}

TEST(SandboxLimits, QuadraticWorkHitsStepLimit) {
  RenderOptions options;
  options.max_steps = 1'000'000;
  std::string e = error_of(
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}"
      "{% set ns.l = ns.l + [i] %}{% endfor %}{{ ns.l | length }}",
      options);
  EXPECT_TRUE(contains(e, "evaluation step limit (1000000)")) << e;
}

TEST(SandboxLimits, DeepValuesAndSelfReferenceAreRefused) {
  EXPECT_TRUE(contains(
      error_of("{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}"
               "{% endfor %}"),
      "nests deeper"));
  EXPECT_TRUE(contains(error_of("{% set ns = namespace() %}{% set ns.me = [ns] %}"),
                       "namespace cannot be stored"));
}

TEST(SandboxLimits, DeepSyntaxFailsCleanly) {
  std::string deep_parens = std::string(500, '(') + "1" + std::string(500, ')');
  EXPECT_TRUE(contains(error_of("{{ " + deep_parens + " }}"), "nests deeper than"));
  std::string deep_ifs;
  for (int i = 0; i < 2000; ++i) deep_ifs += "{% if true %}";
  EXPECT_TRUE(contains(error_of(deep_ifs), "nests deeper than"));
  EXPECT_TRUE(contains(error_of("{{ " + std::string(3000, '-') + "1 }}"), "nests deeper than"));
  EXPECT_EQ(error_of("{{ " + std::string(5000, '[') + " }}"), "line 1: brackets nest too deeply");
}

TEST(Sandbox, NoAccessToPythonInternals) {
  // Like jinja2's sandbox: unsafe attributes are undefined, and using them fails.
  EXPECT_EQ(*render("[{{ ''.__class__ }}]"), "[]");
  EXPECT_TRUE(contains(error_of("{{ ''.__class__.__mro__ }}"),
                       "access to attribute '__class__' of 'str' object is unsafe"));
  EXPECT_TRUE(contains(error_of("{{ messages.__len__() }}"), "unsafe"));
  EXPECT_TRUE(contains(error_of("{{ messages.append(1) }}"),
                       "access to attribute 'append' of 'list' object is unsafe."));
  EXPECT_TRUE(contains(error_of("{{ messages[0].update({}) }}"), "unsafe"));
}

TEST(ErrorMessages, ParseErrorsNameTheLine) {
  EXPECT_EQ(error_of("a\nb\n{% if x %}"),
            "line 3: unexpected end of template, expected 'elif' or 'else' or 'endif'");
  EXPECT_EQ(error_of("{% for x in y %}\n{% endif %}"), "line 2: unknown statement 'endif'");
  EXPECT_EQ(error_of("\n{% include 'other.jinja' %}"), "line 2: unsupported statement 'include'");
  EXPECT_EQ(error_of("{{ 'abc }}"), "line 1: unterminated string literal");
  EXPECT_EQ(error_of("x\n{{ a +"), "line 2: unexpected end of template, expected '}}'");
  EXPECT_EQ(error_of("{# never closed"), "line 1: missing end of comment tag '#}'");
  EXPECT_EQ(error_of("{% break %}"), "line 1: 'break' outside of a for loop");
  EXPECT_EQ(error_of("{{ a ! b }}"), "line 1: unexpected character '!'");
  EXPECT_EQ(error_of("{% for x in y recursive %}{% endfor %}"),
            "line 1: unsupported construct 'recursive' for loop");
}

TEST(ErrorMessages, RuntimeErrorsNameTheLineAndConstruct) {
  EXPECT_EQ(error_of("{{ 1 }}\n\n{{ messages | xmlattr }}"),
            "line 3: unsupported filter 'xmlattr'");
  EXPECT_EQ(error_of("\n{{ 1 is prime }}"), "line 2: unsupported test 'prime'");
  EXPECT_EQ(error_of("\n\n{{ 1 + 'a' }}"),
            "line 3: unsupported operand type(s) for +: 'int' and 'str'");
  EXPECT_EQ(error_of("{{ nope.attr }}"), "line 1: 'nope' is undefined");
  EXPECT_EQ(error_of("{{ messages[0].nope.x }}"), "line 1: 'dict object' has no attribute 'nope'");
  EXPECT_EQ(error_of("{% for x in none %}{% endfor %}"),
            "line 1: 'NoneType' object is not iterable");
  EXPECT_EQ(error_of("{{ 'a' + messages }}"),
            "line 1: can only concatenate str (not \"list\") to str");
  EXPECT_EQ(error_of("{{ 1 // 0 }}"), "line 1: integer division or modulo by zero");
  EXPECT_EQ(error_of("{{ 9223372036854775807 + 1 }}"),
            "line 1: integer overflow in template arithmetic");
  // raise_exception() messages are the template's own, passed through unchanged.
  EXPECT_EQ(error_of("\n{{ raise_exception('Only user and assistant roles are supported!') }}"),
            "Only user and assistant roles are supported!");
}

TEST(Template, ParsedOnceRendersRepeatedlyWithoutSharedState) {
  auto tmpl = Template::parse(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}"
      "{% endfor %}{{ ns.n }}");
  ASSERT_TRUE(tmpl.ok());
  auto context = nlohmann::ordered_json::parse(R"({"messages": [1, 2, 3]})");
  for (int i = 0; i < 3; ++i) {
    auto out = tmpl->render(context, RenderOptions{});
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out, "3");
  }
}

TEST(Template, ConcurrentRendersOfOneTemplateAgree) {
  auto tmpl = Template::parse(
      "{% macro m(x) %}<{{ x }}>{% endmacro %}{% for i in range(200) %}{{ m(i) }}{% endfor %}");
  ASSERT_TRUE(tmpl.ok());
  auto expected = tmpl->render(nlohmann::ordered_json::object(), RenderOptions{});
  ASSERT_TRUE(expected.ok());
  std::vector<std::string> outputs(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < outputs.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto out = tmpl->render(nlohmann::ordered_json::object(), RenderOptions{});
        outputs[t] = out.ok() ? *out : out.error().message;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& out : outputs) EXPECT_EQ(out, *expected);
}

TEST(Template, PlainJsonContextIsAccepted) {
  auto tmpl = Template::parse("{{ a }}-{{ b | length }}");
  ASSERT_TRUE(tmpl.ok());
  auto out = tmpl->render(nlohmann::json::parse(R"({"a": "x", "b": [1, 2]})"), RenderOptions{});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "x-2");
  EXPECT_FALSE(tmpl->render(nlohmann::ordered_json::array(), RenderOptions{}).ok());
}

}  // namespace
}  // namespace strata::jinja

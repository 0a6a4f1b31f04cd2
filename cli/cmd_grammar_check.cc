// strata grammar-check: does a grammar (GBNF, JSON Schema, or JSON mode) accept a text when it is
// fed as a vocabulary's tokens? Exit 0 accepted, 1 rejected (with where and what was expected),
// 2 the grammar or schema does not compile or a file cannot be read.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "strata/structured.h"

namespace strata::cli {
namespace {

struct GrammarCheckFlags {
  std::string grammar_file;
  std::string schema_file;
  bool json = false;
  std::string root = "root";
  bool best_effort = false;
  std::string formats = "assert";
  std::string vocab;
  std::string instance;
};

std::string printable(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

int grammar_check(const GrammarCheckFlags& f) {
  OutputConstraint constraint;
  constraint.root = f.root;
  constraint.best_effort = f.best_effort;
  constraint.formats = f.formats == "annotate" ? FormatPolicy::kAnnotate : FormatPolicy::kAssert;
  if (!f.grammar_file.empty()) {
    auto text = read_file(f.grammar_file);
    if (!text.ok()) return report(text.error());
    constraint.kind = ConstraintKind::kGrammar;
    constraint.text = std::move(*text);
  } else if (!f.schema_file.empty()) {
    auto text = read_file(f.schema_file);
    if (!text.ok()) return report(text.error());
    constraint.kind = ConstraintKind::kJsonSchema;
    constraint.text = std::move(*text);
  } else {
    constraint.kind = ConstraintKind::kJsonObject;
  }
  auto instance = read_file(f.instance);
  if (!instance.ok()) return report(instance.error());
  auto vocab = ConstraintVocabulary::load(f.vocab);
  if (!vocab.ok()) return report(vocab.error());
  auto compiled = CompiledConstraint::compile(constraint, *vocab);
  if (!compiled.ok()) return report(compiled.error());

  const std::vector<TokenId> ids = (*vocab)->tokenize(*instance);
  ConstraintMatcher matcher(*compiled);
  std::vector<uint32_t> mask(matcher.mask_words());
  size_t offset = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    matcher.fill_next_token_bitmask(mask);
    const bool allowed = (mask[ids[i] / 32] >> (ids[i] % 32)) & 1;
    const std::string piece = (*vocab)->token_bytes(ids[i]);
    const std::string expected = matcher.expected();
    const bool accepted = matcher.accept_token(ids[i]);
    if (allowed != accepted) {
      std::fprintf(stderr, "error: internal: the mask and the parser disagree on token %zu\n", i);
      return kExitFailure;
    }
    if (!accepted) {
      std::printf("rejected: token %zu of %zu (id %d, '%s') at byte %zu; expected %s\n", i,
                  ids.size(), ids[i], printable(piece).c_str(), offset, expected.c_str());
      return kExitFailure;
    }
    offset += piece.size();
  }
  if (!matcher.can_end()) {
    std::printf("rejected: the text ends after %zu tokens (%zu bytes) but the grammar expects %s\n",
                ids.size(), offset, matcher.expected().c_str());
    return kExitFailure;
  }
  std::printf("accepted: %zu tokens, %zu bytes\n", ids.size(), offset);
  return kExitOk;
}

}  // namespace

Command add_grammar_check_command(CLI::App& app) {
  auto f = std::make_shared<GrammarCheckFlags>();
  CLI::App* sub = app.add_subcommand(
      "grammar-check", "check that a grammar accepts a text fed as a vocabulary's tokens");
  auto* grammar = sub->add_option("--grammar", f->grammar_file, "GBNF grammar file");
  auto* schema = sub->add_option("--json-schema", f->schema_file, "JSON Schema file");
  auto* json = sub->add_flag("--json", f->json, "any JSON object (JSON mode)");
  grammar->excludes(schema)->excludes(json);
  schema->excludes(json);
  sub->add_option("--root", f->root, "start rule of the GBNF grammar")->capture_default_str();
  sub->add_option("--formats", f->formats,
                  "JSON Schema `format`: assert (a date-time must be one) or annotate (constrains "
                  "nothing)")
      ->capture_default_str()
      ->check(CLI::IsMember({"assert", "annotate"}));
  sub->add_flag("--best-effort", f->best_effort,
                "drop JSON Schema keywords that cannot be enforced instead of failing");
  sub->add_option("--vocab", f->vocab, "GGUF file whose vocabulary tokenizes the text")->required();
  sub->add_option("instance", f->instance, "file with the text to check")->required();
  sub->callback([sub, grammar, schema, json] {
    if (grammar->count() + schema->count() + json->count() == 0) {
      throw CLI::RequiredError(sub->get_name() + ": one of --grammar, --json-schema, --json");
    }
  });
  return {sub, [f] { return grammar_check(*f); }};
}

}  // namespace strata::cli

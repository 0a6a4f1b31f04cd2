// Grammars of the kinds llama.cpp users publish (JSON, arithmetic, lists, a C-like language),
// written for these tests, and helpers to drive a matcher over raw bytes.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_vocabulary.h"

namespace strata::grammar::testing {

inline constexpr std::string_view kJsonGrammar = R"gbnf(# any JSON value
root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
    member
    ("," ws member)*
  )? "}" ws
member ::= string ":" ws value
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws     ::= | " " | "\n" [ \t]{0,20}
)gbnf";

inline constexpr std::string_view kArithmeticGrammar = R"gbnf(
root   ::= expr
expr   ::= term (ws [-+] ws term)*
term   ::= factor (ws [*/] ws factor)*
factor ::= number | "(" ws expr ws ")" | "-" factor
number ::= [0-9]+ ("." [0-9]+)?
ws     ::= " "*
)gbnf";

inline constexpr std::string_view kListGrammar = R"gbnf(
root ::= item{1,5}
item ::= "- " [^\n]+ "\n"
)gbnf";

inline constexpr std::string_view kCLikeGrammar = R"gbnf(
root      ::= function+
function  ::= type " " ident "(" params? ")" ws block ws
params    ::= type " " ident ("," ws type " " ident)*
type      ::= ("int" | "void" | "char") "*"?
block     ::= "{" ws stmt* "}"
stmt      ::= ( "return" (" " expr)? ";"
              | type " " ident ws "=" ws expr ";"
              | ident ws "=" ws expr ";"
              | "while" ws "(" expr ")" ws block
              | block ) ws
expr      ::= operand (ws [-+*/<>] ws operand)*
operand   ::= ident | [0-9]+ | "(" ws expr ws ")" | ident "(" (expr ("," ws expr)*)? ")"
ident     ::= [a-zA-Z_] [a-zA-Z0-9_]*
ws        ::= [ \t\n]*
)gbnf";

// A vocabulary of the 256 single bytes, for feeding raw strings.
inline std::shared_ptr<const TokenVocabulary> byte_vocabulary() {
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  pieces.push_back("");  // 256: end of generation
  return TokenVocabulary::from_pieces(std::move(pieces), {256});
}

// Every string of 1..max_length bytes over `alphabet`, shortest first: pieces that split and
// join whatever the alphabet's grammars are made of.
inline std::vector<std::string> all_strings(std::string_view alphabet, int max_length) {
  std::vector<std::string> out;
  std::vector<std::string> level{""};
  for (int len = 1; len <= max_length; ++len) {
    std::vector<std::string> next;
    for (const auto& s : level) {
      for (char c : alphabet) next.push_back(s + c);
    }
    out.insert(out.end(), next.begin(), next.end());
    level = std::move(next);
  }
  return out;
}

inline std::shared_ptr<const CompiledGrammar> compile_or_die(
    std::string_view gbnf, std::shared_ptr<const TokenVocabulary> vocab) {
  auto grammar = parse_gbnf(gbnf);
  if (!grammar.ok()) return nullptr;
  auto compiled = CompiledGrammar::compile(*grammar, std::move(vocab));
  return compiled.ok() ? *compiled : nullptr;
}

// Whether the grammar accepts exactly `text` (a complete sentence).
inline bool accepts(const std::shared_ptr<const CompiledGrammar>& g, std::string_view text) {
  GrammarMatcher m(g);
  return m.accept_string(text) && m.can_end();
}

}  // namespace strata::grammar::testing

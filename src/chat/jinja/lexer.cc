#include "chat/jinja/lexer.h"

#include <cerrno>
#include <cstdlib>

#include "chat/jinja/py_string.h"

namespace strata::jinja {
namespace {

Error syntax_error(int line, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, "line " + std::to_string(line) + ": " + what);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// jinja2 decodes string literals with Python's "unicode-escape" codec; unknown escapes stay as
// written (backslash kept).
Result<std::string> decode_string_literal(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 >= body.size()) {
      out += body[i];
      continue;
    }
    char c = body[++i];
    switch (c) {
      case '\n':
        break;  // line continuation
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
      case 'u':
      case 'U': {
        size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        char32_t cp = 0;
        for (size_t k = 0; k < digits; ++k) {
          int h = i + 1 + k < body.size() ? hex_value(body[i + 1 + k]) : -1;
          if (h < 0)
            return syntax_error(line,
                                std::string("truncated \\") + c + " escape in string literal");
          cp = cp * 16 + static_cast<char32_t>(h);
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
          return syntax_error(line, "string literal escape is not a valid Unicode code point");
        append_utf8(cp, &out);
        i += digits;
        break;
      }
      case 'N':
        return syntax_error(line, "unsupported \\N{...} escape in string literal");
      default:
        if (c >= '0' && c <= '7') {
          char32_t cp = static_cast<char32_t>(c - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7';
               ++k)
            cp = cp * 8 + static_cast<char32_t>(body[++i] - '0');
          append_utf8(cp, &out);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  Result<std::vector<Token>> run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t tag = find_tag_start(pos_);
      if (tag == std::string::npos) {
        emit_data(src_.substr(pos_));
        advance_to(src_.size());
        break;
      }
      char kind = src_[tag + 1];
      char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      if (sign != '-' && sign != '+') sign = '\0';
      std::string text = src_.substr(pos_, tag - pos_);
      strip_text_before_tag(&text, sign, kind != '{', line_starting);
      emit_data(std::move(text));
      advance_to(tag);
      size_t body = tag + 2 + (sign ? 1 : 0);
      if (kind == '#') {
        STRATA_RETURN_IF_ERROR(skip_comment(body));
      } else if (size_t raw_body = kind == '%' ? match_raw_begin(body) : std::string::npos;
                 raw_body != std::string::npos) {
        STRATA_RETURN_IF_ERROR(lex_raw(raw_body));
      } else {
        STRATA_RETURN_IF_ERROR(lex_tag(kind == '{', body));
      }
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    tokens_.push_back(Token{TokenType::kEof, "", line_, 0, 0.0});
    return std::move(tokens_);
  }

 private:
  size_t find_tag_start(size_t from) const {
    for (size_t p = src_.find('{', from); p != std::string::npos; p = src_.find('{', p + 1)) {
      if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#'))
        return p;
    }
    return std::string::npos;
  }

  // "-" strips all whitespace before the tag; otherwise lstrip_blocks removes the spaces/tabs
  // between the start of the line and a block or comment tag.
  static void strip_text_before_tag(std::string* text, char sign, bool block_or_comment,
                                    bool line_starting) {
    if (sign == '-') {
      *text = py_strip(*text, std::nullopt, false, true);
      return;
    }
    if (sign == '+' || !block_or_comment) return;
    size_t nl = text->rfind('\n');
    size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting) return;
    if (l_pos == text->size()) return;
    for (size_t i = l_pos; i < text->size(); ++i)
      if (!py_is_space_ascii((*text)[i])) return;
    text->resize(l_pos);
  }

  void emit_data(std::string text) {
    if (text.empty()) return;
    tokens_.push_back(Token{TokenType::kData, std::move(text), line_, 0, 0.0});
  }

  // Moves pos_ forward, counting lines.
  void advance_to(size_t p) {
    for (; pos_ < p; ++pos_)
      if (src_[pos_] == '\n') ++line_;
  }

  size_t skip_spaces(size_t p) const {
    while (p < src_.size() && py_is_space_ascii(src_[p])) ++p;
    return p;
  }

  // After a block end: "-%}" eats all following whitespace, "%}" one newline (trim_blocks),
  // "+%}" nothing. Returns the position after the end marker and what it consumed.
  size_t after_block_end(size_t p, char sign, bool trim_newline) const {
    if (sign == '-') return skip_spaces(p);
    if (sign == '\0' && trim_newline && p < src_.size() && src_[p] == '\n') return p + 1;
    return p;
  }

  Status skip_comment(size_t body) {
    for (size_t p = body; p + 1 < src_.size(); ++p) {
      if (src_[p] == '#' && src_[p + 1] == '}') {
        char sign = p > body && (src_[p - 1] == '-' || src_[p - 1] == '+') ? src_[p - 1] : '\0';
        advance_to(after_block_end(p + 2, sign, true));
        return ok_status();
      }
    }
    return syntax_error(line_, "missing end of comment tag '#}'");
  }

  // `{% raw %}` / `{%- raw -%}`: returns the position after its end marker, or npos.
  size_t match_raw_begin(size_t body) const {
    size_t p = skip_spaces(body);
    if (src_.compare(p, 3, "raw") != 0) return std::string::npos;
    p = skip_spaces(p + 3);
    if (src_.compare(p, 3, "-%}") == 0) return skip_spaces(p + 3);
    if (src_.compare(p, 2, "%}") == 0) return p + 2;
    return std::string::npos;
  }

  Status lex_raw(size_t raw_body) {
    int start_line = line_;
    advance_to(raw_body);
    for (size_t p = src_.find("{%", raw_body); p != std::string::npos; p = src_.find("{%", p + 1)) {
      char sign = p + 2 < src_.size() ? src_[p + 2] : '\0';
      if (sign != '-' && sign != '+') sign = '\0';
      size_t q = skip_spaces(p + 2 + (sign ? 1 : 0));
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q = skip_spaces(q + 6);
      char end_sign = '\0';
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) end_sign = src_[q++];
      if (src_.compare(q, 2, "%}") != 0) continue;
      std::string text = src_.substr(raw_body, p - raw_body);
      bool line_starting = raw_body > 0 && src_[raw_body - 1] == '\n';
      strip_text_before_tag(&text, sign, true, line_starting);
      emit_data(std::move(text));
      advance_to(after_block_end(q + 2, end_sign, true));
      return ok_status();
    }
    return syntax_error(start_line, "missing '{% endraw %}' for '{% raw %}'");
  }

  Status lex_tag(bool variable, size_t body) {
    int tag_line = line_;
    tokens_.push_back(
        Token{variable ? TokenType::kVariableBegin : TokenType::kBlockBegin, "", line_, 0, 0.0});
    advance_to(body);
    std::vector<char> brackets;
    while (true) {
      size_t p = pos_;
      if (p >= src_.size())
        return syntax_error(tag_line, variable ? "unexpected end of template, expected '}}'"
                                               : "unexpected end of template, expected '%}'");
      if (brackets.empty()) {
        const char* end = variable ? "}}" : "%}";
        char sign = (src_[p] == '-' || (src_[p] == '+' && !variable)) ? src_[p] : '\0';
        if (src_.compare(p + (sign ? 1 : 0), 2, end) == 0) {
          tokens_.push_back(
              Token{variable ? TokenType::kVariableEnd : TokenType::kBlockEnd, "", line_, 0, 0.0});
          advance_to(after_block_end(p + (sign ? 3 : 2), sign, !variable));
          return ok_status();
        }
      }
      char c = src_[p];
      if (py_is_space_ascii(c)) {
        advance_to(p + 1);
        continue;
      }
      if (is_digit(c)) {
        STRATA_RETURN_IF_ERROR(lex_number(p));
        continue;
      }
      if (is_name_start(c)) {
        size_t q = p;
        while (q < src_.size() && is_name_char(src_[q])) ++q;
        tokens_.push_back(Token{TokenType::kName, src_.substr(p, q - p), line_, 0, 0.0});
        advance_to(q);
        continue;
      }
      if (c == '\'' || c == '"') {
        size_t q = p + 1;
        while (q < src_.size() && src_[q] != c) q += src_[q] == '\\' ? 2 : 1;
        if (q >= src_.size()) return syntax_error(line_, "unterminated string literal");
        int line = line_;
        STRATA_ASSIGN_OR_RETURN(
            std::string text,
            decode_string_literal(std::string_view(src_).substr(p + 1, q - p - 1), line));
        tokens_.push_back(Token{TokenType::kString, std::move(text), line, 0, 0.0});
        advance_to(q + 1);
        continue;
      }
      static constexpr std::string_view kTwoCharOps[] = {"//", "**", "==", "!=", "<=", ">="};
      std::string op;
      for (auto two : kTwoCharOps)
        if (src_.compare(p, 2, two) == 0) op = two;
      if (op.empty() && std::string_view("+-*/%~<>=.,:|()[]{};").find(c) != std::string_view::npos)
        op = c;
      if (op.empty()) return syntax_error(line_, std::string("unexpected character '") + c + "'");
      if (op == "(" || op == "[" || op == "{") {
        if (brackets.size() >= 1024) return syntax_error(line_, "brackets nest too deeply");
        brackets.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
      } else if (op == ")" || op == "]" || op == "}") {
        if (brackets.empty() || brackets.back() != op[0])
          return syntax_error(line_, "unexpected '" + op + "'");
        brackets.pop_back();
      }
      tokens_.push_back(Token{TokenType::kOperator, op, line_, 0, 0.0});
      advance_to(p + op.size());
    }
  }

  // Integers `\d+(_\d+)*`, floats with a fraction and/or exponent (jinja2's float_re).
  Status lex_number(size_t p) {
    const auto digits = [&](size_t q) {
      while (q < src_.size() && (is_digit(src_[q]) ||
                                 (src_[q] == '_' && q + 1 < src_.size() && is_digit(src_[q + 1]))))
        ++q;
      return q;
    };
    size_t q = digits(p);
    bool is_float = false;
    if (q + 1 < src_.size() && src_[q] == '.' && is_digit(src_[q + 1])) {
      q = digits(q + 1);
      is_float = true;
    }
    if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
      size_t e = q + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < src_.size() && is_digit(src_[e])) {
        q = digits(e);
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = p; i < q; ++i)
      if (src_[i] != '_') text += src_[i];
    Token token{is_float ? TokenType::kFloat : TokenType::kInteger, text, line_, 0, 0.0};
    errno = 0;
    if (is_float) {
      token.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      token.int_value = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) return syntax_error(line_, "integer literal " + text + " is too large");
    }
    tokens_.push_back(std::move(token));
    advance_to(q);
    return ok_status();
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

// jinja2 normalizes \r\n and \r to \n and, without keep_trailing_newline, drops one final newline.
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

Result<std::vector<Token>> tokenize(std::string_view source) {
  Lexer lexer(normalize_newlines(source));
  return lexer.run();
}

}  // namespace strata::jinja

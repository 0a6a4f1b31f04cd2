#include "chat/jinja/py_string.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace strata::jinja {
namespace {

// Decodes the code point at text[pos]; returns its byte length (1 for invalid bytes).
size_t decode_utf8(std::string_view text, size_t pos, char32_t* cp) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char c = byte(pos);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (pos + len > text.size()) len = 1;
  if (len == 1) {
    *cp = c;
    return 1;
  }
  char32_t value = c & (0x7F >> len);
  for (size_t i = 1; i < len; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) {
      *cp = c;
      return 1;
    }
    value = (value << 6) | (byte(pos + i) & 0x3F);
  }
  *cp = value;
  return len;
}

// Python's str.isspace() set (Unicode White_Space plus the \x1c-\x1f separators).
bool is_space_cp(char32_t cp) {
  if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Length of the whitespace code point at pos, or 0.
size_t space_at(std::string_view text, size_t pos) {
  char32_t cp;
  size_t len = decode_utf8(text, pos, &cp);
  return is_space_cp(cp) ? len : 0;
}

// Length of the whitespace code point that ends at `end`, or 0.
size_t space_before(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && end - start < 4 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
    --start;
  char32_t cp;
  size_t len = decode_utf8(text, start, &cp);
  return (start + len == end && is_space_cp(cp)) ? len : 0;
}

}  // namespace

bool py_is_space_ascii(char c) { return is_space_cp(static_cast<unsigned char>(c)); }

std::string py_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits in scientific form: d.ddde[+-]X
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e_pos = sci.find('e');
  int exponent = std::stoi(sci.substr(e_pos + 1));
  std::string digits;
  for (size_t i = 0; i < e_pos; ++i)
    if (sci[i] != '.') digits += sci[i];
  std::string out = negative ? "-" : "";
  // Python's repr switches to exponent notation outside 1e-4 <= |x| < 1e16.
  if (exponent < -4 || exponent >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    return out + exp_buf;
  }
  if (exponent < 0) {
    out += "0.";
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out += digits;
    return out;
  }
  size_t int_digits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= int_digits) {
    out += digits;
    out.append(int_digits - digits.size(), '0');
    out += ".0";
    return out;
  }
  out.append(digits, 0, int_digits);
  out += '.';
  out.append(digits, int_digits, std::string::npos);
  return out;
}

std::string py_string_repr(std::string_view text) {
  bool has_single = text.find('\'') != std::string_view::npos;
  bool has_double = text.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    size_t len = decode_utf8(text, i, &cp);
    char buf[16];
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0xA0 && len > 1) || cp == 0xAD) {
      // Non-printable ASCII/Latin-1 controls (and NBSP/soft hyphen, which Python also escapes).
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (len == 1 && cp >= 0x80) {
      // Invalid UTF-8 byte: cannot come from a Python str; show it escaped.
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else if (cp == 0x2028 || cp == 0x2029 || (cp >= 0x200B && cp <= 0x200F) || cp == 0xFEFF) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  out += quote;
  return out;
}

std::string py_strip(std::string_view text, std::optional<std::string_view> chars, bool left,
                     bool right) {
  size_t begin = 0, end = text.size();
  if (!chars) {
    while (left && begin < end) {
      size_t len = space_at(text, begin);
      if (len == 0) break;
      begin += len;
    }
    while (right && end > begin) {
      size_t len = space_before(text, end);
      if (len == 0) break;
      end -= len;
    }
    return std::string(text.substr(begin, end - begin));
  }
  // Strip code points in `chars`; compare code point by code point so multi-byte chars work.
  std::vector<std::string_view> set;
  for (size_t i = 0; i < chars->size();) {
    char32_t cp;
    size_t len = decode_utf8(*chars, i, &cp);
    set.push_back(chars->substr(i, len));
    i += len;
  }
  const auto in_set = [&](std::string_view piece) {
    for (auto s : set)
      if (s == piece) return true;
    return false;
  };
  while (left && begin < end) {
    char32_t cp;
    size_t len = decode_utf8(text, begin, &cp);
    if (!in_set(text.substr(begin, len))) break;
    begin += len;
  }
  while (right && end > begin) {
    size_t start = end - 1;
    while (start > begin && end - start < 4 &&
           (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
      --start;
    if (!in_set(text.substr(start, end - start))) break;
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

std::vector<std::string> py_split(std::string_view text, std::optional<std::string_view> sep,
                                  long maxsplit) {
  std::vector<std::string> parts;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<long>(parts.size()) < maxsplit) {
      size_t hit = text.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      parts.emplace_back(text.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    parts.emplace_back(text.substr(pos));
    return parts;
  }
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len;
    while (pos < text.size() && (len = space_at(text, pos)) > 0) pos += len;
    if (pos >= text.size()) break;
    if (maxsplit >= 0 && static_cast<long>(parts.size()) >= maxsplit) {
      parts.emplace_back(text.substr(pos));  // Python keeps the remainder's trailing space
      return parts;
    }
    size_t start = pos;
    while (pos < text.size() && space_at(text, pos) == 0) {
      char32_t cp;
      pos += decode_utf8(text, pos, &cp);
    }
    parts.emplace_back(text.substr(start, pos - start));
  }
  return parts;
}

std::vector<std::string> py_rsplit(std::string_view text, std::optional<std::string_view> sep,
                                   long maxsplit) {
  if (maxsplit < 0) return py_split(text, sep, maxsplit);
  std::vector<std::string> parts;
  if (sep) {
    size_t end = text.size();
    while (static_cast<long>(parts.size()) < maxsplit) {
      size_t hit =
          end >= sep->size() ? text.rfind(*sep, end - sep->size()) : std::string_view::npos;
      if (hit == std::string_view::npos) break;
      parts.emplace_back(text.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    parts.emplace_back(text.substr(0, end));
  } else {
    size_t end = text.size();
    while (end > 0) {
      size_t len;
      while (end > 0 && (len = space_before(text, end)) > 0) end -= len;
      if (end == 0) break;
      if (static_cast<long>(parts.size()) >= maxsplit) {
        parts.emplace_back(text.substr(0, end));
        end = 0;
        break;
      }
      size_t start = end;
      while (start > 0 && space_before(text, start) == 0) {
        --start;
        while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
      }
      parts.emplace_back(text.substr(start, end - start));
      end = start;
    }
  }
  return {parts.rbegin(), parts.rend()};
}

std::vector<std::string> py_splitlines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0, pos = 0;
  while (pos < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[pos]);
    size_t break_len = 0;
    if (c == '\r') {
      break_len = (pos + 1 < text.size() && text[pos + 1] == '\n') ? 2 : 1;
    } else if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E)) {
      break_len = 1;
    } else if (c == 0xC2 && pos + 1 < text.size() &&
               static_cast<unsigned char>(text[pos + 1]) == 0x85) {
      break_len = 2;
    } else if (c == 0xE2 && pos + 2 < text.size() &&
               static_cast<unsigned char>(text[pos + 1]) == 0x80 &&
               (static_cast<unsigned char>(text[pos + 2]) == 0xA8 ||
                static_cast<unsigned char>(text[pos + 2]) == 0xA9)) {
      break_len = 3;
    }
    if (break_len == 0) {
      ++pos;
      continue;
    }
    lines.emplace_back(text.substr(start, pos - start));
    pos += break_len;
    start = pos;
  }
  if (start < text.size()) lines.emplace_back(text.substr(start));
  return lines;
}

std::string py_replace(std::string_view text, std::string_view old_text, std::string_view new_text,
                       long count) {
  std::string out;
  if (old_text.empty()) {
    // Python inserts `new` before every code point and at the end.
    auto offsets = utf8_offsets(text);
    long done = 0;
    for (size_t i = 0; i + 1 < offsets.size(); ++i) {
      if (count < 0 || done < count) {
        out += new_text;
        ++done;
      }
      out += text.substr(offsets[i], offsets[i + 1] - offsets[i]);
    }
    if (count < 0 || done < count) out += new_text;
    return out;
  }
  size_t pos = 0;
  long done = 0;
  while (count < 0 || done < count) {
    size_t hit = text.find(old_text, pos);
    if (hit == std::string_view::npos) break;
    out += text.substr(pos, hit - pos);
    out += new_text;
    pos = hit + old_text.size();
    ++done;
  }
  out += text.substr(pos);
  return out;
}

namespace {

// Simple (one-to-one) case mappings of the scripts chat text mostly uses: ASCII, Latin-1,
// Latin Extended-A, Greek, Cyrillic and fullwidth Latin. Other code points map to themselves.
char32_t lower_cp(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x130) return 'i';
    if (c == 0x178) return 0xFF;
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    if (c == 0x131 || c == 0x138 || c == 0x149 || c == 0x17F) return c;
    return odd_upper ? ((c & 1) ? c + 1 : c) : ((c & 1) ? c : c + 1);
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return c;
}

char32_t upper_cp(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0xB5) return 0x39C;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if (c == 0x130 || c == 0x138 || c == 0x149 || c == 0x178) return c;
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    return odd_upper ? ((c & 1) ? c : c - 1) : ((c & 1) ? c - 1 : c);
  }
  if (c == 0x3C2) return 0x3A3;  // final sigma
  if (c >= 0x3B1 && c <= 0x3C9) return c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return c;
}

bool is_cased(char32_t c) { return lower_cp(c) != c || upper_cp(c) != c || c == 0xDF; }

// Applies `map` to each code point; `first_upper` switches to upper-casing at word starts
// (title) or only at the very start (capitalize).
enum class CaseMode { kUpper, kLower, kTitle, kCapitalize };

std::string map_case(std::string_view text, CaseMode mode) {
  std::string out;
  out.reserve(text.size());
  bool previous_cased = false;
  bool first = true;
  for (size_t i = 0; i < text.size();) {
    char32_t c;
    size_t len = decode_utf8(text, i, &c);
    bool upper;
    switch (mode) {
      case CaseMode::kUpper:
        upper = true;
        break;
      case CaseMode::kLower:
        upper = false;
        break;
      case CaseMode::kTitle:
        upper = !previous_cased;
        break;
      default:
        upper = first;
        break;
    }
    if (len == 1 && c >= 0x80) {
      out += text[i];  // invalid byte: copy through
    } else if (upper && c == 0xDF) {
      out += "SS";  // Python: "ß".upper() == "SS"
    } else {
      append_utf8(upper ? upper_cp(c) : lower_cp(c), &out);
    }
    previous_cased = is_cased(c);
    first = false;
    i += len;
  }
  return out;
}

}  // namespace

void append_utf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string py_upper(std::string_view text) { return map_case(text, CaseMode::kUpper); }
std::string py_lower(std::string_view text) { return map_case(text, CaseMode::kLower); }
std::string py_title(std::string_view text) { return map_case(text, CaseMode::kTitle); }
std::string py_capitalize(std::string_view text) { return map_case(text, CaseMode::kCapitalize); }

size_t utf8_length(std::string_view text) {
  size_t n = 0;
  for (size_t i = 0; i < text.size();) {
    char32_t cp;
    i += decode_utf8(text, i, &cp);
    ++n;
  }
  return n;
}

std::vector<size_t> utf8_offsets(std::string_view text) {
  std::vector<size_t> offsets;
  for (size_t i = 0; i < text.size();) {
    offsets.push_back(i);
    char32_t cp;
    i += decode_utf8(text, i, &cp);
  }
  offsets.push_back(text.size());
  return offsets;
}

}  // namespace strata::jinja

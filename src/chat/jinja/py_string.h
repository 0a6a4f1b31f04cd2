// Python str semantics needed by Jinja templates, on UTF-8 std::string.
// Case mapping covers ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic and fullwidth Latin
// (other letters are left as they are); whitespace is Python's str.isspace() set.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::jinja {

// Python float repr: shortest round-trip digits, "1.0", "1e+16", "1e-05", "inf", "nan".
std::string py_float_repr(double value);
// Python repr of a str: single quotes unless the text has ' and no ", escapes as Python does.
std::string py_string_repr(std::string_view text);

// str.strip/lstrip/rstrip; chars = nullopt means whitespace.
std::string py_strip(std::string_view text, std::optional<std::string_view> chars, bool left,
                     bool right);
// str.split(sep, maxsplit); sep = nullopt splits on runs of whitespace and drops empty parts.
std::vector<std::string> py_split(std::string_view text, std::optional<std::string_view> sep,
                                  long maxsplit);
// str.rsplit(sep, maxsplit).
std::vector<std::string> py_rsplit(std::string_view text, std::optional<std::string_view> sep,
                                   long maxsplit);
// str.splitlines() without keepends: breaks at \n, \r\n, \r, \v, \f, \x1c-\x1e, U+0085, U+2028/9.
std::vector<std::string> py_splitlines(std::string_view text);
// str.replace(old, new, count); count < 0 replaces all.
std::string py_replace(std::string_view text, std::string_view old_text, std::string_view new_text,
                       long count);

std::string py_upper(std::string_view text);
std::string py_lower(std::string_view text);
// str.title(): a letter after a non-letter is upper-cased, every other letter lower-cased.
std::string py_title(std::string_view text);
// str.capitalize(): first character upper-cased, the rest lower-cased.
std::string py_capitalize(std::string_view text);

// Number of code points in UTF-8 text (Python len(str)).
size_t utf8_length(std::string_view text);
// Byte offsets of each code point start, plus text.size() at the end.
std::vector<size_t> utf8_offsets(std::string_view text);

bool py_is_space_ascii(char c);
void append_utf8(char32_t cp, std::string* out);

}  // namespace strata::jinja

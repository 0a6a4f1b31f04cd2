// Tool calls streamed while the reply is generated. Each push re-reads the whole reply (replies
// are short) and sends what is new since the last push: content text once it can no longer be
// the start of a call, a call's name once its string is complete, its arguments' JSON text as
// it grows. The scan is a small JSON lexer that only tracks strings and nesting, so it works on
// a prefix that no JSON parser would accept yet.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "strata/tool_calls.h"

namespace strata {
namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralPrefix = "[TOOL_CALLS]";
constexpr std::string_view kGenericKey = R"("tool_calls")";

size_t skip_ws(std::string_view s, size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  return i;
}

// The end of the JSON value starting at i (one past its last byte), or npos while it is
// incomplete. Values inside strings and nested containers are skipped whole.
size_t value_end(std::string_view s, size_t i) {
  if (i >= s.size()) return std::string_view::npos;
  if (s[i] == '"') {
    for (size_t j = i + 1; j < s.size(); ++j) {
      if (s[j] == '\\') {
        ++j;
      } else if (s[j] == '"') {
        return j + 1;
      }
    }
    return std::string_view::npos;
  }
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    for (size_t j = i; j < s.size(); ++j) {
      const char c = s[j];
      if (c == '"') {
        const size_t end = value_end(s, j);
        if (end == std::string_view::npos) return end;
        j = end - 1;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return j + 1;
      }
    }
    return std::string_view::npos;
  }
  // A number or literal ends where a delimiter begins.
  size_t j = i;
  while (j < s.size() && s[j] != ',' && s[j] != '}' && s[j] != ']' && s[j] != ' ' && s[j] != '\n' &&
         s[j] != '\t' && s[j] != '\r') {
    ++j;
  }
  return j < s.size() ? j : std::string_view::npos;
}

struct PartialCall {
  std::string name;       // empty until its string is complete
  std::string arguments;  // the arguments' JSON text so far
};

// Reads the call object starting at `at` ('{'): its name and as much of its arguments as there
// is. Returns where the object ends (npos while incomplete).
size_t read_partial_call(std::string_view s, size_t at, PartialCall& call) {
  size_t i = skip_ws(s, at + 1);
  while (i < s.size() && s[i] == '"') {
    const size_t key_end = value_end(s, i);
    if (key_end == std::string_view::npos) return key_end;
    const std::string_view key = s.substr(i + 1, key_end - i - 2);
    i = skip_ws(s, key_end);
    if (i >= s.size() || s[i] != ':') return std::string_view::npos;
    const size_t value = skip_ws(s, i + 1);
    const size_t end = value_end(s, value);
    if (key == "name" && end != std::string_view::npos) {
      const auto j = nlohmann::json::parse(s.substr(value, end - value), nullptr, false);
      if (j.is_string()) call.name = j.get<std::string>();
    } else if (key == "arguments" || key == "parameters") {
      const size_t stop = end == std::string_view::npos ? s.size() : end;
      call.arguments = std::string(s.substr(value, stop - value));
    }
    if (end == std::string_view::npos) return end;
    i = skip_ws(s, end);
    if (i < s.size() && s[i] == ',') i = skip_ws(s, i + 1);
  }
  return i < s.size() && s[i] == '}' ? i + 1 : std::string_view::npos;
}

// The call objects of a JSON array starting at `at` ('['), as far as the text goes.
void read_call_array(std::string_view s, size_t at, std::vector<PartialCall>& calls) {
  size_t i = skip_ws(s, at + 1);
  while (i < s.size() && s[i] == '{') {
    PartialCall& call = calls.emplace_back();
    const size_t end = read_partial_call(s, i, call);
    if (end == std::string_view::npos) return;
    i = skip_ws(s, end);
    if (i < s.size() && s[i] == ',') i = skip_ws(s, i + 1);
  }
}

// How much of `s` may be sent as content before a possible marker: all of it unless its end
// could be the start of `marker`.
size_t safe_prefix(std::string_view s, std::string_view marker) {
  for (size_t keep = std::min(s.size(), marker.size() - 1); keep > 0; --keep) {
    if (marker.starts_with(s.substr(s.size() - keep))) return s.size() - keep;
  }
  return s.size();
}

}  // namespace

// The reply split into content and calls as far as the text goes.
struct ToolCallStream::Scan {
  std::string content;
  std::vector<PartialCall> calls;
};

ToolCallStream::ToolCallStream(ToolCallFormat format) : format_(format) {}

ToolCallStream::Scan ToolCallStream::scan(bool final) const {
  Scan out;
  const std::string_view s = text_;
  if (format_ == ToolCallFormat::kHermes) {
    size_t pos = 0;
    while (true) {
      const size_t open = s.find(kHermesOpen, pos);
      if (open == std::string_view::npos) {
        const std::string_view rest = s.substr(pos);
        out.content += final ? rest : rest.substr(0, safe_prefix(rest, kHermesOpen));
        break;
      }
      out.content += s.substr(pos, open - pos);
      const size_t body = skip_ws(s, open + kHermesOpen.size());
      if (body >= s.size() || s[body] != '{') break;
      const size_t end = read_partial_call(s, body, out.calls.emplace_back());
      if (end == std::string_view::npos) break;
      const size_t close = s.find(kHermesClose, end);
      if (close == std::string_view::npos) break;
      pos = close + kHermesClose.size();
    }
    return out;
  }
  // The other formats are all calls or all text, decided by how the reply begins.
  size_t at = skip_ws(s, 0);
  if (format_ == ToolCallFormat::kLlama3) {
    if (s.substr(at).starts_with(kPythonTag)) {
      at = skip_ws(s, at + kPythonTag.size());
    } else if (!final && at < s.size() && kPythonTag.starts_with(s.substr(at))) {
      return out;  // may still become the tag
    }
  }
  const std::string_view body = s.substr(at);
  const std::string_view marker =
      format_ == ToolCallFormat::kMistral ? kMistralPrefix : std::string_view("{");
  if (!body.starts_with(marker)) {
    if (!final && marker.starts_with(body)) return out;  // undecided
    out.content = text_;
    return out;
  }
  if (format_ == ToolCallFormat::kLlama3) {
    read_partial_call(s, at, out.calls.emplace_back());
  } else if (format_ == ToolCallFormat::kMistral) {
    const size_t array = skip_ws(s, at + kMistralPrefix.size());
    if (array < s.size() && s[array] == '[') read_call_array(s, array, out.calls);
  } else {
    const size_t key = skip_ws(s, at + 1);
    const std::string_view rest = s.substr(key);
    if (!rest.starts_with(kGenericKey)) {
      if (!final && kGenericKey.starts_with(rest)) return out;  // undecided
      out.content = text_;
      return out;
    }
    const size_t colon = skip_ws(s, key + kGenericKey.size());
    if (colon < s.size() && s[colon] == ':') {
      const size_t array = skip_ws(s, colon + 1);
      if (array < s.size() && s[array] == '[') read_call_array(s, array, out.calls);
    }
  }
  return out;
}

ToolCallStream::Delta ToolCallStream::diff(const Scan& scan) {
  Delta delta;
  // Content is sent trimmed, as the whole-reply parse gives it: leading blanks never, trailing
  // ones only once more text follows them.
  const size_t begin = scan.content.find_first_not_of(" \t\r\n");
  std::string_view content;
  if (begin != std::string::npos) {
    const size_t end = scan.content.find_last_not_of(" \t\r\n") + 1;
    content = std::string_view(scan.content).substr(begin, end - begin);
  }
  if (content.size() > content_sent_.size() && content.starts_with(content_sent_)) {
    delta.content = std::string(content.substr(content_sent_.size()));
    content_sent_ = std::string(content);
  }
  for (size_t i = 0; i < scan.calls.size(); ++i) {
    const PartialCall& call = scan.calls[i];
    if (call.name.empty()) break;  // a call starts being sent once its name is known
    if (i == calls_sent_.size()) {
      calls_sent_.push_back(0);
      delta.calls.push_back({i, true, call.name, ""});
    }
    size_t& sent = calls_sent_[i];
    if (call.arguments.size() > sent) {
      if (delta.calls.empty() || delta.calls.back().index != i)
        delta.calls.push_back({i, false, "", ""});
      delta.calls.back().arguments = call.arguments.substr(sent);
      sent = call.arguments.size();
    }
  }
  return delta;
}

ToolCallStream::Delta ToolCallStream::push(std::string_view text) {
  text_ += text;
  return diff(scan(false));
}

ToolCallStream::Delta ToolCallStream::finish() { return diff(scan(true)); }

}  // namespace strata

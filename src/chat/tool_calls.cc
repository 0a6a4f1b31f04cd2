// Tool-call formats: detection from the chat template, the prompt for templates without tools,
// and parsing replies into calls. The constraint that makes calls parse is in tool_grammar.cc.
#include "strata/tool_calls.h"

#include <nlohmann/json.hpp>

#include "strata/json_depth.h"

namespace strata {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralPrefix = "[TOOL_CALLS]";

std::string trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return "";
  const size_t end = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(begin, end - begin + 1));
}

// JSON allows numbers of any size; nlohmann refuses those past double's range (1e999), and
// a constrained model may well write one. So numbers travel through the parse as marked
// strings and come back verbatim in the arguments text. The mark starts with U+0001, which a
// reply's own strings would only hold as the escape \u0001 (read as the mark: a known limit).
constexpr std::string_view kNumberMark = "\x01#";

std::string mark_numbers(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"') {  // copy a string, escapes included
      out += text[i++];
      while (i < text.size() && text[i] != '"') {
        if (text[i] == '\\' && i + 1 < text.size()) out += text[i++];
        out += text[i++];
      }
      if (i < text.size()) out += text[i++];
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      const size_t begin = i;
      while (i < text.size() &&
             std::string_view("0123456789+-.eE").find(text[i]) != std::string_view::npos) {
        ++i;
      }
      out += "\"\\u0001#";  // the mark, written as JSON escapes it
      out += text.substr(begin, i - begin);
      out += '"';
    } else {
      out += text[i++];
    }
  }
  return out;
}

// dump() of a value parsed from mark_numbers() text, with the numbers restored.
std::string dump_restoring_numbers(const Json& value) {
  const std::string dumped = value.dump();
  const std::string marked = "\"\\u0001#";  // how dump() writes the mark's opening
  std::string out;
  size_t pos = 0;
  for (size_t at; (at = dumped.find(marked, pos)) != std::string::npos;) {
    const size_t end = dumped.find('"', at + marked.size());
    out.append(dumped, pos, at - pos);
    out.append(dumped, at + marked.size(), end - at - marked.size());
    pos = end + 1;
  }
  out.append(dumped, pos);
  return out;
}

bool is_plain_string(const Json& j) {
  return j.is_string() && !j.get<std::string>().starts_with(kNumberMark);
}

// A call object {"name": string, <arguments_key>: object or JSON-in-a-string}; false otherwise.
bool read_call(const Json& j, const char* arguments_key, ToolCall& call) {
  if (!j.is_object() || !j.contains("name") || !is_plain_string(j["name"])) return false;
  call.name = j["name"].get<std::string>();
  const auto args = j.find(arguments_key);
  if (args == j.end()) {
    call.arguments = "{}";
  } else if (args->is_object()) {
    call.arguments = dump_restoring_numbers(*args);
  } else if (is_plain_string(*args)) {
    call.arguments = args->get<std::string>();  // some models emit the arguments pre-encoded
  } else {
    return false;
  }
  if (j.contains("id") && is_plain_string(j["id"])) call.id = j["id"].get<std::string>();
  return true;
}

Json parse_json(std::string_view text) {
  // A model's reply is as deep as it chose to make it; deeper than any real call, it is text
  // (a discarded value), never a tree whose dump() would recurse that deep.
  if (json_nesting_depth(text) > kMaxJsonDepth) return Json(Json::value_t::discarded);
  return Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

// A reply's JSON, numbers marked (see mark_numbers).
Json parse_reply_json(std::string_view text) { return parse_json(mark_numbers(text)); }

ParsedReply parse_hermes(std::string_view reply) {
  ParsedReply out;
  std::string content;
  size_t pos = 0;
  while (pos < reply.size()) {
    const size_t open = reply.find(kHermesOpen, pos);
    if (open == std::string_view::npos) break;
    const size_t body = open + kHermesOpen.size();
    size_t close = reply.find(kHermesClose, body);
    const size_t end = close == std::string_view::npos ? reply.size() : close + kHermesClose.size();
    if (close == std::string_view::npos) close = reply.size();  // a reply cut at the limit
    ToolCall call;
    if (!read_call(parse_reply_json(trim(reply.substr(body, close - body))), "arguments", call))
      break;
    content += reply.substr(pos, open - pos);
    out.tool_calls.push_back(std::move(call));
    pos = end;
  }
  content += reply.substr(pos);
  out.content = trim(content);
  return out;
}

ParsedReply parse_llama3(std::string_view reply) {
  ParsedReply out;
  std::string text = trim(reply);
  std::string_view body = text;
  if (body.starts_with(kPythonTag)) body.remove_prefix(kPythonTag.size());
  ToolCall call;
  const Json j = parse_reply_json(trim(body));
  if (read_call(j, j.contains("parameters") ? "parameters" : "arguments", call)) {
    out.tool_calls.push_back(std::move(call));
  } else {
    out.content = text;
  }
  return out;
}

// A JSON array of call objects, as Mistral and the generic format write them.
bool read_call_array(const Json& array, std::vector<ToolCall>& calls) {
  if (!array.is_array() || array.empty()) return false;
  for (const Json& item : array) {
    ToolCall call;
    if (!read_call(item, "arguments", call)) return false;
    calls.push_back(std::move(call));
  }
  return true;
}

ParsedReply parse_mistral(std::string_view reply) {
  ParsedReply out;
  const std::string text = trim(reply);
  std::string_view body = text;
  if (body.starts_with(kMistralPrefix)) body.remove_prefix(kMistralPrefix.size());
  if (!read_call_array(parse_reply_json(trim(body)), out.tool_calls)) {
    out.tool_calls.clear();
    out.content = text;
  }
  return out;
}

ParsedReply parse_generic(std::string_view reply) {
  ParsedReply out;
  const std::string text = trim(reply);
  const Json j = parse_reply_json(text);
  if (!j.is_object() || !j.contains("tool_calls") ||
      !read_call_array(j["tool_calls"], out.tool_calls)) {
    out.tool_calls.clear();
    out.content = text;
  }
  return out;
}

}  // namespace

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kGeneric:
      return "generic";
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama3:
      return "llama3";
    case ToolCallFormat::kMistral:
      return "mistral";
  }
  return "?";
}

ToolCallFormat detect_tool_call_format(std::string_view source) {
  // Qwen3.5 and GLM 4.x wrap XML-style arguments (<function=...>, <arg_key>) in <tool_call>;
  // those formats are not implemented, so such models get the generic JSON format.
  const bool xml_arguments = source.find("<function=") != std::string_view::npos ||
                             source.find("<arg_key>") != std::string_view::npos;
  if (source.find(kHermesOpen) != std::string_view::npos && !xml_arguments) {
    return ToolCallFormat::kHermes;
  }
  if (source.find(kMistralPrefix) != std::string_view::npos) return ToolCallFormat::kMistral;
  if (source.find("<|start_header_id|>") != std::string_view::npos &&
      (source.find("ipython") != std::string_view::npos ||
       source.find(kPythonTag) != std::string_view::npos)) {
    return ToolCallFormat::kLlama3;
  }
  return ToolCallFormat::kGeneric;
}

bool template_renders_tools(std::string_view source) {
  return source.find("tools") != std::string_view::npos;
}

Result<std::string> tool_system_prompt(ToolCallFormat format, std::string_view tools_json) {
  const Json tools = parse_json(tools_json);
  if (!tools.is_array()) {
    return make_error(ErrorCode::kInvalidArgument, "'tools' must be an array of tool objects");
  }
  std::string prompt = "You can call these tools (JSON Schema of each one's arguments):\n";
  for (const Json& tool : tools) {
    const Json& fn = tool.contains("function") ? tool["function"] : tool;
    prompt += fn.dump() + "\n";
  }
  switch (format) {
    case ToolCallFormat::kHermes:
      prompt +=
          "To call a tool, reply with <tool_call>\n{\"name\": <tool name>, \"arguments\": "
          "<arguments "
          "object>}\n</tool_call>";
      break;
    case ToolCallFormat::kLlama3:
      prompt +=
          "To call a tool, reply with {\"name\": <tool name>, \"parameters\": <arguments object>}";
      break;
    case ToolCallFormat::kMistral:
      prompt +=
          "To call tools, reply with [TOOL_CALLS][{\"name\": <tool name>, \"arguments\": "
          "<arguments object>}]";
      break;
    case ToolCallFormat::kGeneric:
      prompt +=
          "To call tools, reply with {\"tool_calls\": [{\"name\": <tool name>, \"arguments\": "
          "<arguments object>}]}";
      break;
  }
  return prompt;
}

ParsedReply parse_tool_calls(ToolCallFormat format, std::string_view reply) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return parse_hermes(reply);
    case ToolCallFormat::kLlama3:
      return parse_llama3(reply);
    case ToolCallFormat::kMistral:
      return parse_mistral(reply);
    case ToolCallFormat::kGeneric:
      return parse_generic(reply);
  }
  return {trim(reply), {}};
}

}  // namespace strata

// Response bodies and server-sent-event chunks in OpenAI's exact shapes: chat.completion,
// chat.completion.chunk (the first chunk of a choice carries the assistant role), text_completion,
// usage, and the logprobs objects of both APIs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "strata/engine.h"
#include "strata/tool_calls.h"

namespace strata::server {

struct ResponseHeader {
  bool chat = false;
  std::string id;  // "chatcmpl-..." or "cmpl-..."
  int64_t created = 0;
  std::string model;
  bool include_usage = false;  // streaming: chunks carry "usage": null, a last chunk the usage
};

// A fresh header: a random id with the API's prefix and the current Unix time.
ResponseHeader make_response_header(bool chat, std::string model, bool include_usage);

// One generated token's log probability and its best alternatives, with token text.
struct LogprobEntry {
  std::string token;
  float logprob = 0;
  std::vector<std::pair<std::string, float>> top;
  size_t text_offset = 0;  // completions: where the token's text starts in the choice's text
};

// llama-server's `timings` of a reply: the prompt's tokens computed (those not cached) and the
// time to the first token, then the tokens generated after it and their time.
struct Timings {
  double prompt_ms = 0;
  double predicted_ms = 0;
};

struct Usage {
  size_t prompt_tokens = 0;
  size_t completion_tokens = 0;
  size_t cached_tokens = 0;        // prompt_tokens_details.cached_tokens: found in the prefix cache
  std::optional<Timings> timings;  // a top-level `timings` object beside the usage
};

struct ChoiceResult {
  std::string text;
  FinishReason finish = FinishReason::kNone;
  bool has_logprobs = false;
  std::vector<LogprobEntry> logprobs;
  // Parsed from the reply when the request had tools (ids assigned); the finish reason is then
  // "tool_calls" and `text` holds what was said besides the calls.
  std::vector<ToolCall> tool_calls;
};

// "stop" or "length" (OpenAI's finish reasons); null for anything else.
const char* openai_finish_reason(FinishReason reason);

// The whole non-streamed response.
std::string completion_body(const ResponseHeader& header, const std::vector<ChoiceResult>& choices,
                            const Usage& usage);

// Streamed chunks, each a JSON text for sse_event().
std::string role_chunk(const ResponseHeader& header, size_t choice);
// `logprobs`: the entries for this chunk's tokens, or null for none requested.
std::string text_chunk(const ResponseHeader& header, size_t choice, const std::string& text,
                       const std::vector<LogprobEntry>* logprobs);
// `tool_calls`: the choice ended in tool calls (finish_reason "tool_calls").
std::string finish_chunk(const ResponseHeader& header, size_t choice, FinishReason finish,
                         bool tool_calls = false);
// A chat delta with tool-call pieces, as OpenAI streams them: a call's first piece carries
// index, id, type and function.name; later ones index and more function.arguments text.
// ids[i] is call i's id.
std::string tool_call_deltas_chunk(const ResponseHeader& header, size_t choice,
                                   const std::vector<ToolCallStream::CallDelta>& calls,
                                   const std::vector<std::string>& ids);
std::string usage_chunk(const ResponseHeader& header, const Usage& usage);

// "data: <json>\n\n", and the stream's last event.
std::string sse_event(const std::string& json);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace strata::server

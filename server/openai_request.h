// OpenAI request bodies -> validated strata requests. Every field OpenAI defines for chat
// completions and completions is type-checked here, with a message naming the field; unknown
// fields are ignored, as OpenAI's own API does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "strata/chat.h"
#include "strata/engine.h"
#include "strata/result.h"
#include "strata/tool_calls.h"

namespace strata::server {

// Choices one request may ask for (`n`); each is one engine sequence.
inline constexpr int kMaxChoices = 16;
// Messages one chat request may hold, as OpenAI allows.
inline constexpr size_t kMaxMessages = 2048;

// A request that failed validation: the error and the field at fault (empty for the body itself).
struct RequestError {
  Error error;
  std::string param;
};

// One completions prompt: text to tokenize, or token ids given by the client.
struct PromptInput {
  bool is_tokens = false;
  std::string text;
  std::vector<TokenId> tokens;
};

struct CompletionRequest {
  bool chat = false;
  std::string model;
  std::string messages_json;         // chat: [{"role", "content": string}, ...]
  std::vector<PromptInput> prompts;  // completions: one or more prompts
  int n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::optional<int> max_tokens;
  bool seeded = false;     // `seed` given: choice i uses seed + i
  std::string tools_json;  // chat: the `tools` array (empty: no tools)
  ToolChoice tool_choice;  // chat: `tool_choice`; calls are parsed unless it is none
  bool parallel_tool_calls = true;
  bool uses_tools() const {
    return !tools_json.empty() && tool_choice.mode != ToolChoiceMode::kNone;
  }
  // Sampling, stop strings, logprobs and constraint; prompt and max_tokens are filled per choice.
  GenerationRequest generation;
};

struct TokenizeRequest {
  std::string content;
  bool add_special = true;
  bool parse_special = true;
  bool with_pieces = false;
};

struct DetokenizeRequest {
  std::vector<TokenId> tokens;
};

// POST /v1/embeddings: `input` in any prompt form, each text or id list one embedding.
struct EmbeddingsRequest {
  std::string model;
  std::vector<PromptInput> inputs;
  bool base64 = false;  // encoding_format "base64": little-endian float32 bytes, base64-encoded
};

// Inputs one embeddings request may carry (OpenAI's limit is 2048).
inline constexpr size_t kMaxEmbeddingInputs = 2048;

// Each returns the request, or the first problem found (request-level 400s).
// `defaults`: the sampling a request gets for the fields it does not set (strata serve --temp,
// --top-k, ...).
std::variant<CompletionRequest, RequestError> parse_chat_request(
    std::string_view body, const SamplingOptions& defaults = {});
std::variant<CompletionRequest, RequestError> parse_completion_request(
    std::string_view body, const SamplingOptions& defaults = {});
std::variant<TokenizeRequest, RequestError> parse_tokenize_request(std::string_view body);
std::variant<DetokenizeRequest, RequestError> parse_detokenize_request(std::string_view body);
std::variant<EmbeddingsRequest, RequestError> parse_embeddings_request(std::string_view body);

}  // namespace strata::server

// libFuzzer target: the input is a request body for the OpenAI routes. Each decoder (chat,
// completions, tokenize, detokenize, embeddings) must never crash, hang or recurse with the
// input's depth; a request it accepts must be internally consistent (n in range, the messages and
// tools it keeps are JSON that parses again, embedding inputs within the limit and not empty),
// and a refusal must carry a message.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>
#include <variant>

#include "server/openai_request.h"

namespace {

using strata::server::CompletionRequest;
using strata::server::RequestError;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "%s\n", what);
  std::abort();
}

template <typename T>
void check_refusal(const std::variant<T, RequestError>& parsed) {
  if (const auto* e = std::get_if<RequestError>(&parsed); e && e->error.message.empty()) {
    fail("a refusal without a message");
  }
}

void check_completion(const std::variant<CompletionRequest, RequestError>& parsed) {
  check_refusal(parsed);
  const auto* r = std::get_if<CompletionRequest>(&parsed);
  if (!r) return;
  if (r->n < 1 || r->n > strata::server::kMaxChoices) fail("n out of range was accepted");
  if (r->chat && nlohmann::json::parse(r->messages_json, nullptr, false).is_discarded()) {
    fail("the kept messages are not JSON");
  }
  if (!r->tools_json.empty() &&
      nlohmann::json::parse(r->tools_json, nullptr, false).is_discarded()) {
    fail("the kept tools are not JSON");
  }
}

void check_embeddings(const std::variant<strata::server::EmbeddingsRequest, RequestError>& parsed) {
  check_refusal(parsed);
  const auto* r = std::get_if<strata::server::EmbeddingsRequest>(&parsed);
  if (!r) return;
  if (r->inputs.empty() || r->inputs.size() > strata::server::kMaxEmbeddingInputs) {
    fail("an embeddings request with no or too many inputs was accepted");
  }
  for (const strata::server::PromptInput& p : r->inputs) {
    if (p.is_tokens ? p.tokens.empty() : p.text.empty()) fail("an empty input was accepted");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  check_completion(strata::server::parse_chat_request(body));
  check_completion(strata::server::parse_completion_request(body));
  check_refusal(strata::server::parse_tokenize_request(body));
  check_refusal(strata::server::parse_detokenize_request(body));
  check_embeddings(strata::server::parse_embeddings_request(body));
  return 0;
}

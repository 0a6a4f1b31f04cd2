// Embedding requests (GenerationRequest::embed) in the step loop: which hidden states a chunk of
// the prompt returns for the request's pooling, how they are pooled as chunks complete, and the
// final event that carries the L2-normalized embedding.
#include <algorithm>
#include <cmath>

#include "engine/engine_impl.h"
#include "kernels/ops.h"

namespace strata {

Result<uint64_t> Engine::Impl::submit_embedding(const GenerationRequest& request,
                                                TokenCallback on_token) {
  if (summary.pooling == Pooling::kNone) {
    return make_error(ErrorCode::kInvalidArgument,
                      "this model does not say how to pool its hidden states into an embedding "
                      "(no " +
                          summary.architecture +
                          ".pooling_type); start strata with "
                          "--pooling mean, cls or last");
  }
  STRATA_RETURN_IF_ERROR(check_tokens(
      request.prompt, summary.context,
      "the text has " + std::to_string(request.prompt.size()) + " tokens but the context holds " +
          std::to_string(summary.context) + "; shorten it or raise -c"));
  STRATA_RETURN_IF_ERROR(check_queue());
  STRATA_ASSIGN_OR_RETURN(sampling::Sampler sampler, sampling::Sampler::create({}));
  engine::Sequence& s = sequences.emplace_back();
  s.id = next_id++;
  s.tokens = request.prompt;
  s.n_prompt = request.prompt.size();
  s.max_length = s.n_prompt;
  s.report_admission = request.report_admission;
  s.embed = true;
  s.one_chunk = !model->config().causal;
  s.pooling = summary.pooling;
  s.sampler = std::make_unique<sampling::Sampler>(std::move(sampler));
  s.detokenizer = std::make_unique<tokenizer::StreamingDetokenizer>(*tokenizer);
  s.stop = std::make_unique<engine::StopMatcher>(std::vector<std::string>{});
  s.on_token = std::move(on_token);
  scheduler->add(&s);
  return s.id;
}

void Engine::Impl::append_embedding_chunk(model::Batch& batch, engine::Sequence& s, size_t n_tokens,
                                          std::vector<HiddenRows>& rows, size_t& n_hidden) {
  const size_t n_embd = model->config().n_embd;
  // Embedding requests never share cached pages, so a (re)started one begins at position 0.
  if (s.n_computed == 0) {
    s.pooled.assign(n_embd, 0.0f);
    s.n_pooled = 0;
  }
  const size_t first = batch.size(), start = s.n_computed;
  append_positions(batch, s.id, s.tokens, start, n_tokens, 0);
  size_t n = 0;
  for (size_t i = first; i < batch.size(); ++i) {
    const size_t pos = batch[i].pos;
    batch[i].want_hidden = s.pooling == Pooling::kMean ||
                           (s.pooling == Pooling::kCls && pos == 0) ||
                           (s.pooling == Pooling::kLast && pos + 1 == s.n_prompt);
    n += batch[i].want_hidden;
  }
  // Recorded even with no rows (a CLS chunk past position 0): the chunk that completes the
  // prompt finishes the request.
  rows.push_back({&s, n_hidden, n});
  n_hidden += n;
}

void Engine::Impl::pool_embeddings(std::span<const HiddenRows> rows) {
  const size_t n_embd = model->config().n_embd;
  for (const HiddenRows& r : rows) {
    engine::Sequence& s = *r.seq;
    if (s.finished()) continue;
    // Mean: a running sum; CLS and last: the one row.
    for (size_t i = 0; i < r.n; ++i) {
      kernels::add(s.pooled.data(), hidden.data() + (r.first + i) * n_embd, n_embd);
    }
    s.n_pooled += r.n;
    if (s.n_computed < s.n_prompt) continue;
    TokenEvent event;
    event.finish = FinishReason::kStop;
    event.embedding = std::move(s.pooled);
    const float mean = 1.0f / static_cast<float>(std::max<size_t>(s.n_pooled, 1));
    if (s.pooling == Pooling::kMean) {
      for (float& x : event.embedding) x *= mean;
    }
    // L2 normalization as llama.cpp's common_embd_normalize(…, 2): the norm summed in double.
    double sum = 0;
    for (float x : event.embedding) sum += double{x} * x;
    const float inv = sum > 0 ? static_cast<float>(1.0 / std::sqrt(sum)) : 0.0f;
    for (float& x : event.embedding) x *= inv;
    s.status = engine::SeqStatus::kFinished;
    s.finish = FinishReason::kStop;
    if (s.on_token) s.on_token(event);
    release(s);
  }
}

Result<std::vector<std::vector<float>>> Engine::embed(
    std::span<const std::vector<TokenId>> prompts) {
  std::vector<std::vector<float>> out(prompts.size());
  std::optional<Error> failed;
  size_t pending = 0;
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest request;
    request.prompt = prompts[i];
    request.embed = true;
    Result<uint64_t> id = submit(request, [&, i](const TokenEvent& e) {
      if (e.finish == FinishReason::kNone) return true;
      --pending;
      if (e.finish == FinishReason::kError && !failed) {
        failed = make_error(e.error_code, "text " + std::to_string(i + 1) + ": " + e.error);
      }
      out[i] = e.embedding;
      return true;
    });
    if (!id.ok()) {
      for (uint64_t submitted : ids) cancel(submitted);
      return make_error(id.error().code,
                        "text " + std::to_string(i + 1) + ": " + id.error().message);
    }
    ids.push_back(*id);
    ++pending;
  }
  while (pending > 0) STRATA_RETURN_IF_ERROR(step());
  if (failed) return *failed;
  return out;
}

}  // namespace strata

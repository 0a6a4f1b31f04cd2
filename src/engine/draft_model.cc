#include "engine/draft_model.h"

#include <algorithm>

#include "base/timer.h"
#include "gguf/gguf.h"

namespace strata::engine {
namespace {

// Catch-up chunks: a long prompt goes through the draft a bounded batch at a time.
constexpr size_t kCatchUpChunk = 256;
// A forward of at most this many positions times as a decode pass (one position per drafting
// sequence, or the few a sequence confirmed since its last draft).
constexpr size_t kDecodePassPositions = 16;

Status check_vocabulary(const tokenizer::Tokenizer& draft, const tokenizer::Tokenizer& target,
                        const std::string& path) {
  if (draft.n_vocab() > target.n_vocab()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the draft model " + path + " has " + std::to_string(draft.n_vocab()) +
                          " tokens, more than the model's " + std::to_string(target.n_vocab()) +
                          ": a draft must share the model's vocabulary");
  }
  for (size_t id = 0; id < draft.n_vocab(); ++id) {
    const auto t = static_cast<TokenId>(id);
    if (draft.token_to_piece(t, true) != target.token_to_piece(t, true)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "the draft model " + path + " has another vocabulary: token " +
                            std::to_string(id) + " is '" + draft.token_to_piece(t, true) +
                            "' there and '" + target.token_to_piece(t, true) +
                            "' in the model; use a draft trained with the same tokenizer");
    }
  }
  return ok_status();
}

}  // namespace

Result<std::unique_ptr<DraftModel>> DraftModel::load(const std::string& path,
                                                     const tokenizer::Tokenizer& target,
                                                     size_t context, size_t max_sequences,
                                                     ThreadPool& pool) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<gguf::File> file,
                          gguf::File::open(path, MappedFile::Mode::kResident));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> vocabulary,
                          tokenizer::Tokenizer::from_gguf(*file));
  STRATA_RETURN_IF_ERROR(check_vocabulary(*vocabulary, target, path));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> model,
                          model::Model::load(std::move(file), {.interleave_pool = &pool}));
  model->use_context(context);
  return std::unique_ptr<DraftModel>(
      new DraftModel(std::move(model), context, max_sequences, pool));
}

DraftModel::DraftModel(std::unique_ptr<model::Model> model, size_t context, size_t max_sequences,
                       ThreadPool& pool)
    : model_(std::move(model)), pool_(pool), context_(context) {
  constexpr size_t kPage = 32;
  const kv::KvShape shape = model_->kv_shape(kPage);
  const size_t pages = max_sequences * ((context + kPage - 1) / kPage + 1);
  const std::vector<kv::ArenaSpec> arenas = {{kv::KvPrecision::kF16, pages}};
  kv_ = std::make_unique<kv::KvManager>(shape, arenas);
  // Guesses need no bit-for-bit match with the reference engine: a prompt's catch-up reads the
  // cache in tiles (several times faster than query by query).
  kv_->cache().set_attention_mode(kv::AttentionMode::kFast);
  name_ = model_->file().get_string("general.name").value_or("draft");
}

Status DraftModel::forward(const model::Batch& batch, std::vector<TokenId>& out) {
  const size_t n_vocab = model_->config().n_vocab;
  const size_t rows = static_cast<size_t>(
      std::count_if(batch.begin(), batch.end(), [](const auto& e) { return e.want_logits; }));
  logits_.resize(rows * n_vocab);
  const Timer timer;
  STRATA_RETURN_IF_ERROR(model_->forward(batch, kv_->cache(), pool_, logits_.data()));
  if (batch.size() <= kDecodePassPositions) pass_seconds_.add(timer.elapsed_seconds());
  for (size_t r = 0; r < rows; ++r) {
    const float* row = logits_.data() + r * n_vocab;
    out.push_back(static_cast<TokenId>(std::max_element(row, row + n_vocab) - row));
  }
  return ok_status();
}

Result<bool> DraftModel::extend(uint64_t seq, std::span<const TokenId> tokens, bool guess,
                                std::vector<TokenId>& out) {
  std::vector<TokenId>& cached = cached_[seq];
  // The cache keeps its longest run of the sequence's tokens (short of the last, whose logits
  // give the first guess); guesses the target did not confirm go.
  const size_t keep = std::min<size_t>(
      std::mismatch(cached.begin(), cached.end(), tokens.begin(), tokens.end()).first -
          cached.begin(),
      tokens.size() - (guess ? 1 : 0));
  kv_->truncate(seq, keep);
  cached.resize(keep);
  // A token the draft does not know (one of the target's extra ids) leaves it without guesses.
  const auto n_vocab = static_cast<TokenId>(model_->config().n_vocab);
  if (std::any_of(tokens.begin() + static_cast<ptrdiff_t>(keep), tokens.end(),
                  [n_vocab](TokenId t) { return t < 0 || t >= n_vocab; })) {
    return false;
  }
  for (size_t from = keep; from < tokens.size(); from += kCatchUpChunk) {
    const size_t n = std::min(kCatchUpChunk, tokens.size() - from);
    if (!kv_->allocate(seq, n)) return false;
    model::Batch batch;
    for (size_t p = from; p < from + n; ++p) {
      batch.push_back({seq, static_cast<uint32_t>(p), tokens[p], guess && p + 1 == tokens.size()});
    }
    STRATA_RETURN_IF_ERROR(forward(batch, out));
    cached.insert(cached.end(), tokens.begin() + static_cast<ptrdiff_t>(from),
                  tokens.begin() + static_cast<ptrdiff_t>(from + n));
  }
  return true;
}

Status DraftModel::prefill(uint64_t seq, std::span<const TokenId> tokens) {
  if (tokens.empty() || tokens.size() > context_) return ok_status();
  std::vector<TokenId> none;
  const Result<bool> followed = extend(seq, tokens, /*guess=*/false, none);
  return followed.ok() ? ok_status() : Status(followed.error());
}

Result<std::vector<std::vector<TokenId>>> DraftModel::propose(
    std::span<const DraftRequest> requests) {
  std::vector<std::vector<TokenId>> guesses(requests.size());
  std::vector<size_t> active;  // requests still guessing
  for (size_t i = 0; i < requests.size(); ++i) {
    const DraftRequest& r = requests[i];
    if (r.max_guesses == 0 || r.tokens.empty() || r.tokens.size() + r.max_guesses > context_) {
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(const bool caught_up,
                            extend(r.seq, r.tokens, /*guess=*/true, guesses[i]));
    if (!caught_up) continue;
    if (r.max_guesses > 1) active.push_back(i);
  }
  // One draft decode step per further guess, every guessing sequence in one batch.
  while (!active.empty()) {
    model::Batch batch;
    std::vector<size_t> stepping;
    for (size_t i : active) {
      const DraftRequest& r = requests[i];
      if (!kv_->allocate(r.seq, 1)) continue;
      const size_t pos = r.tokens.size() + guesses[i].size() - 1;
      batch.push_back({r.seq, static_cast<uint32_t>(pos), guesses[i].back(), true});
      cached_[r.seq].push_back(guesses[i].back());
      stepping.push_back(i);
    }
    std::vector<TokenId> next;
    if (!batch.empty()) STRATA_RETURN_IF_ERROR(forward(batch, next));
    active.clear();
    for (size_t j = 0; j < stepping.size(); ++j) {
      const size_t i = stepping[j];
      guesses[i].push_back(next[j]);
      if (guesses[i].size() < requests[i].max_guesses) active.push_back(i);
    }
  }
  return guesses;
}

void DraftModel::forget(uint64_t seq) {
  kv_->free(seq);
  cached_.erase(seq);
}

}  // namespace strata::engine

#include "engine/speculation.h"

#include <algorithm>
#include <utility>

namespace strata::engine {

std::vector<TokenId> propose_ngram(std::span<const TokenId> tokens, size_t ngram_min,
                                   size_t ngram_max, size_t max_draft) {
  const size_t size = tokens.size();
  for (size_t n = std::min(ngram_max, size > 0 ? size - 1 : 0); n >= std::max<size_t>(ngram_min, 1);
       --n) {
    const std::span<const TokenId> suffix = tokens.last(n);
    // The latest earlier occurrence: its continuation is the likeliest to recur.
    for (size_t start = size - n; start-- > 0;) {
      if (!std::equal(suffix.begin(), suffix.end(),
                      tokens.begin() + static_cast<ptrdiff_t>(start))) {
        continue;
      }
      // The continuation, copied forward as LZ77 copies overlap: where it runs into the end of
      // the tokens it goes on with the guesses themselves, so a repetition with a period shorter
      // than the draft still fills it.
      const size_t from = start + n;
      std::vector<TokenId> guesses;
      guesses.reserve(max_draft);
      for (size_t at = from; guesses.size() < max_draft; ++at) {
        guesses.push_back(at < size ? tokens[at] : guesses[at - size]);
      }
      return guesses;
    }
    if (n == 1) break;
  }
  return {};
}

double RecentMedian::value() const {
  const size_t n = std::min(n_, kWindow);
  if (n == 0) return 0;
  std::array<double, kWindow> sorted = samples_;
  const auto middle = static_cast<ptrdiff_t>((n - 1) / 2);
  std::nth_element(sorted.begin(), sorted.begin() + middle,
                   sorted.begin() + static_cast<ptrdiff_t>(n));
  return sorted[static_cast<size_t>(middle)];
}

void StepCost::record_step(size_t positions, double seconds) {
  if (positions < by_positions_.size()) by_positions_[positions].add(seconds);
  const auto n = static_cast<double>(positions);
  w_ = kDecay * w_ + 1;
  n_ = kDecay * n_ + n;
  nn_ = kDecay * nn_ + n * n;
  t_ = kDecay * t_ + seconds;
  nt_ = kDecay * nt_ + n * seconds;
  // b = cov(n, t) / var(n), weighted; with (nearly) one n in the window b is not measurable and
  // keeps its last value.
  const double var = nn_ / w_ - (n_ / w_) * (n_ / w_);
  if (var > 1e-2) slope_ = std::max(0.0, (nt_ / w_ - (n_ / w_) * (t_ / w_)) / var);
}

void StepCost::record_lookup(double seconds) {
  lookup_ = lookup_ == 0 ? seconds : kDecay * lookup_ + (1 - kDecay) * seconds;
}

double StepCost::step(size_t positions) const {
  double fit = 0;
  if (w_ > 0) {
    const double intercept = t_ / w_ - slope_ * (n_ / w_);
    fit = std::max(0.0, intercept + slope_ * static_cast<double>(positions));
  }
  if (positions < by_positions_.size()) {
    const RecentMedian& measured = by_positions_[positions];
    if (measured.count() > 1) return measured.value();
    if (measured.count() == 1) return fit > 0 ? std::min(fit, measured.value()) : measured.value();
  }
  return fit;
}

double StepCost::proposal(SpeculationKind kind, size_t guesses) const {
  if (guesses == 0) return 0;
  return kind == SpeculationKind::kDraft ? draft_pass_ * static_cast<double>(guesses) : lookup_;
}

size_t best_draft_length(double acceptance, size_t max_guesses, size_t n_decoding,
                         SpeculationKind kind, const StepCost& cost, bool at_least_one) {
  const auto others = static_cast<double>(n_decoding > 0 ? n_decoding - 1 : 0);
  size_t best = 0;
  double best_rate = -1;
  double tokens = 1, term = 1;  // Σ_{i=0..k} α^i and α^k
  for (size_t k = 0; k <= max_guesses; ++k) {
    if (k > 0) {
      term *= acceptance;
      tokens += term;
    }
    if (k == 0 && at_least_one) continue;
    const double seconds = cost.step(n_decoding + k) + cost.proposal(kind, k);
    // Unmeasured costs are 0: every length is free, and the longest is tried first.
    const double rate = seconds > 0 ? (others + tokens) / seconds : tokens;
    if (rate > best_rate) {
      best_rate = rate;
      best = k;
    }
  }
  return best;
}

size_t DraftLength::next(size_t cap, size_t n_decoding, SpeculationKind kind,
                         const StepCost& cost) {
  const size_t limit = std::min(max_, cap);
  if (limit == 0) return 0;
  auto best = [&](double acceptance, bool at_least_one) {
    return best_draft_length(acceptance, limit, n_decoding, kind, cost, at_least_one);
  };
  if (min_ > 0) return std::max(std::min(min_, limit), best(acceptance(), false));
  if (pause_ > 0) {
    if (--pause_ == 0) probe_ = true;
    return 0;
  }
  const bool probe = std::exchange(probe_, false);
  if (const size_t length = best(acceptance(), false); length > 0) {
    next_pause_ = kFirstPause;  // guessing pays
    return length;
  }
  // A probe (or one of the first verifications) measures the acceptance again, unless no
  // acceptance could pay: even guesses that are always right are too slow on this model and
  // machine (then only the costs, measured on, can change the verdict at the end of a pause).
  if ((probe || first_verifications_ > 0) && best(1.0, false) > 0) {
    return best(acceptance(), true);
  }
  pause_ = next_pause_;
  next_pause_ = std::min(kMaxPause, 2 * next_pause_);
  return 0;
}

void DraftLength::record(size_t drafted, size_t accepted) {
  if (drafted == 0) return;
  counts_.record(drafted, accepted);
  if (first_verifications_ > 0) --first_verifications_;
}

void AcceptanceCounts::record(size_t drafted, size_t accepted) {
  if (drafted == 0) return;
  kept_ = kDecay * kept_ + static_cast<double>(accepted);
  tried_ = kDecay * tried_ + static_cast<double>(accepted + (accepted < drafted ? 1 : 0));
}

AcceptanceCounts AcceptanceCounts::at_most(double weight) const {
  AcceptanceCounts scaled = *this;
  if (tried_ > weight) {
    scaled.kept_ = kept_ * weight / tried_;
    scaled.tried_ = weight;
  }
  return scaled;
}

}  // namespace strata::engine

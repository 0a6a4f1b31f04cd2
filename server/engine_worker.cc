#include "server/engine_worker.h"

#include <algorithm>
#include <cstdio>

namespace strata::server {
namespace {

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// The worker ends a choice's queue time (a metric) at the engine's admission event.
std::vector<GenerationRequest> with_admission_events(std::vector<GenerationRequest> choices) {
  for (GenerationRequest& choice : choices) choice.report_admission = true;
  return choices;
}

}  // namespace

Job::Job(std::vector<GenerationRequest> choices, Clock::time_point arrival)
    : choices_(with_admission_events(std::move(choices))), arrival_(arrival) {}

Status Job::wait_submitted() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return submitted_.has_value(); });
  return *submitted_;
}

bool Job::next(ChoiceEvent& out, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_for(lock, wait, [&] { return !events_.empty(); })) return false;
  out = std::move(events_.front());
  events_.pop_front();
  return true;
}

void Job::cancel() { cancel_requested_.store(true); }

void Job::set_submitted(Status status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    submitted_ = std::move(status);
  }
  cv_.notify_all();
}

void Job::push(ChoiceEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

// One engine sequence: one choice of one job. Only the worker thread touches it.
struct EngineWorker::Sequence {
  std::shared_ptr<Job> job;
  size_t choice = 0;
  uint64_t id = 0;
  Clock::time_point last_token;
  bool got_token = false;
  bool finished = false;
  bool timed_out = false;
};

EngineWorker::EngineWorker(WorkerOptions options, Metrics* metrics)
    : options_(std::move(options)), metrics_(metrics) {}

EngineWorker::~EngineWorker() { stop(); }

void EngineWorker::start() {
  thread_ = std::thread([this] { run(); });
}

EngineWorker::State EngineWorker::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

bool EngineWorker::wait_ready() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return state_ != State::kLoading; });
  return state_ == State::kReady;
}

std::string EngineWorker::load_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return load_error_;
}

const Engine* EngineWorker::engine() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_ == State::kLoading ? nullptr : engine_.get();
}

EngineLoad EngineWorker::load() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return load_;
}

Result<std::shared_ptr<Job>> EngineWorker::enqueue(std::vector<GenerationRequest> choices,
                                                   Clock::time_point arrival) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (state_ == State::kLoading) {
    return make_error(ErrorCode::kUnavailable, "the model is still loading; retry shortly");
  }
  if (state_ != State::kReady) {
    return make_error(ErrorCode::kUnavailable, "the server is shutting down");
  }
  const size_t n = choices.size();
  const auto slots = static_cast<size_t>(options_.engine.max_sequences);
  const auto queue = static_cast<size_t>(options_.max_queue);
  // A job larger than the server can ever hold would be refused forever: that is the request's
  // fault (400), not a busy server's (503 with Retry-After, which clients retry).
  if (options_.max_queue > 0 && n > slots + queue) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the request asks for " + std::to_string(n) +
                          " sequences (prompts x n), more than this server holds at once (" +
                          std::to_string(slots) + " running + " + std::to_string(queue) +
                          " waiting); lower n or send fewer prompts");
  }
  if (options_.max_queue > 0 && in_flight_ + n > slots + queue) {
    return make_error(ErrorCode::kUnavailable,
                      "the server is busy: " + std::to_string(in_flight_) +
                          " sequences are running or waiting, and at most " +
                          std::to_string(queue) + " may wait beyond the " + std::to_string(slots) +
                          " running at once; retry later");
  }
  in_flight_ += n;
  auto job = std::make_shared<Job>(std::move(choices), arrival);
  inbox_.push_back(job);
  cv_.notify_all();
  return job;
}

void EngineWorker::cancel_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancel_all_requested_ = true;
  cv_.notify_all();
}

void EngineWorker::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void EngineWorker::on_event(Sequence& seq, const TokenEvent& event) {
  const Clock::time_point now = Clock::now();
  if (event.admitted) {
    if (metrics_) metrics_->observe_queue_time(seconds_between(seq.job->arrival(), now));
    seq.job->push({seq.choice, event});  // its cached_tokens go into the reply's usage
    return;
  }
  if (event.token >= 0 && metrics_) {
    metrics_->add_generation_tokens(1);
    if (!seq.got_token) {
      metrics_->observe_time_to_first_token(seconds_between(seq.job->arrival(), now));
    } else {
      metrics_->observe_inter_token_latency(seconds_between(seq.last_token, now));
    }
  }
  if (event.token >= 0) {
    seq.got_token = true;
    seq.last_token = now;
  }
  ChoiceEvent out{seq.choice, event};
  if (event.finish != FinishReason::kNone) {
    seq.finished = true;
    if (event.finish == FinishReason::kCancelled && seq.timed_out) {
      out.event.finish = FinishReason::kError;
      out.event.error_code = ErrorCode::kDeadlineExceeded;
      out.event.error = "the request ran longer than the server's --timeout of " +
                        std::to_string(static_cast<int>(options_.timeout_s)) + " s";
    }
    if (metrics_) metrics_->observe_e2e_latency(seconds_between(seq.job->arrival(), now));
    std::lock_guard<std::mutex> lock(mutex_);
    --in_flight_;
  }
  seq.job->push(std::move(out));
}

void EngineWorker::submit_new_jobs(std::vector<std::shared_ptr<Job>>& jobs) {
  for (std::shared_ptr<Job>& job : jobs) {
    std::vector<Sequence*> submitted;
    Status status = ok_status();
    size_t prompt_tokens = 0;
    for (size_t i = 0; i < job->choices().size(); ++i) {
      Sequence& seq = sequences_.emplace_back();
      seq.job = job;
      seq.choice = i;
      Result<uint64_t> id = engine_->submit(job->choices()[i], [this, &seq](const TokenEvent& e) {
        on_event(seq, e);
        return true;
      });
      if (!id.ok()) {
        status = id.error();
        sequences_.pop_back();
        break;
      }
      seq.id = *id;
      submitted.push_back(&seq);
      prompt_tokens += job->choices()[i].prompt.size();
    }
    if (status.ok()) {
      if (metrics_) metrics_->add_prompt_tokens(prompt_tokens);
    } else {
      // All or nothing: the choices already queued are withdrawn.
      for (Sequence* seq : submitted) engine_->cancel(seq->id);
      std::lock_guard<std::mutex> lock(mutex_);
      in_flight_ -= job->choices().size() - submitted.size();
    }
    job->set_submitted(std::move(status));
  }
  jobs.clear();
}

void EngineWorker::cancel_abandoned() {
  const Clock::time_point now = Clock::now();
  for (Sequence& seq : sequences_) {
    if (seq.finished) continue;
    if (options_.timeout_s > 0 && seconds_between(seq.job->arrival(), now) > options_.timeout_s) {
      seq.timed_out = true;
      engine_->cancel(seq.id);
    } else if (seq.job->cancel_requested()) {
      engine_->cancel(seq.id);
    }
  }
}

void EngineWorker::run() {
  Result<std::unique_ptr<Engine>> engine = Engine::create(options_.engine);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (engine.ok()) {
      engine_ = std::move(engine).value();
      state_ = State::kReady;
      load_ = engine_->load();
    } else {
      state_ = State::kFailed;
      load_error_ = engine.error().message;
    }
  }
  cv_.notify_all();
  if (!engine_) return;

  std::vector<std::shared_ptr<Job>> jobs;
  for (;;) {
    bool cancel_everything = false;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] {
        return stop_requested_ || cancel_all_requested_ || !inbox_.empty() || engine_->has_work();
      });
      if (stop_requested_) break;
      jobs.swap(inbox_);
      cancel_everything = std::exchange(cancel_all_requested_, false);
    }
    submit_new_jobs(jobs);
    if (cancel_everything) {
      for (Sequence& seq : sequences_) seq.job->cancel();
    }
    cancel_abandoned();
    if (engine_->has_work()) {
      Status status = engine_->step();
      // The engine has already ended the step's sequences with an error event.
      if (!status.ok())
        std::fprintf(stderr, "engine step failed: %s\n", status.error().message.c_str());
    }
    sequences_.remove_if([](const Sequence& s) { return s.finished; });
    std::lock_guard<std::mutex> lock(mutex_);
    load_ = engine_->load();
    for (const std::shared_ptr<Job>& job : inbox_) load_.waiting += job->choices().size();
  }

  // Shutting down: end what runs and refuse what never started.
  for (Sequence& seq : sequences_) {
    if (!seq.finished) engine_->cancel(seq.id);
  }
  sequences_.clear();
  // With --kv-cache-dir, the prefix pages not on disk yet go there for the next start.
  const size_t saved = engine_->save_prefix_cache();
  if (saved > 0) std::fprintf(stderr, "saved %zu prefix cache pages\n", saved);
  std::vector<std::shared_ptr<Job>> refused;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    refused.swap(inbox_);
    state_ = State::kStopped;
  }
  for (std::shared_ptr<Job>& job : refused) {
    job->set_submitted(make_error(ErrorCode::kUnavailable, "the server is shutting down"));
  }
}

}  // namespace strata::server

// The thread that owns the Engine (which is not thread-safe). It loops: take new requests from
// the inbox, submit them, cancel those whose client left or whose time ran out, run one engine
// step, and deliver each token event to its request's own queue; it sleeps when there is no
// work. HTTP handler threads only enqueue jobs and read their events.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "server/metrics.h"
#include "strata/engine.h"

namespace strata::server {

using Clock = std::chrono::steady_clock;

struct WorkerOptions {
  EngineOptions engine;  // max_sequences is the number of sequences decoded at once
  int max_queue = 0;     // sequences that may wait for a slot; past it enqueue() fails; 0: no limit
  double timeout_s = 0;  // a request still running this long after arrival ends with an error
};

struct ChoiceEvent {
  size_t choice = 0;  // index into the job's requests
  // kError events carry the reason in `error` and its kind in `error_code`: the engine's, or
  // kDeadlineExceeded when the worker ended the request at its --timeout.
  TokenEvent event;
};

// One HTTP request's engine work: one GenerationRequest per choice, the events they produce
// and the flag that asks the worker to cancel them. Shared by the handler and the worker.
class Job {
 public:
  // `arrival` is when the request arrived: its --timeout counts from there.
  Job(std::vector<GenerationRequest> choices, Clock::time_point arrival);

  const std::vector<GenerationRequest>& choices() const { return choices_; }
  Clock::time_point arrival() const { return arrival_; }

  // Blocks until the worker has submitted every choice to the engine, or one was refused
  // (invalid request, prompt too long: nothing of the job then runs).
  Status wait_submitted();
  // The next event, waiting at most `wait`; false when none came in time.
  bool next(ChoiceEvent& out, std::chrono::milliseconds wait);
  // Asks the worker to end the job's sequences (client gone); their KV pages are freed at the
  // worker's next iteration.
  void cancel();
  bool cancel_requested() const { return cancel_requested_.load(); }

 private:
  friend class EngineWorker;
  void set_submitted(Status status);
  void push(ChoiceEvent event);

  const std::vector<GenerationRequest> choices_;
  const Clock::time_point arrival_;
  std::atomic<bool> cancel_requested_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  std::optional<Status> submitted_;
  std::deque<ChoiceEvent> events_;
};

class EngineWorker {
 public:
  enum class State { kLoading, kReady, kFailed, kStopped };

  // `metrics` may be null; it must outlive the worker.
  EngineWorker(WorkerOptions options, Metrics* metrics);
  ~EngineWorker();
  EngineWorker(const EngineWorker&) = delete;
  EngineWorker& operator=(const EngineWorker&) = delete;

  // Starts the thread, which loads the model and then serves; state() is kLoading until then.
  void start();
  State state() const;
  // Blocks until the model is loaded (true) or failed to load (false, with load_error()).
  bool wait_ready();
  std::string load_error() const;
  // The engine, once state() is kReady: only its thread-safe methods (model(), tokenize,
  // detokenize, token_piece) may be called from other threads.
  const Engine* engine() const;

  // Queues a job, or refuses it at once with kUnavailable when the model is not loaded or the
  // sequences waiting for a slot would exceed max_queue (decided from counters, never blocks).
  // `arrival` (when the request arrived) starts its --timeout, which so counts the time spent
  // compiling its constraint before it was queued.
  Result<std::shared_ptr<Job>> enqueue(std::vector<GenerationRequest> choices,
                                       Clock::time_point arrival = Clock::now());
  // The --timeout in seconds (0: none).
  double timeout_s() const { return options_.timeout_s; }

  // The engine's load at the end of the latest iteration; `waiting` counts the inbox too.
  EngineLoad load() const;

  // Cancels every job in flight (their handlers see kCancelled events).
  void cancel_all();
  // Cancels what remains and joins the thread.
  void stop();

 private:
  struct Sequence;
  void run();
  void submit_new_jobs(std::vector<std::shared_ptr<Job>>& jobs);
  void cancel_abandoned();
  void on_event(Sequence& seq, const TokenEvent& event);

  const WorkerOptions options_;
  Metrics* const metrics_;
  std::unique_ptr<Engine> engine_;
  std::thread thread_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  State state_ = State::kLoading;
  std::string load_error_;
  bool stop_requested_ = false;
  bool cancel_all_requested_ = false;
  std::vector<std::shared_ptr<Job>> inbox_;
  size_t in_flight_ = 0;  // sequences enqueued and not yet finished (admission counter)
  EngineLoad load_;

  // Worker-thread state.
  std::list<Sequence> sequences_;  // stable addresses: engine callbacks hold them
};

}  // namespace strata::server

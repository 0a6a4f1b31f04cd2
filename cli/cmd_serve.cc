// strata serve: the OpenAI-compatible HTTP server (server/). Prints `listening on http://HOST:PORT`
// to stderr once the model is loaded; SIGINT/SIGTERM stop new requests, let those in flight
// finish (a second signal cancels them) and exit.
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "cli/common.h"
#include "server/engine_worker.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "strata/log.h"

namespace strata::cli {
namespace {

struct ServeFlags {
  EngineOptions engine;
  server::ServerOptions http;
  int parallel = 4;
  int max_queue = 64;
  double timeout_s = 0;
  int metrics_window_s = 60;
  LogLevel log_level = LogLevel::kInfo;
};

std::string default_model_id(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

int serve(ServeFlags f) {
  // Signals are taken by sigwait on this thread only; every thread started below inherits the
  // mask, so none is interrupted by them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A client that hangs up mid-write must fail that write, not kill the server.
  signal(SIGPIPE, SIG_IGN);

  set_log_level(f.log_level);
  // A --chat-template that is missing or does not render stops the start, not every chat request.
  if (!f.http.chat_template.empty()) {
    Result<ChatTemplateSource> replaced =
        load_chat_template(f.engine.model_path, f.http.chat_template);
    if (!replaced.ok()) return report(replaced.error());
  }
  server::Metrics metrics(f.metrics_window_s);
  server::WorkerOptions worker_options;
  worker_options.engine = f.engine;
  worker_options.engine.max_sequences = f.parallel;
  worker_options.max_queue = f.max_queue;
  worker_options.timeout_s = f.timeout_s;
  server::EngineWorker worker(worker_options, &metrics);

  if (f.http.model_id.empty()) f.http.model_id = default_model_id(f.engine.model_path);
  f.http.model_path = f.engine.model_path;
  f.http.total_slots = f.parallel;
  server::HttpServer http(f.http, worker, metrics, static_cast<size_t>(f.parallel + f.max_queue));
  Status bound = http.bind();
  if (!bound.ok()) return report(bound.error());
  std::thread listener([&] { http.listen(); });

  std::fprintf(stderr, "loading %s (/health answers 503 until it is ready)\n",
               f.engine.model_path.c_str());
  worker.start();
  if (!worker.wait_ready()) {
    http.stop();
    listener.join();
    return report(make_error(ErrorCode::kInvalidFile, worker.load_error()));
  }
  const ModelSummary& m = worker.engine()->model();
  warn_if_beyond_trained_context(f.engine, m);
  std::fprintf(stderr, "model %s: %s, context %zu x %d sequences, queue %d\n",
               f.http.model_id.c_str(), m.architecture.c_str(), m.context, f.parallel, f.max_queue);
  std::fprintf(stderr, "listening on http://%s:%d\n", f.http.host.c_str(), http.port());

  int received = 0;
  sigwait(&signals, &received);
  std::fprintf(stderr, "shutting down: finishing %zu requests (signal again to cancel them)\n",
               http.in_flight());
  http.begin_drain();
  const timespec poll{0, 100'000'000};
  bool cancelled = false;
  while (http.in_flight() > 0) {
    if (sigtimedwait(&signals, nullptr, &poll) > 0 && !cancelled) {
      worker.cancel_all();
      cancelled = true;
    }
  }
  http.stop();
  listener.join();
  worker.stop();
  std::fprintf(stderr, "stopped\n");
  return kExitOk;
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* sub = app.add_subcommand("serve", "serve a model over an OpenAI-compatible HTTP API");
  add_model_flags(*sub, f->engine);
  add_pooling_option(*sub, f->engine.pooling);
  add_speculative_flags(*sub, f->engine.speculative);
  // As llama-server: defaults of the requests that do not set them.
  add_sampling_flags(*sub, f->http.sampling);
  add_chat_template_option(*sub, f->http.chat_template);
  f->engine.prefix_cache.enabled = true;
  sub->add_flag("--no-prefix-cache{false}", f->engine.prefix_cache.enabled,
                "compute every prompt whole instead of reusing the cached pages of a prefix an "
                "earlier request had");
  sub->add_option("--cors-origins", f->http.cors_origins,
                  "browser origins that may call the API, comma-separated (e.g. "
                  "https://app.example), or * for any; default none")
      ->delimiter(',');
  sub->add_option_function<std::string>(
         "--log-format",
         [f](const std::string& format) {
           if (format != "text" && format != "json") {
             throw CLI::ValidationError("--log-format", "use text or json");
           }
           f->http.log_format =
               format == "json" ? server::LogFormat::kJson : server::LogFormat::kText;
         },
         "access log lines (one per request on stderr): text or json")
      ->type_name("text|json");
  sub->add_option_function<std::string>(
         "--log-level",
         [f](const std::string& name) {
           std::optional<LogLevel> level = parse_log_level(name);
           if (!level) {
             throw CLI::ValidationError("--log-level", "use debug, info, warn, error or silent");
           }
           f->log_level = *level;
         },
         "stderr verbosity: debug, info (default: the access log and warnings), warn, error or "
         "silent")
      ->type_name("LEVEL");
  sub->add_option("--kv-cache-dir", f->engine.prefix_cache.dir,
                  "folder that keeps prefix-cache pages across restarts (pages of another model "
                  "or KV configuration there are ignored)");
  sub->add_option("--host", f->http.host, "address to listen on")->capture_default_str();
  sub->add_option("--port", f->http.port, "port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  sub->add_option("--parallel", f->parallel, "sequences decoded at once")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--max-queue", f->max_queue,
                  "sequences that may wait for a free slot; past it requests get 503 (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--timeout", f->timeout_s,
                  "seconds a request may run before it ends with an error (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--api-key", f->http.api_key,
                  "require 'Authorization: Bearer KEY' (default: $STRATA_API_KEY, else none)")
      ->envname("STRATA_API_KEY");
  sub->add_option("--alias", f->http.model_id, "model id clients see (default: the file name)");
  sub->add_option("-b,--batch-tokens", f->engine.batch_tokens,
                  "tokens per forward pass (prompt chunks and decode tokens together)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--max-body", f->http.transport.max_body_bytes, "largest request body in bytes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option(
         "--http-threads", f->http.transport.handler_threads,
         "request handler threads (0: parallel + max-queue + 32, as each stream holds one)")
      ->check(CLI::Range(0, 4096));
  sub->add_option(
         "--max-connections", f->http.transport.max_connections,
         "open connections; past it new ones get 503 (0: 4 x handler threads, at least 256)")
      ->check(CLI::Range(0, 1 << 20));
  sub->add_option("--metrics-window", f->metrics_window_s,
                  "seconds of the sliding window for the p50/p99 metrics")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return {sub, [f] { return serve(*f); }};
}

}  // namespace strata::cli

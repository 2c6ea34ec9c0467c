// keel's HTTP API: the OpenAI endpoints (/v1/chat/completions, /v1/completions, /v1/models), native
// /generate, /health, /metrics, /flush_cache and /v1/kv/export (admin calls), wired to an sched::Engine, a tokenizer and the
// model's chat template. Handlers run on the HTTP io threads, except a new grammar's compile and the
// parse of a body over 64 KiB, which run on the Api's compile threads before the request goes back to
// its connection's strand to start; the engine's sinks hop onto each connection's strand
// (server/generation.h). Shutdown, from the controlling thread:
//   api.begin_drain(); engine.drain(); server.stop();
// (begin_drain waits for requests on the compile threads, so they reach the engine first.)
// The engine, tokenizer and template must outlive the HttpServer the routes are added to.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/work_queue.h"
#include "sched/engine.h"
#include "server/engine_request.h"
#include "server/generation.h"
#include "server/kv_wire.h"
#include "server/http/router.h"
#include "server/http/server.h"
#include "server/metrics.h"
#include "server/openai/errors.h"
#include "server/openai/request_parse.h"
#include "server/structured_output.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace keel::server {

struct ApiConfig {
  std::vector<std::string> model_names;        // the first is what /v1/models lists; requests name any
  int32_t max_context_tokens = 0;              // prompt + completion; 0 = unknown (the engine checks)
  int32_t default_completion_max_tokens = 16;  // /v1/completions without max_tokens (OpenAI's default)
  openai::ParseLimits parse_limits;            // n_vocab is taken from the tokenizer
  bool engine_emits_text = true;               // false: detokenize StreamEvent::tokens here
  int32_t retry_after_s = 1;                   // Retry-After on 429 and 503
  StructuredOutputConfig structured;           // grammar compilation limits and cache
  // Bearer key POST /flush_cache needs; without one it is taken from loopback clients only
  // (server/http/admin_access.h).
  std::string admin_key;
  // KV pulls (docs/router.md "KV pulls"): most prompt tokens one export or pull moves (0: off, no
  // POST /v1/kv/export and X-Keel-Kv-Source ignored); the threads that pull and export, the jobs
  // that may wait for them (past it a pull is skipped, an export gets 429); one pull's deadline.
  int64_t kv_max_tokens = 8192;
  int32_t kv_threads = 4;
  int32_t kv_queue = 64;
  int32_t kv_timeout_ms = 2000;

  Status validate() const;
};

class Api {
 public:
  Api(ApiConfig config, sched::Engine& engine, const tokenizer::Tokenizer& tok,
      const tokenizer::ChatTemplate* chat_template);

  // Registers every route. Call before the server starts.
  void add_routes(http::Router& router);
  // Error rendering (errors.cc) and per-response metrics for the HttpServer.
  http::ServerHooks hooks();
  // What POST /flush_cache runs (the scheduler's prefix-cache flush). Call before the server starts.
  void set_flush_cache(std::function<Status()> flush);

  // Lifecycle: starts loading (health 503); ready opens the generation endpoints; drain closes them
  // again (503) while requests already accepted run to the end.
  void set_ready();
  void begin_drain();

  // What KV pulls need from the engine and the model (the scheduler's export_prefix / import_prefix
  // through ThreadedEngine, and this replica's KvIdentity). Without it both are off. Call before the
  // server starts.
  struct KvTransfer {
    KvIdentity identity;
    std::function<sched::KvPrefix(std::span<const int32_t>, int64_t)> export_prefix;
    std::function<Result<int64_t>(const sched::KvPrefix&)> import_prefix;
  };
  void set_kv_transfer(KvTransfer kv);

  // The compile threads' queue (tests hold it to fill it).
  WorkQueue& compile_queue() { return compiles_; }

  MetricsRegistry& metrics() { return metrics_; }

 private:
  enum class State { kLoading, kReady, kDraining };

  void handle_generation(ApiKind kind, http::HttpRequest&& req, const http::ExchangePtr& ex);
  struct Prepared {
    std::string model;
    std::vector<int32_t> prompt;
    openai::GenerationParams params;
    EngineRequestLimits limits;
  };
  // Parse, model check and tokenization for one endpoint.
  openai::ApiResult<Prepared> prepare(ApiKind kind, std::string_view body) const;
  // A request past its checks, waiting for its constraint (if any) to be ready.
  struct Accepted {
    ApiKind kind;
    Prepared prepared;
    std::optional<std::vector<int32_t>> resumed;  // X-Keel-Resume's tokens
    bool emit_token_ids = false;
    int64_t received_us = 0;
  };
  // Resume tokens, parse, model check and tokenization: a request ready for its grammar lookup.
  openai::ApiResult<Accepted> accept(ApiKind kind, http::HttpRequest& req, int64_t received_us) const;
  // A request and its constraint (null for free text), ready to start.
  struct Ready {
    Accepted accepted;
    StructuredOutput::FactoryPtr factory;
  };
  // Runs `work` on a compile thread, then starts what it made ready (or answers its error) on the
  // connection's strand; 429 when the compile queue is full.
  void off_io_thread(const http::ExchangePtr& ex, std::function<openai::ApiResult<Ready>()> work);
  // The same on `queue`; false (work dropped) when the queue is full.
  bool post_ready_work(WorkQueue& queue, const http::ExchangePtr& ex, std::function<openai::ApiResult<Ready>()> work);
  // A small request past accept(): its grammar lookup, then its start (or its compile off the io thread).
  void start_accepted(Accepted&& a, const std::string& body, const http::ExchangePtr& ex);
  // KV pulls (kv_pull.cc). A request with an X-Keel-Kv-Source hint: true when its pull (then its
  // start) went to a KV thread; false when it goes on as any other request (hint refused, KV off,
  // queue full), with the outcome counted.
  bool start_with_pull(ApiKind kind, http::HttpRequest& req, const http::ExchangePtr& ex, int64_t received_us);
  // A request past accept() with its body (for its grammar lookup), kept while it waits for a pull.
  struct Waiting {
    Accepted accepted;
    std::string body;
  };
  // When a pull in progress shares w's prompt prefix (wait_for_pull): w starts (start_accepted, on
  // its connection's strand) once that pull ends, and this returns true. False: no such pull.
  bool start_after_pull(const std::shared_ptr<Waiting>& w, const http::ExchangePtr& ex);
  // The tokens a request's prefill covers: its prompt, then any resumed tokens.
  static std::vector<int32_t> prompt_tokens(const Accepted& a);
  // Fetches the longest prefix of `tokens` (a prompt) that `source` caches and imports it; counts the
  // outcome.
  void pull_prefix(std::string_view source, const std::vector<int32_t>& tokens);
  // A pull in progress, so that requests sharing its prefix that arrive meanwhile (the router sends
  // them to this replica as a holder, without a hint) wait for it instead of prefilling the prefix.
  struct PullInFlight;
  std::shared_ptr<PullInFlight> register_pull(std::vector<int32_t> tokens);
  void finish_pull(const std::shared_ptr<PullInFlight>& p);
  // True when `prompt` shares kMinPullShare or more leading tokens with a pull in progress: `resume`
  // then runs (on the pulling thread) once it ends. False: no such pull, go on.
  bool wait_for_pull(const std::vector<int32_t>& prompt, std::function<void()> resume);
  void handle_kv_export(http::HttpRequest&& req, const http::ExchangePtr& ex);
  void count_pull(std::string_view outcome, int64_t tokens = 0);
  // Submits to the engine and starts the answer; on the connection's strand (Generation's methods run
  // there).
  void start_generation(Accepted&& a, StructuredOutput::FactoryPtr factory, const http::ExchangePtr& ex);
  // Counts a request between its compile and its start on the strand while the token lives.
  std::shared_ptr<void> handoff_token();
  void handle_models(const http::ExchangePtr& ex);
  void handle_health(const http::ExchangePtr& ex);
  void handle_metrics(const http::ExchangePtr& ex);
  void handle_flush_cache(const http::HttpRequest& req, const http::ExchangePtr& ex);
  std::optional<openai::ApiError> check_model(const std::string& model) const;
  std::optional<openai::ApiError> check_serving() const;
  void count_response(std::string_view path, int status);

  ApiConfig config_;
  sched::Engine& engine_;
  const tokenizer::Tokenizer& tok_;
  const tokenizer::ChatTemplate* chat_template_;
  std::function<Status()> flush_cache_;
  std::atomic<State> state_{State::kLoading};
  std::atomic<uint64_t> next_id_{1};
  uint64_t id_salt_;
  int64_t created_s_;
  MetricsRegistry metrics_;
  GenerationMetrics gen_metrics_;
  StructuredOutput structured_;
  std::mutex handoff_mu_;
  std::condition_variable handoff_cv_;
  int64_t n_handoffs_ = 0;  // requests compiled or compiling, not yet started on their strand
  std::optional<KvTransfer> kv_;
  std::mutex pulls_mu_;
  std::vector<std::shared_ptr<PullInFlight>> pulls_in_flight_;  // pulls_mu_
  std::atomic<int> n_pulls_in_flight_{0};
  WorkQueue kv_work_;   // pulls and exports; stops before the members its jobs use go
  WorkQueue compiles_;  // last: its threads stop before the members their jobs use go
};

}  // namespace keel::server

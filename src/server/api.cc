#include "server/api.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "sample/rng.h"
#include "server/http/admin_access.h"
#include "server/native_generate.h"
#include "server/prompt.h"
#include "server/stream_resume.h"

namespace keel::server {

using nlohmann::json;
using openai::ApiError;

namespace {

constexpr const char* kChatPath = "/v1/chat/completions";
constexpr const char* kCompletionsPath = "/v1/completions";
constexpr const char* kGeneratePath = "/generate";
// A generation request with a larger body is parsed, tokenized and has its grammar looked up on a
// compile thread: tens of ms at hundreds of KB (a 600 KB schema, a 100k-token prompt), which would hold
// up the io thread's other connections.
constexpr size_t kIoThreadBodyMaxBytes = 64 << 10;

int64_t unix_now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool is_json_content_type(std::string_view ct) {
  std::string_view media = ct.substr(0, ct.find(';'));
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  return http::iequals(media, "application/json");
}

void respond_error(const http::ExchangePtr& ex, const ApiError& error) { ex->respond(openai::error_response(error)); }

void respond_json(const http::ExchangePtr& ex, const json& body) {
  ex->respond(http::HttpResponse{.status = 200, .body = openai::dump_json(body)});
}

}  // namespace

Status ApiConfig::validate() const {
  if (model_names.empty()) return make_error(ErrorCode::kInvalidArgument, "ApiConfig needs at least one model name");
  if (max_context_tokens < 0) return make_error(ErrorCode::kInvalidArgument, "max_context_tokens must be >= 0");
  if (default_completion_max_tokens < 1)
    return make_error(ErrorCode::kInvalidArgument, "default_completion_max_tokens must be >= 1");
  if (parse_limits.max_n < 1) return make_error(ErrorCode::kInvalidArgument, "parse_limits.max_n must be >= 1");
  if (kv_max_tokens < 0 || kv_max_tokens > 65535) {
    return make_error(ErrorCode::kInvalidArgument, "--kv-max-tokens must be in [0, 65535], got {}", kv_max_tokens);
  }
  if (kv_threads < 1 || kv_threads > 256) {
    return make_error(ErrorCode::kInvalidArgument, "--kv-threads must be in [1, 256], got {}", kv_threads);
  }
  if (kv_queue < 0) return make_error(ErrorCode::kInvalidArgument, "--kv-queue must be >= 0, got {}", kv_queue);
  if (kv_timeout_ms < 1 || kv_timeout_ms > 600'000) {
    return make_error(ErrorCode::kInvalidArgument, "--kv-timeout-ms must be in [1, 600000], got {}", kv_timeout_ms);
  }
  return structured.validate();
}

Api::Api(ApiConfig config, sched::Engine& engine, const tokenizer::Tokenizer& tok,
         const tokenizer::ChatTemplate* chat_template)
    : config_(std::move(config)),
      engine_(engine),
      tok_(tok),
      chat_template_(chat_template),
      id_salt_(fresh_seed()),
      created_s_(unix_now_s()),
      gen_metrics_(metrics_),
      structured_(tok, config_.structured),
      kv_work_("kv transfer", std::clamp(config_.kv_threads, 1, 256), static_cast<size_t>(std::max(config_.kv_queue, 0))),
      compiles_("grammar compile", std::max(1, config_.structured.compile_threads),
                config_.structured.max_compiles_waiting) {
  config_.parse_limits.n_vocab = tok_.n_vocab();
  auto load_gauge = [this](std::string_view name, std::string_view help, double (*read)(const sched::EngineLoad&)) {
    metrics_.gauge(name, help, [this, read] { return read(engine_.load()); });
  };
  load_gauge("keel_num_requests_waiting", "Requests queued in the scheduler.",
             [](const sched::EngineLoad& l) { return static_cast<double>(l.n_queued); });
  load_gauge("keel_num_requests_running", "Requests in the running batch.",
             [](const sched::EngineLoad& l) { return static_cast<double>(l.n_running); });
  load_gauge("keel_kv_slots_used", "KV cache slots in use.",
             [](const sched::EngineLoad& l) { return static_cast<double>(l.kv_slots_used); });
  load_gauge("keel_kv_slots_total", "KV cache slots in the pool.",
             [](const sched::EngineLoad& l) { return static_cast<double>(l.kv_slots_total); });
  load_gauge("keel_kv_usage_ratio", "Fraction of KV cache slots in use.", [](const sched::EngineLoad& l) {
    return l.kv_slots_total > 0 ? static_cast<double>(l.kv_slots_used) / static_cast<double>(l.kv_slots_total) : 0.0;
  });
  load_gauge("keel_prefix_cache_hit_ratio", "Cached prompt tokens / prompt tokens, lifetime.",
             [](const sched::EngineLoad& l) { return l.prefix_hit_ratio; });
  load_gauge("keel_jump_forward_tokens", "Tokens a grammar forced, appended without sampling, lifetime.",
             [](const sched::EngineLoad& l) { return static_cast<double>(l.n_jump_forward_tokens); });
  metrics_.gauge("keel_grammar_cache_entries", "Compiled grammars cached (structured output).",
                 [this] { return static_cast<double>(structured_.store().size()); });
  metrics_.gauge("keel_grammar_compiles_waiting", "New grammars compiling or waiting for a compile thread.",
                 [this] { return static_cast<double>(compiles_.waiting() + compiles_.running()); });
}

void Api::add_routes(http::Router& router) {
  router.add("POST", kChatPath, [this](http::HttpRequest&& r, const http::ExchangePtr& ex) {
    handle_generation(ApiKind::kChat, std::move(r), ex);
  });
  router.add("POST", kCompletionsPath, [this](http::HttpRequest&& r, const http::ExchangePtr& ex) {
    handle_generation(ApiKind::kCompletion, std::move(r), ex);
  });
  router.add("POST", kGeneratePath, [this](http::HttpRequest&& r, const http::ExchangePtr& ex) {
    handle_generation(ApiKind::kNative, std::move(r), ex);
  });
  router.add("GET", "/v1/models", [this](http::HttpRequest&&, const http::ExchangePtr& ex) { handle_models(ex); });
  router.add("GET", "/health", [this](http::HttpRequest&&, const http::ExchangePtr& ex) { handle_health(ex); });
  router.add("GET", "/metrics", [this](http::HttpRequest&&, const http::ExchangePtr& ex) { handle_metrics(ex); });
  router.add("POST", "/flush_cache",
             [this](http::HttpRequest&& r, const http::ExchangePtr& ex) { handle_flush_cache(r, ex); });
  router.add("POST", "/v1/kv/export",
             [this](http::HttpRequest&& r, const http::ExchangePtr& ex) { handle_kv_export(std::move(r), ex); });
}

http::ServerHooks Api::hooks() {
  return http::ServerHooks{
      .render_error = openai::render_http_error,
      .on_response = [this](std::string_view, std::string_view path, int status) { count_response(path, status); }};
}

void Api::set_flush_cache(std::function<Status()> flush) { flush_cache_ = std::move(flush); }
void Api::set_ready() { state_.store(State::kReady); }
void Api::begin_drain() {
  state_.store(State::kDraining);
  // Every job off_io_thread posts holds a token until its request has started on its strand (or was
  // dropped there), so no token left means no compile waiting or running either.
  std::unique_lock lock(handoff_mu_);
  handoff_cv_.wait(lock, [&] { return n_handoffs_ == 0; });
}

std::shared_ptr<void> Api::handoff_token() {
  {
    std::lock_guard lock(handoff_mu_);
    ++n_handoffs_;
  }
  return std::shared_ptr<void>(nullptr, [this](void*) {
    std::lock_guard lock(handoff_mu_);
    if (--n_handoffs_ == 0) handoff_cv_.notify_all();
  });
}

void Api::count_response(std::string_view path, int status) {
  static constexpr std::string_view kKnown[] = {kChatPath, kCompletionsPath, kGeneratePath, "/v1/models",
                                                "/health", "/metrics",       "/flush_cache", "/v1/kv/export"};
  std::string_view label = "other";
  for (auto known : kKnown) {
    if (path == known) label = known;
  }
  metrics_
      .counter("keel_http_requests_total", "HTTP responses by path and status code.",
               fmt::format("path=\"{}\",code=\"{}\"", label, status))
      .add();
}

std::optional<ApiError> Api::check_serving() const {
  switch (state_.load()) {
    case State::kReady: return std::nullopt;
    case State::kLoading:
      return ApiError{.status = Status(ErrorCode::kUnavailable, "the model is still loading"),
                      .retry_after_s = config_.retry_after_s};
    case State::kDraining:
      return ApiError{.status = Status(ErrorCode::kUnavailable, "the server is draining and accepts no new requests"),
                      .retry_after_s = config_.retry_after_s};
  }
  return std::nullopt;
}

std::optional<ApiError> Api::check_model(const std::string& model) const {
  for (const auto& name : config_.model_names) {
    if (name == model) return std::nullopt;
  }
  return ApiError{.status = make_error(ErrorCode::kNotFound, "the model '{}' does not exist; this server serves '{}'",
                                       model, config_.model_names.front()),
                  .param = "model"};
}

openai::ApiResult<Api::Prepared> Api::prepare(ApiKind kind, std::string_view body) const {
  Prepared out;
  out.limits.max_context_tokens = config_.max_context_tokens;
  out.limits.default_max_tokens = config_.default_completion_max_tokens;
  switch (kind) {
    case ApiKind::kChat: {
      auto req = openai::parse_chat_request(body, config_.parse_limits);
      if (!req.ok()) return req.error();
      if (auto e = check_model(req.value().model)) return *e;
      auto prompt = chat_prompt_tokens(tok_, chat_template_, req.value().messages);
      if (!prompt.ok()) return prompt.error();
      out.model = std::move(req.value().model);
      out.prompt = std::move(prompt).value();
      out.params = std::move(req.value().params);
      out.limits.max_tokens_fills_context = true;
      out.limits.prompt_param = "messages";
      break;
    }
    case ApiKind::kCompletion: {
      auto req = openai::parse_completion_request(body, config_.parse_limits);
      if (!req.ok()) return req.error();
      if (auto e = check_model(req.value().model)) return *e;
      out.model = std::move(req.value().model);
      out.prompt = req.value().prompt_is_ids ? std::move(req.value().prompt_ids)
                                             : text_prompt_tokens(tok_, req.value().prompt_text);
      out.params = std::move(req.value().params);
      break;
    }
    case ApiKind::kNative: {
      auto req = parse_native_request(body, config_.parse_limits);
      if (!req.ok()) return req.error();
      out.model = config_.model_names.front();
      out.prompt = req.value().has_ids ? std::move(req.value().input_ids) : text_prompt_tokens(tok_, req.value().text);
      out.params = std::move(req.value().params);
      out.limits.prompt_param = req.value().has_ids ? "input_ids" : "text";
      break;
    }
  }
  return out;
}

void Api::handle_generation(ApiKind kind, http::HttpRequest&& req, const http::ExchangePtr& ex) {
  const int64_t received_us = now_us();
  if (!is_json_content_type(req.header("Content-Type"))) {
    auto ct = req.header("Content-Type");
    return respond_error(ex, openai::http_error(415, fmt::format("Content-Type must be application/json, got '{}'",
                                                                 ct.empty() ? "(none)" : ct)));
  }
  if (auto e = check_serving()) return respond_error(ex, *e);
  if (!req.header("X-Keel-Kv-Source").empty() && start_with_pull(kind, req, ex, received_us)) return;
  if (req.body.size() > kIoThreadBodyMaxBytes) {
    // Parsing, tokenizing and (for a schema) re-reading it in key order take tens of ms or more at
    // this size: all of it runs on a compile thread, so the io thread's other connections do not wait.
    return off_io_thread(ex, [this, kind, req = std::move(req), received_us]() mutable -> openai::ApiResult<Ready> {
      auto a = accept(kind, req, received_us);
      if (!a.ok()) return a.error();
      auto factory = structured_.constraint_for(a.value().prepared.params.response_format, req.body);
      if (!factory.ok()) return factory.error();
      return Ready{std::move(a).value(), std::move(factory).value()};
    });
  }
  auto a = accept(kind, req, received_us);
  if (!a.ok()) return respond_error(ex, a.error());
  if (n_pulls_in_flight_.load(std::memory_order_relaxed) > 0) {
    // A pull of this prompt's prefix may be on its way into the cache: wait for it, then start.
    auto w = std::make_shared<Waiting>(Waiting{std::move(a).value(), std::move(req.body)});
    if (start_after_pull(w, ex)) return;
    return start_accepted(std::move(w->accepted), w->body, ex);
  }
  start_accepted(std::move(a).value(), req.body, ex);
}

void Api::start_accepted(Accepted&& a, const std::string& body, const http::ExchangePtr& ex) {
  auto found = structured_.lookup(a.prepared.params.response_format, body);
  if (!found.ok()) return respond_error(ex, found.error());
  if (!found.value().to_compile) return start_generation(std::move(a), std::move(found.value().factory), ex);
  // A grammar not compiled yet: its compile may take up to max_compile_ms.
  off_io_thread(ex, [this, a = std::move(a),
                     spec = std::move(*found.value().to_compile)]() mutable -> openai::ApiResult<Ready> {
    auto factory = structured_.compile(a.prepared.params.response_format, spec);
    if (!factory.ok()) return factory.error();
    return Ready{std::move(a), std::move(factory).value()};
  });
}

openai::ApiResult<Api::Accepted> Api::accept(ApiKind kind, http::HttpRequest& req, int64_t received_us) const {
  auto resumed = take_resume_tokens(req, req.body, tok_.n_vocab());
  if (!resumed.ok()) return resumed.error();
  auto prepared = prepare(kind, req.body);
  if (!prepared.ok()) return prepared.error();
  return Accepted{.kind = kind,
                  .prepared = std::move(prepared).value(),
                  .resumed = std::move(resumed).value(),
                  .emit_token_ids = wants_token_ids(req),
                  .received_us = received_us};
}

bool Api::post_ready_work(WorkQueue& queue, const http::ExchangePtr& ex,
                          std::function<openai::ApiResult<Ready>()> work) {
  // The work runs on a worker thread, where it holds up no other connection of this io thread. Then
  // the request goes back to its connection's strand, where Generation's methods run; a closed
  // connection drops it there, before it reaches the engine. The token counts it until then, for
  // begin_drain.
  return queue.try_post([this, work = std::move(work), ex, token = handoff_token()] {
    // A job that throws (out of memory in a huge compile or pull) still answers its request.
    openai::ApiResult<Ready> ready = [&]() -> openai::ApiResult<Ready> {
      try {
        return work();
      } catch (const std::exception& e) {
        return ApiError{.status = make_error(ErrorCode::kInternal, "the request failed off the io thread: {}", e.what())};
      }
    }();
    ex->dispatch([this, ready = std::move(ready), ex, token]() mutable {
      if (!ready.ok()) return respond_error(ex, ready.error());
      start_generation(std::move(ready.value().accepted), std::move(ready.value().factory), ex);
    });
  });
}

void Api::off_io_thread(const http::ExchangePtr& ex, std::function<openai::ApiResult<Ready>()> work) {
  bool posted = post_ready_work(compiles_, ex, std::move(work));
  if (!posted) {  // a full queue, as the scheduler's: 429 (a router retries it elsewhere, not a replica fault)
    respond_error(ex, ApiError{.status = make_error(ErrorCode::kResourceExhausted,
                                                    "{} requests already wait for a compile thread; retry later",
                                                    compiles_.waiting()),
                               .retry_after_s = config_.retry_after_s});
  }
}

void Api::start_generation(Accepted&& a, StructuredOutput::FactoryPtr factory, const http::ExchangePtr& ex) {
  Prepared& p = a.prepared;
  const ApiKind kind = a.kind;
  if (a.resumed) {
    // A resumed stream's tokens were generated under the same grammar: its matchers start after them.
    if (factory) {
      factory = sample::constraint_after_prefix(std::move(factory), *a.resumed);
      if (!factory) {
        return respond_error(ex, openai::param_error("keel_resume_token_ids",
                                                      "the resumed tokens do not follow the request's grammar"));
      }
    }
    p.prompt.insert(p.prompt.end(), a.resumed->begin(), a.resumed->end());
  }
  auto gen_req = make_generate_request(p.params, std::move(p.prompt), p.limits);
  if (!gen_req.ok()) return respond_error(ex, gen_req.error());
  gen_req.value().constraint = std::move(factory);

  const uint64_t id = next_id_.fetch_add(1);
  gen_req.value().id = id;
  std::string_view prefix = kind == ApiKind::kChat ? "chatcmpl" : kind == ApiKind::kCompletion ? "cmpl" : "gen";
  GenerationSetup setup{.kind = kind,
                        .head = {.id = fmt::format("{}-{:016x}", prefix, sample::mix64(id ^ id_salt_)),
                                 .created = unix_now_s(),
                                 .model = p.model},
                        .n = p.params.n,
                        .stream = p.params.stream,
                        .include_usage = p.params.include_usage,
                        .with_logprobs = p.params.top_logprobs >= 0,
                        .detokenize = !config_.engine_emits_text,
                        .emit_token_ids = a.emit_token_ids,
                        .received_us = a.received_us};
  auto generation = std::make_shared<Generation>(std::move(setup), ex, tok_, gen_metrics_);
  Status submitted = engine_.submit(std::move(gen_req).value(), make_sink(generation, ex));
  if (!submitted.ok()) {
    ApiError error{.status = submitted};
    if (submitted.code() == ErrorCode::kResourceExhausted || submitted.code() == ErrorCode::kUnavailable) {
      error.retry_after_s = config_.retry_after_s;
    }
    if (submitted.code() == ErrorCode::kInvalidArgument) error.param = p.limits.prompt_param;
    return respond_error(ex, error);
  }
  generation->start_stream();
  ex->on_disconnect([this, id, weak = std::weak_ptr<Generation>(generation)] {
    auto g = weak.lock();  // before cancel, which may drop the engine's sink (and its reference)
    engine_.cancel(id);
    if (g) g->on_client_gone();
  });
}

void Api::handle_models(const http::ExchangePtr& ex) {
  json data = json::array();
  for (const auto& name : config_.model_names) {
    data.push_back({{"id", name}, {"object", "model"}, {"created", created_s_}, {"owned_by", "keel"}});
  }
  respond_json(ex, {{"object", "list"}, {"data", std::move(data)}});
}

void Api::handle_health(const http::ExchangePtr& ex) {
  if (auto e = check_serving()) return respond_error(ex, *e);
  respond_json(ex, {{"status", "ok"}});
}

void Api::handle_metrics(const http::ExchangePtr& ex) {
  ex->respond(http::HttpResponse{
      .status = 200, .content_type = "text/plain; version=0.0.4; charset=utf-8", .body = metrics_.render()});
}

void Api::handle_flush_cache(const http::HttpRequest& req, const http::ExchangePtr& ex) {
  // Any client that could flush would make every replica's cache cold at will.
  if (auto denial = http::deny_admin(config_.admin_key, req, "cache flushes")) {
    return respond_error(ex, openai::http_error(denial->status, std::move(denial->message)));
  }
  if (!flush_cache_) {
    return respond_error(ex, ApiError{.status = Status(ErrorCode::kUnsupported, "this engine has no cache to flush")});
  }
  Status s = flush_cache_();
  if (!s.ok()) return respond_error(ex, ApiError{.status = s});
  respond_json(ex, {{"status", "flushed"}});
}

}  // namespace keel::server

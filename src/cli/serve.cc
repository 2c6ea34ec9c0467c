// `keel serve`: one replica. Loads the model, starts the scheduler thread (sched::ThreadedEngine) and
// the HTTP server with the OpenAI API (server::Api), reports ready, and drains on SIGTERM/SIGINT:
// stop accepting, finish accepted requests, exit 0.
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/log.h"
#include "cli/commands.h"
#include "cli/model_files.h"
#include "cli/stop_signals.h"
#include "model/fingerprint.h"
#include "model/model.h"
#include "sched/threaded_engine.h"
#include "server/api.h"
#include "server/cache_events.h"
#include "server/http/server.h"
#include "server/pending_engine.h"

namespace keel::cli {
namespace {

struct ServeArgs {
  std::string model;
  std::string served_name;
  server::http::ServerConfig http;
  sched::SchedConfig sched;
  std::string policy = "fcfs";
  int n_threads = 0;
  std::string device = "cpu";
  std::string dtype = "auto";
  float mem_fraction = 0.85f;
  std::string load_format = "auto";
  std::string grammar_whitespace = "compact";
  server::StructuredOutputConfig structured;
  std::string admin_key;
  server::ApiConfig api;  // the fields flags set directly (kv_*); run_serve fills in the rest
};

// cuda without --kv-tokens: the KV pool takes mem_fraction of the device memory still free after the
// weights (K and V rows of every layer in the activation dtype).
void size_kv_pool(model::Model& m, float mem_fraction, sched::SchedConfig& sched) {
  const int64_t free_bytes = m.backend().free_memory_bytes();
  if (sched.kv_tokens > 0 || free_bytes < 0) return;
  const model::ModelConfig& c = m.config();
  const int64_t per_token = 2 * c.n_layers * c.n_kv_heads * c.head_dim *
                            static_cast<int64_t>(tensor::row_size_bytes(m.backend().activation_dtype(), 1));
  const auto budget = static_cast<int64_t>(static_cast<double>(free_bytes) * mem_fraction);
  sched.kv_tokens = std::min<int64_t>(budget / per_token, std::numeric_limits<int32_t>::max());
  KEEL_LOG_INFO("KV pool: {} tokens ({:.1f} GiB of {:.1f} GiB free)", sched.kv_tokens,
                static_cast<double>(sched.kv_tokens * per_token) / (1 << 30), static_cast<double>(free_bytes) / (1 << 30));
}

int fail(int code, const Status& st) {
  std::fprintf(stderr, "keel serve: %s\n", st.to_string().c_str());
  return code;
}

int run_serve(ServeArgs a) {
  const sigset_t stop_signals = block_stop_signals();
  auto policy = sched::parse_policy(a.policy);
  if (!policy.ok()) return fail(2, policy.status());
  a.sched.policy = *policy;
  if (Status st = a.sched.validate(); !st.ok()) return fail(2, st);
  if (Status st = a.http.validate(); !st.ok()) return fail(2, st);

  const int64_t t0 = now_us();
  auto loaded = model::load_model({.path = a.model,
                                   .backend = a.device,
                                   .dummy_weights = a.load_format == "dummy",
                                   .backend_options = {.n_threads = a.n_threads, .dtype = a.dtype}});
  if (!loaded.ok()) return fail(2, loaded.status());
  size_kv_pool(**loaded, a.mem_fraction, a.sched);
  auto tok = load_tokenizer(a.model);
  if (!tok.ok()) return fail(2, tok.status());
  auto tmpl = load_chat_template(**tok);
  if (!tmpl.ok()) return fail(2, tmpl.status());
  auto engine = sched::ThreadedEngine::create({.model = loaded->get(), .tokenizer = tok->get(), .config = a.sched});
  if (!engine.ok()) return fail(2, engine.status());

  server::ApiConfig api_config = a.api;
  api_config.model_names = {a.served_name.empty() ? std::filesystem::path(a.model).filename().string() : a.served_name,
                            a.model};
  api_config.max_context_tokens = static_cast<int32_t>((*engine)->context_tokens());
  api_config.structured = a.structured;
  api_config.admin_key = a.admin_key;
  if (Status st = api_config.validate(); !st.ok()) return fail(2, st);
  api_config.structured.whitespace =
      a.grammar_whitespace == "flexible" ? grammar::WhitespacePolicy::kBounded : grammar::WhitespacePolicy::kCompact;
  server::CacheEventPublisher cache_events({.drain = [&](auto& out) { return (*engine)->drain_cache_events(out); },
                                            .snapshot = [&] { return (*engine)->cache_snapshot(); }});
  server::PendingAnnouncingEngine announcing(**engine, cache_events);  // "prefill started" on the feed
  server::Api api(api_config, announcing, **tok, tmpl->has_value() ? &tmpl->value() : nullptr);
  api.set_flush_cache([&] { return (*engine)->flush_cache(); });
  if (api_config.kv_max_tokens > 0) {
    auto fingerprint = model::model_fingerprint(a.model, a.load_format == "dummy");
    if (!fingerprint.ok()) return fail(2, fingerprint.status());
    const model::ModelConfig& mc = (*loaded)->config();
    api.set_kv_transfer({.identity = {.model = *fingerprint,
                                      .backend = a.device,
                                      .kv_dtype = std::string(tensor::dtype_name((*loaded)->backend().activation_dtype())),
                                      .n_layers = mc.n_layers,
                                      .n_kv_heads = mc.n_kv_heads,
                                      .head_dim = mc.head_dim,
                                      .n_vocab = mc.vocab_size},
                         .export_prefix = [&](std::span<const int32_t> t, int64_t max) {
                           return (*engine)->export_prefix(t, max);
                         },
                         .import_prefix = [&](const sched::KvPrefix& p) { return (*engine)->import_prefix(p); }});
  }
  server::http::Router router;
  api.add_routes(router);
  cache_events.add_routes(router);
  cache_events.start();
  server::http::HttpServer http(a.http, std::move(router), api.hooks());
  if (Status st = http.start(); !st.ok()) return fail(2, st);
  api.set_ready();
  KEEL_LOG_INFO("serving {} on http://{}:{} (ready in {:.0f} ms, context {} tokens)", api_config.model_names[0],
                a.http.host, http.port(), (now_us() - t0) / 1e3, (*engine)->context_tokens());

  int sig = 0;
  sigwait(&stop_signals, &sig);
  KEEL_LOG_INFO("signal {}: draining", sig);
  api.begin_drain();
  cache_events.stop();
  (*engine)->drain();
  http.stop();
  KEEL_LOG_INFO("drained; exiting");
  return 0;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  args->model = default_model_path();
  auto* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  cmd->add_option("-m,--model", args->model, "GGUF file or Hugging Face model folder")->capture_default_str();
  cmd->add_option("--served-model-name", args->served_name, "Model name the API reports (default: file name)");
  cmd->add_option("--host", args->http.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", args->http.port, "Port to listen on (0 = any free port)")->capture_default_str();
  cmd->add_option("--http-threads", args->http.n_io_threads, "HTTP io threads")->capture_default_str();
  cmd->add_option("--admin-key", args->admin_key,
                  "Bearer key POST /flush_cache needs (without one: loopback clients only)")
      ->envname("KEEL_ADMIN_KEY");
  cmd->add_option("--kv-max-tokens", args->api.kv_max_tokens,
                  "KV pulls: most prompt tokens one export or pull moves (0 = off; docs/router.md)")
      ->capture_default_str();
  cmd->add_option("--kv-threads", args->api.kv_threads, "KV pulls: threads that pull and export")->capture_default_str();
  cmd->add_option("--kv-queue", args->api.kv_queue, "KV pulls: jobs that may wait for a KV thread")->capture_default_str();
  cmd->add_option("--kv-timeout-ms", args->api.kv_timeout_ms, "KV pulls: one pull's deadline")->capture_default_str();
  cmd->add_option("--max-body-bytes", args->http.max_body_bytes, "Largest request body (413 above)")->capture_default_str();
  cmd->add_option("-t,--threads", args->n_threads, "CPU threads for the model (default: KEEL_THREADS or all cores)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--device", args->device, "Backend: cpu | cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  cmd->add_option("--dtype", args->dtype,
                  "Precision of activations, weights and KV cache: auto | bf16 | f32 (cuda; auto = f32 for a GGUF "
                  "whose weights fit in 2 GiB as f32, else bf16; cpu is always f32)")
      ->check(CLI::IsMember({"auto", "bf16", "f32"}))
      ->capture_default_str();
  cmd->add_option("--load-format", args->load_format,
                  "auto | dummy (random weights from the folder's config.json; the folder still needs a tokenizer.json)")
      ->check(CLI::IsMember({"auto", "dummy"}))
      ->capture_default_str();
  cmd->add_option("--mem-fraction", args->mem_fraction, "cuda: share of free device memory for the KV pool")
      ->check(CLI::Range(0.01f, 1.0f))
      ->capture_default_str();
  cmd->add_option("--kv-tokens", args->sched.kv_tokens, "KV pool size in tokens (0 = model context)")->capture_default_str();
  cmd->add_option("--max-batch-tokens", args->sched.max_batch_tokens, "Tokens per forward pass")->capture_default_str();
  cmd->add_option("--prefill-chunk", args->sched.prefill_chunk, "Most prompt tokens per sequence per step")->capture_default_str();
  cmd->add_option("--max-running", args->sched.max_running, "Sequences decoding at once")->capture_default_str();
  cmd->add_option("--max-queue", args->sched.max_queue, "Waiting requests before 429")->capture_default_str();
  cmd->add_option("--policy", args->policy, "Admission policy: fcfs | lpm (longest prefix match)")->capture_default_str();
  cmd->add_flag("--jump-forward", args->sched.jump_forward,
                 "Structured output: append tokens the grammar forces without sampling them");
  cmd->add_flag_callback(
      "--no-overlap", [args] { args->sched.overlap = false; },
      "cuda: plan and queue each step only after the previous step's tokens are read (no overlap scheduling; "
      "also KEEL_OVERLAP=0)");
  cmd->add_option("--grammar-whitespace", args->grammar_whitespace,
                  "Structured output: whitespace between JSON tokens unless a request sets grammar_whitespace: "
                  "compact (none) | flexible (runs of at most --grammar-max-whitespace)")
      ->check(CLI::IsMember({"compact", "flexible"}))
      ->capture_default_str();
  cmd->add_option("--grammar-max-whitespace", args->structured.max_whitespace,
                  "Structured output: longest whitespace run between JSON tokens when flexible")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--grammar-cache", args->structured.cache_capacity, "Structured output: compiled grammars kept")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--grammar-cache-mb", args->structured.cache_mb,
                  "Structured output: MiB of compiled grammars and token-mask caches kept (0 = no byte bound)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--grammar-threads", args->structured.compile_threads,
                  "Threads compiling new grammars and parsing request bodies over 64 KiB (off the HTTP io threads)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--grammar-queue", args->structured.max_compiles_waiting,
                  "Requests that may wait for a compile thread (beyond: 429)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->callback([args] { set_exit_code(run_serve(*args)); });
}

}  // namespace keel::cli

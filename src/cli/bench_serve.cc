// `keel bench serve`: load-tests an OpenAI-compatible server (keel serve, llama.cpp's server, vLLM,
// SGLang ...) over plain HTTP with the load generator in loadgen/, prints TTFT / inter-token /
// end-to-end latency percentiles and throughput, and writes them as JSON with --output.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "loadgen/report_format.h"
#include "loadgen/runner.h"

namespace keel::cli {
namespace {

struct BenchServeArgs {
  std::string url = "http://127.0.0.1:8000";
  std::string model;  // empty: the first id GET /v1/models lists
  std::string endpoint = "chat";
  std::string workload = "random";
  loadgen::WorkloadConfig work;
  loadgen::ArrivalConfig arrival;
  double temperature = 0.0;
  std::string extra_body;
  int32_t timeout_s = 600;
  std::string output;
  bool quiet = false;
};

int fail(int code, const Status& st) {
  std::fprintf(stderr, "keel bench serve: %s\n", st.to_string().c_str());
  return code;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json config_json(const BenchServeArgs& a, const std::string& model) {
  nlohmann::json c = {{"url", a.url},
                      {"model", model},
                      {"endpoint", a.endpoint},
                      {"workload", a.workload},
                      {"num_requests", a.work.n_requests},
                      {"seed", a.work.seed},
                      {"temperature", a.temperature},
                      {"output_tokens", {a.work.output_tokens_min, a.work.output_tokens_max}},
                      {"started_utc", utc_now()}};
  if (a.arrival.concurrency > 0) {
    c["concurrency"] = a.arrival.concurrency;
  } else {
    c["rate_rps"] = a.arrival.rate_rps;
    c["burst"] = a.arrival.burst;
  }
  if (a.work.kind == loadgen::WorkloadKind::kRandom) {
    c["input_words"] = {a.work.input_words_min, a.work.input_words_max};
  } else {
    c["tenants"] = a.work.n_tenants;
    c["prompts_per_tenant"] = a.work.n_prompts_per_tenant;
    c["prefix_words"] = a.work.prefix_words;
    c["question_words"] = a.work.question_words;
  }
  if (!a.extra_body.empty()) c["extra_body"] = nlohmann::json::parse(a.extra_body);
  return c;
}

Status check_args(BenchServeArgs& a, loadgen::RunConfig& run) {
  KEEL_ASSIGN_OR_RETURN(run.target, loadgen::parse_url(a.url));
  KEEL_ASSIGN_OR_RETURN(run.endpoint, loadgen::parse_endpoint(a.endpoint));
  KEEL_ASSIGN_OR_RETURN(a.work.kind, loadgen::parse_workload_kind(a.workload));
  KEEL_RETURN_IF_ERROR(a.work.validate());
  a.arrival.seed = a.work.seed;
  KEEL_RETURN_IF_ERROR(a.arrival.validate());
  KEEL_RETURN_IF_ERROR(loadgen::check_extra_json(a.extra_body));
  if (!(a.temperature >= 0.0 && a.temperature <= 2.0))
    return make_error(ErrorCode::kInvalidArgument, "--temperature must be in [0, 2], got {}", a.temperature);
  if (a.timeout_s < 1) return make_error(ErrorCode::kInvalidArgument, "--timeout-s must be >= 1");
  run.arrival = a.arrival;
  run.request_timeout_s = a.timeout_s;
  run.body.temperature = a.temperature;
  run.body.extra_json = a.extra_body;
  return {};
}

int run_bench_serve(BenchServeArgs a) {
  loadgen::RunConfig run;
  if (Status st = check_args(a, run); !st.ok()) return fail(2, st);
  run.body.model = a.model;
  if (run.body.model.empty()) {
    auto ids = loadgen::fetch_model_ids(run.target, 10'000);
    if (!ids.ok()) return fail(1, ids.status());
    if (ids->empty()) return fail(1, Status(ErrorCode::kNotFound, "GET /v1/models lists no model; pass --model"));
    run.body.model = ids->front();
  }
  const auto requests = loadgen::make_workload(a.work);
  const int64_t n_total = static_cast<int64_t>(requests.size());
  if (!a.quiet) {
    run.on_done = [n_total, step = std::max<int64_t>(1, n_total / 10)](int64_t n) {
      if (n % step == 0 || n == n_total)
        std::fprintf(stderr, "\r%lld/%lld requests", static_cast<long long>(n), static_cast<long long>(n_total));
      if (n == n_total) std::fprintf(stderr, "\n");
    };
  }
  auto results = loadgen::run_load(run, requests);
  if (!results.ok()) return fail(1, results.status());
  const loadgen::Report report = loadgen::make_report(*results);
  std::fputs(loadgen::report_text(report).c_str(), stdout);
  if (!a.output.empty()) {
    std::ofstream out(a.output);
    out << loadgen::report_json(report, config_json(a, run.body.model)).dump(2) << "\n";
    if (!out) return fail(1, make_error(ErrorCode::kIo, "cannot write {}", a.output));
  }
  return report.n_ok > 0 ? 0 : 1;
}

void add_workload_flags(CLI::App* cmd, BenchServeArgs& a) {
  cmd->add_option("--workload", a.workload, "random | shared-prefix")->capture_default_str();
  cmd->add_option("-n,--num-requests", a.work.n_requests, "Requests to send")->capture_default_str();
  cmd->add_option("--seed", a.work.seed, "Seed for prompts, lengths and arrivals")->capture_default_str();
  cmd->add_option("--input-words-min", a.work.input_words_min, "random: shortest prompt (words)")
      ->capture_default_str();
  cmd->add_option("--input-words-max", a.work.input_words_max, "random: longest prompt (words)")->capture_default_str();
  cmd->add_option("--output-tokens-min", a.work.output_tokens_min, "Smallest max_tokens")->capture_default_str();
  cmd->add_option("--output-tokens-max", a.work.output_tokens_max, "Largest max_tokens")->capture_default_str();
  cmd->add_option("--tenants", a.work.n_tenants, "shared-prefix: tenants (T)")->capture_default_str();
  cmd->add_option("--prompts-per-tenant", a.work.n_prompts_per_tenant, "shared-prefix: system prompts per tenant (P)")
      ->capture_default_str();
  cmd->add_option("--prefix-words", a.work.prefix_words, "shared-prefix: words per system prompt")
      ->capture_default_str();
  cmd->add_option("--question-words", a.work.question_words, "shared-prefix: words per unique question")
      ->capture_default_str();
}

}  // namespace

void register_bench(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  auto args = std::make_shared<BenchServeArgs>();
  auto* cmd = bench->add_subcommand("serve", "Load-test an OpenAI-compatible server (keel serve or a peer)");
  cmd->add_option("--url", args->url, "Server base URL (http://host:port)")->capture_default_str();
  cmd->add_option("--model", args->model, "Model name to request (default: first of GET /v1/models)");
  cmd->add_option("--endpoint", args->endpoint, "chat | completions")->capture_default_str();
  cmd->add_option("-c,--concurrency", args->arrival.concurrency, "Closed loop: requests in flight");
  cmd->add_option("--rate", args->arrival.rate_rps, "Open loop: Poisson arrivals, requests per second");
  cmd->add_option("--burst", args->arrival.burst, "Open loop: requests per arrival")->capture_default_str();
  add_workload_flags(cmd, *args);
  cmd->add_option("--temperature", args->temperature, "Sampling temperature")->capture_default_str();
  cmd->add_option("--extra-body", args->extra_body, "JSON object merged into every request body");
  cmd->add_option("--timeout-s", args->timeout_s, "Per-request timeout (seconds)")->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Write the report as JSON here");
  cmd->add_flag("-q,--quiet", args->quiet, "No progress on stderr");
  cmd->callback([args] { set_exit_code(run_bench_serve(*args)); });
}

}  // namespace keel::cli

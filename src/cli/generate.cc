// `keel generate`: load a model, run one prompt (raw or through the chat template), stream the text
// to stdout, and report load time and prompt/decode speed on stderr.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/thread_pool.h"
#include "cli/commands.h"
#include "cli/model_files.h"
#include "model/model.h"
#include "sample/sampler.h"

namespace keel::cli {
namespace {

struct GenerateArgs {
  std::string model;
  std::string prompt;
  std::string chat;
  std::string system;
  int n_predict = 128;
  int n_threads = 0;
  int chunk = 512;
  bool ignore_eos = false;
  std::string stats_json;
  sample::SamplingParams sampling{.temperature = 0.7f, .top_p = 0.95f};
  int64_t seed = -1;
  std::string device = "cpu";
  std::string dtype = "auto";
  std::string load_format = "auto";
};

struct Stats {
  double load_ms = 0, prompt_ms = 0, decode_ms = 0;
  int n_prompt = 0, n_decoded = 0;
  std::vector<int32_t> tokens;  // each step's token, and its logits' top-1 minus top-2 (--stats-json)
  std::vector<float> margins;
};

// The gap between the two largest logits (how near a greedy step was to a tie).
float top2_margin(const std::vector<float>& logits) {
  float a = -INFINITY, b = -INFINITY;
  for (float v : logits) {
    if (v > a) {
      b = a;
      a = v;
    } else if (v > b) {
      b = v;
    }
  }
  return a - b;
}

int fail(int code, const Status& st) {
  std::fprintf(stderr, "keel generate: %s\n", st.to_string().c_str());
  return code;
}

// Exit code for a failure: 2 when the input (flags, files) is at fault, 1 otherwise.
int input_code(const Status& st) {
  switch (st.code()) {
    case ErrorCode::kInternal:
    case ErrorCode::kResourceExhausted:
      return 1;
    default:
      return 2;
  }
}

// Runs `tokens` through the model starting at position `pos`, in chunks; returns the logits of the
// last token.
Status prefill(model::Model& m, model::KvStorage& kv, const std::vector<int32_t>& tokens, int chunk,
               std::vector<float>& logits) {
  const int32_t n = static_cast<int32_t>(tokens.size());
  for (int32_t begin = 0; begin < n; begin += chunk) {
    const int32_t end = std::min(n, begin + chunk);
    model::Batch b;
    model::BatchSeq seq{.q_begin = 0, .n_q = end - begin, .ctx_slots = {}};
    for (int32_t i = begin; i < end; ++i) {
      b.tokens.push_back(tokens[static_cast<size_t>(i)]);
      b.positions.push_back(i);
      b.slots.push_back(i);
    }
    for (int32_t i = 0; i < end; ++i) seq.ctx_slots.push_back(i);
    b.seqs.push_back(std::move(seq));
    if (end == n) b.logit_rows.push_back(end - begin - 1);
    KEEL_RETURN_IF_ERROR(m.forward(b, kv, logits));
  }
  return {};
}

int run_generate(const GenerateArgs& a) {
  if (a.prompt.empty() == a.chat.empty()) {
    return fail(2, Status(ErrorCode::kInvalidArgument, "give exactly one of --prompt or --chat"));
  }
  sample::SamplingParams sp = a.sampling;
  sp.seed = a.seed >= 0 ? static_cast<uint64_t>(a.seed) : static_cast<uint64_t>(now_us());
  if (Status st = sp.validate(); !st.ok()) return fail(2, st);

  const int64_t t0 = now_us();
  model::LoadOptions lo{.path = a.model,
                        .backend = a.device,
                        .dummy_weights = a.load_format == "dummy",
                        .backend_options = {.n_threads = a.n_threads, .dtype = a.dtype}};
  auto loaded = model::load_model(lo);
  if (!loaded.ok()) return fail(input_code(loaded.status()), loaded.status());
  auto tok = load_tokenizer(a.model);
  if (!tok.ok()) return fail(input_code(tok.status()), tok.status());
  model::Model& m = **loaded;
  const tokenizer::Tokenizer& t = **tok;

  std::string text = a.prompt;
  if (!a.chat.empty()) {
    auto tmpl = load_chat_template(t);
    if (!tmpl.ok()) return fail(2, tmpl.status());
    if (!tmpl->has_value()) return fail(2, Status(ErrorCode::kInvalidArgument, "--chat: the model has no chat template; use --prompt"));
    auto rendered = render_chat(**tmpl, t, a.system, a.chat);
    if (!rendered.ok()) return fail(2, rendered.status());
    text = std::move(rendered).value();
  }
  // A rendered chat already holds its BOS when the template writes one.
  const std::vector<int32_t> prompt =
      t.encode(text, {.add_special = a.chat.empty(), .parse_special = !a.chat.empty()});
  const int64_t n_ctx = static_cast<int64_t>(prompt.size()) + a.n_predict;
  if (prompt.empty()) return fail(2, Status(ErrorCode::kInvalidArgument, "the prompt encodes to no tokens"));
  if (m.config().max_positions > 0 && n_ctx > m.config().max_positions) {
    return fail(2, make_error(ErrorCode::kInvalidArgument, "prompt ({} tokens) + -n {} exceeds the model's context of {} by {}",
                              prompt.size(), a.n_predict, m.config().max_positions, n_ctx - m.config().max_positions));
  }
  auto kv = m.make_kv_storage(n_ctx);
  if (!kv.ok()) return fail(1, kv.status());
  Stats stats{.load_ms = (now_us() - t0) / 1e3};

  std::vector<float> logits(static_cast<size_t>(m.config().vocab_size));
  int64_t t1 = now_us();
  if (Status st = prefill(m, *kv, prompt, a.chunk, logits); !st.ok()) return fail(1, st);
  stats.prompt_ms = (now_us() - t1) / 1e3;
  stats.n_prompt = static_cast<int>(prompt.size());

  tokenizer::IncrementalDetokenizer detok(t);
  sample::SamplerScratch scratch;
  int32_t pos = static_cast<int32_t>(prompt.size());
  t1 = now_us();
  for (int i = 0; i < a.n_predict; ++i) {
    if (!a.stats_json.empty()) stats.margins.push_back(top2_margin(logits));
    const int32_t next = sample::sample_token(logits, sp, pos, scratch);
    ++stats.n_decoded;
    if (!a.stats_json.empty()) stats.tokens.push_back(next);
    if (!a.ignore_eos && t.is_eog(next)) break;
    std::string piece = detok.push(next);
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    if (i + 1 == a.n_predict) break;
    model::Batch b{.tokens = {next}, .positions = {pos}, .slots = {pos}, .seqs = {}, .logit_rows = {0}};
    model::BatchSeq seq{.q_begin = 0, .n_q = 1, .ctx_slots = {}};
    for (int32_t s = 0; s <= pos; ++s) seq.ctx_slots.push_back(s);
    b.seqs.push_back(std::move(seq));
    if (Status st = m.forward(b, *kv, logits); !st.ok()) return fail(1, st);
    ++pos;
  }
  std::string tail = detok.flush();
  std::fwrite(tail.data(), 1, tail.size(), stdout);
  std::fputc('\n', stdout);
  stats.decode_ms = (now_us() - t1) / 1e3;

  std::fprintf(stderr, "keel generate: load %.0f ms | prompt %d tokens, %.1f tok/s | decode %d tokens, %.1f tok/s | seed %llu\n",
               stats.load_ms, stats.n_prompt, stats.n_prompt / (stats.prompt_ms / 1e3), stats.n_decoded,
               stats.n_decoded / (stats.decode_ms / 1e3), static_cast<unsigned long long>(sp.seed));
  if (!a.stats_json.empty()) {
    nlohmann::json j = {{"load_ms", stats.load_ms}, {"prompt_tokens", stats.n_prompt}, {"prompt_ms", stats.prompt_ms},
                        {"decode_tokens", stats.n_decoded}, {"decode_ms", stats.decode_ms},
                        {"tokens", stats.tokens}, {"top2_margins", stats.margins}};
    std::ofstream(a.stats_json) << j.dump() << "\n";
  }
  return 0;
}

}  // namespace

void register_generate(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  args->model = default_model_path();
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt and stream it to stdout");
  cmd->add_option("-m,--model", args->model, "GGUF file or Hugging Face model folder")->capture_default_str();
  cmd->add_option("-p,--prompt", args->prompt, "Raw prompt text (tokenized with BOS as the vocabulary asks)");
  cmd->add_option("-c,--chat", args->chat, "User message, rendered with the model's chat template");
  cmd->add_option("--system", args->system, "System message for --chat");
  cmd->add_option("-n,--max-tokens", args->n_predict, "Tokens to generate")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--temperature", args->sampling.temperature, "Sampling temperature (0 = greedy)")->check(CLI::Range(0.0f, 100.0f))->capture_default_str();
  cmd->add_option("--top-p", args->sampling.top_p, "Nucleus sampling mass")->capture_default_str();
  cmd->add_option("--top-k", args->sampling.top_k, "Keep the k most likely tokens (0 = off)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--min-p", args->sampling.min_p, "Drop tokens below min_p x the top probability")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Sampling seed (default: from the clock, printed)");
  cmd->add_option("-t,--threads", args->n_threads, "CPU threads (default: KEEL_THREADS or all cores)")->check(CLI::Range(0, 1024));
  cmd->add_option("--prefill-chunk", args->chunk, "Prompt tokens per forward pass")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  cmd->add_option("--device", args->device, "Backend: cpu | cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  cmd->add_option("--dtype", args->dtype,
                  "Precision of activations, weights and KV cache: auto | bf16 | f32 (cuda; auto = f32 for a GGUF "
                  "whose weights fit in 2 GiB as f32, else bf16; cpu is always f32)")
      ->check(CLI::IsMember({"auto", "bf16", "f32"}))
      ->capture_default_str();
  cmd->add_option("--load-format", args->load_format, "auto | dummy (random weights from config.json)")
      ->check(CLI::IsMember({"auto", "dummy"}))
      ->capture_default_str();
  cmd->add_flag("--ignore-eos", args->ignore_eos, "Keep generating past end-of-generation tokens");
  cmd->add_option("--stats-json", args->stats_json, "Write load/prompt/decode timings as JSON to this file");
  cmd->callback([args] { set_exit_code(run_generate(*args)); });
}

}  // namespace keel::cli

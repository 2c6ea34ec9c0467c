// keel's side of bench/bench_grammar.py: over a directory of MaskBench schemas, with one tokenizer
// (tokenizer.json), on one thread: per schema the compile time (JSON Schema -> compiled grammar ->
// empty token-mask cache) and, for its first valid instance the grammar accepts as compact JSON, the
// time of every fill_mask over the whole vocabulary while the instance's canonical tokens are fed
// (cold cache: first-visit classifications included, as a first request would see them). Writes
// one JSON object per schema to stdout; bench_grammar.py aggregates and compares with peers. The
// instance is then fed a second time ("warm": a later request with the same schema, whose
// per-position tables the first one built). Grammars come from one GrammarStore, as in keel serve, so
// a schema's cold masks can reuse classifications earlier schemas made (shared_classes.h);
// `isolated` gives every schema a fresh TokenMaskCache with nothing shared.
// New grammars classify their counter positions ahead of use (counter_prefill.h) inside the compile
// time, as the store does; KEEL_COUNTER_BUDGET_US sets that budget (0: off, the behaviour before).
//   bench_grammar_keel <tokenizer dir> <schema dir> [every_nth=1] [isolated]
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/compile.h"
#include "grammar/counter_prefill.h"
#include "grammar/grammar_store.h"
#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "sched/grammar_constraint.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace keel;
using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// This thread's CPU time in µs: on the shared development VM a run gets a fraction of its core, and
// wall-clock percentiles then measure the scheduler; CPU time measures the work.
double cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

struct Times {
  std::vector<double> wall, cpu;
};

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Mask times (µs, wall and CPU) while feeding `text`'s tokens; empty when the grammar refuses them.
Times mask_times(const std::shared_ptr<grammar::TokenMaskCache>& masks, const tokenizer::Tokenizer& tok,
                 const std::string& text) {
  grammar::GrammarMatcher m(masks);
  std::vector<uint32_t> bits(masks->n_mask_words());
  Times out;
  auto timed_fill = [&] {
    const double c0 = cpu_us();
    auto t0 = Clock::now();
    m.fill_mask(bits);
    out.wall.push_back(us_since(t0));
    out.cpu.push_back(cpu_us() - c0);
  };
  for (int32_t id : tok.encode(text, {.add_special = false, .parse_special = false})) {
    timed_fill();
    if (!(bits[static_cast<size_t>(id) / 32] >> (id % 32) & 1u) || !m.accept_token(id)) return {};
  }
  timed_fill();
  return m.can_end() ? out : Times{};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <tokenizer dir> <schema dir> [every_nth] [isolated]\n", argv[0]);
    return 2;
  }
  const std::filesystem::path tok_dir = argv[1], data = argv[2];
  const int every = argc > 3 ? std::max(1, std::atoi(argv[3])) : 1;
  const bool isolated = argc > 4 && std::string(argv[4]) == "isolated";
  auto tok = tokenizer::Tokenizer::from_hf_json(read_file(tok_dir / "tokenizer.json"),
                                                read_file(tok_dir / "tokenizer_config.json"));
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().to_string().c_str());
    return 2;
  }
  auto t0 = Clock::now();
  auto trie = std::make_shared<const grammar::VocabTrie>(keel::sched::grammar_vocabulary(**tok));
  std::fprintf(stderr, "vocabulary of %d tokens, trie built in %.1f ms\n", (*tok)->n_vocab(), us_since(t0) / 1e3);
  // KEEL_COUNTER_BUDGET_US: the store's counter budget (counter_prefill.h); 0 measures without it.
  const char* budget_env = std::getenv("KEEL_COUNTER_BUDGET_US");
  const std::chrono::microseconds counter_budget =
      budget_env != nullptr ? std::chrono::microseconds(std::atoll(budget_env)) : grammar::GrammarStore::kCounterBudget;
  grammar::GrammarStore store(trie, 16, 0, counter_budget);
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(data))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i < files.size(); i += static_cast<size_t>(every)) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::parse(read_file(files[i]), nullptr, false);
    if (doc.is_discarded() || !doc.contains("schema")) continue;
    nlohmann::json row = {{"file", files[i].filename().string()}};
    grammar::GrammarSpec spec{.kind = grammar::GrammarSpec::Kind::kJsonSchema, .source = doc["schema"].dump()};
    auto c0 = Clock::now();
    const double cpu0 = cpu_us();
    std::shared_ptr<grammar::TokenMaskCache> masks;
    if (isolated) {
      auto g = grammar::compile_grammar(spec);
      if (g.ok()) {
        masks = std::make_shared<grammar::TokenMaskCache>(std::move(g).value(), trie);
        if (counter_budget.count() > 0) grammar::classify_counters_ahead(*masks, counter_budget);  // as the store does
      }
    } else if (auto m = store.get_or_compile(spec); m.ok()) {
      masks = std::move(m).value();
    }
    row["compile_us"] = us_since(c0);
    row["compile_cpu_us"] = cpu_us() - cpu0;
    row["compiled"] = masks != nullptr;
    if (masks) {
      for (const auto& t : doc.value("tests", nlohmann::ordered_json::array())) {
        if (!t.value("valid", false)) continue;
        Times times = mask_times(masks, **tok, t["data"].dump());
        if (times.wall.empty()) continue;
        row["instance"] = t["data"].dump();
        row["mask_us"] = times.wall;
        row["mask_cpu_us"] = times.cpu;
        Times warm = mask_times(masks, **tok, t["data"].dump());  // same schema again: tables built
        row["mask_warm_us"] = warm.wall;
        row["mask_warm_cpu_us"] = warm.cpu;
        row["states"] = masks->states().size();
        break;
      }
    }
    std::printf("%s\n", row.dump().c_str());
    std::fflush(stdout);
  }
  return 0;
}

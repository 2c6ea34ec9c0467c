// Soundness and coverage of the JSON Schema compiler over MaskBench (../shared/data/maskbench-dev)
// and the official JSON-Schema-Test-Suite (draft 2020-12). Every instance is run byte by byte
// through the Earley matcher, in every compact serialisation the search finds (key orders, number
// spellings: a valid instance passes when keel accepts one of them, an invalid one is a false accept
// when keel accepts any). Zero false accepts is a hard requirement; the share of schemas that
// compile and pass is ratcheted by tests/golden/grammar/coverage.json (raise it when it improves).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>

#include "grammar/compile.h"
#include "grammar/json_schema.h"
#include "unit/grammar/schema_corpus.h"

namespace keel::grammar::test {
namespace {

namespace fs = std::filesystem;

struct Figures {
  int schemas = 0, compiled = 0, passing = 0;
  int tests = 0, passed = 0, false_accepts = 0, false_rejects = 0, searches_exhausted = 0;
  std::map<std::string, int> errors;  // first words of the compile error -> count
  std::vector<std::string> false_accept_examples, false_reject_examples;
};

std::string error_key(const std::string& msg) {
  auto q = msg.find('\'');
  auto q2 = q == std::string::npos ? q : msg.find('\'', q + 1);
  if (msg.find("keyword") != std::string::npos && q2 != std::string::npos) return msg.substr(0, q2 + 1);
  return msg.substr(0, std::min<size_t>(msg.size(), 60));
}

// Steps of the search for an accepted serialisation of one instance (key orders x number spellings).
constexpr long kSearchBudget = 5'000;

// Runs one schema with its instances; returns whether every instance was classified correctly.
// `opts.whitespace` kBounded: instances are written with a space after every '{' '[' ',' ':' and
// before every '}' ']' (and "{ }" for an empty object is not tried: compact "{}" is).
bool run_schema(const Json& schema, const std::vector<std::pair<Json, bool>>& cases, const std::string& name,
                Figures& fig, const JsonGrammarOptions& opts = {}, const SchemaDocuments* documents = nullptr) {
  ++fig.schemas;
  fig.tests += static_cast<int>(cases.size());
  // A generous time budget: the figures must not depend on how loaded the test machine is.
  auto g = json_schema_grammar(schema, opts, {.max_compile_ms = 120'000}, documents);
  if (!g.ok()) {
    ++fig.errors[error_key(g.status().message())];
    if (std::getenv("KEEL_CORPUS_DETAIL")) std::printf("  REJECT %s: %s\n", name.c_str(), g.status().message().c_str());
    return false;
  }
  ++fig.compiled;
  CompiledGrammar cg(std::move(g).value());
  std::unordered_map<std::string, size_t> order;
  collect_property_order(schema, order);
  bool all = true;
  for (const auto& [data, valid] : cases) {
    const std::string text = compact(reorder_keys(data, order));
    SpellingSearch search(cg, order, kSearchBudget, opts.whitespace == WhitespacePolicy::kBounded ? " " : "");
    const bool got = search.accepts(data);
    fig.searches_exhausted += search.exhausted();
    if (got == valid) {
      ++fig.passed;
      continue;
    }
    all = false;
    if (got) {
      ++fig.false_accepts;
      if (fig.false_accept_examples.size() < 20) fig.false_accept_examples.push_back(name + ": " + text.substr(0, 300));
    } else {
      ++fig.false_rejects;
      if (std::getenv("KEEL_CORPUS_DETAIL")) std::printf("  FR %s: %s\n", name.c_str(), text.substr(0, 400).c_str());
      if (fig.false_reject_examples.size() < 12) fig.false_reject_examples.push_back(name + ": " + text.substr(0, 200));
    }
  }
  if (all) ++fig.passing;
  return all;
}

void print(const std::string& title, const Figures& f) {
  std::printf("%s: %d schemas, %d compiled (%.1f%%), %d passing (%.1f%%); %d/%d instances right, "
              "%d false accepts, %d false rejects, %d searches out of budget\n",
              title.c_str(), f.schemas, f.compiled, 100.0 * f.compiled / std::max(1, f.schemas), f.passing,
              100.0 * f.passing / std::max(1, f.schemas), f.passed, f.tests, f.false_accepts, f.false_rejects, f.searches_exhausted);
  std::vector<std::pair<int, std::string>> errs;
  for (auto& [k, v] : f.errors) errs.emplace_back(v, k);
  std::sort(errs.rbegin(), errs.rend());
  for (size_t i = 0; i < errs.size() && i < 25; ++i) std::printf("  %5d  %s\n", errs[i].first, errs[i].second.c_str());
  for (const auto& e : f.false_accept_examples) std::printf("  FALSE ACCEPT %s\n", e.c_str());
  for (const auto& e : f.false_reject_examples) std::printf("  false reject %s\n", e.c_str());
}

Json ratchet() { return load_json(keel::test::golden_dir() + "/grammar/coverage.json"); }

TEST(GrammarCorpus, MaskBenchSoundAndCovered) {
  const std::string dir = shared_data_dir() + "/maskbench-dev";
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing (the shared data folder of this workspace)";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 1000u);
  Figures fig;
  const bool partial = std::getenv("KEEL_CORPUS_ONLY") != nullptr;
  const char* only = std::getenv("KEEL_CORPUS_ONLY");  // a file name substring, to look at a few schemas
  for (const fs::path& p : files) {
    if (only && p.filename().string().find(only) == std::string::npos) continue;
    Json doc = load_json(p.string());
    std::vector<std::pair<Json, bool>> cases;
    for (const Json& t : doc["tests"]) cases.emplace_back(t["data"], t["valid"].get<bool>());
    const auto t0 = std::chrono::steady_clock::now();
    run_schema(doc["schema"], cases, p.filename().string(), fig);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0.5) std::printf("  slow: %s %.2f s\n", p.filename().c_str(), s);
  }
  print("maskbench-dev", fig);
  EXPECT_EQ(fig.false_accepts, 0);
  if (partial) return;
  const Json r = ratchet();
  EXPECT_GE(fig.compiled, r["maskbench_compiled"].get<int>());
  EXPECT_GE(fig.passing, r["maskbench_passing"].get<int>());
}

// The flexible whitespace policy over every 4th MaskBench schema: zero false accepts with spaced
// instances, and the same instances right as compact output (whitespace changes no verdict).
TEST(GrammarCorpus, MaskBenchSoundWithFlexibleWhitespace) {
  const std::string dir = shared_data_dir() + "/maskbench-dev";
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing (the shared data folder of this workspace)";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  Figures compact_fig, spaced_fig;
  const JsonGrammarOptions flexible{.whitespace = WhitespacePolicy::kBounded};
  for (size_t i = 0; i < files.size(); i += 4) {
    Json doc = load_json(files[i].string());
    std::vector<std::pair<Json, bool>> cases;
    for (const Json& t : doc["tests"]) cases.emplace_back(t["data"], t["valid"].get<bool>());
    run_schema(doc["schema"], cases, files[i].filename().string(), compact_fig);
    run_schema(doc["schema"], cases, files[i].filename().string(), spaced_fig, flexible);
  }
  print("maskbench-dev every 4th, compact", compact_fig);
  print("maskbench-dev every 4th, flexible whitespace", spaced_fig);
  EXPECT_EQ(spaced_fig.false_accepts, 0);
  EXPECT_EQ(spaced_fig.compiled, compact_fig.compiled);
  EXPECT_EQ(spaced_fig.passing, compact_fig.passing);
  EXPECT_GE(spaced_fig.passing, ratchet()["maskbench_every4_flexible_passing"].get<int>());
}

// The suite's remote documents, by the URI its README assigns them (http://localhost:1234/ + the
// path under remotes/): the caller-supplied documents keel resolves remote references against.
SchemaDocuments suite_remotes(const std::string& dir) {
  SchemaDocuments docs;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json")
      docs.emplace("http://localhost:1234/" + fs::relative(e.path(), dir).generic_string(), load_json(e.path().string()));
  return docs;
}

TEST(GrammarCorpus, JsonSchemaTestSuiteSound) {
  const std::string dir = shared_data_dir() + "/json-schema-test-suite/tests/draft2020-12";
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing (the shared data folder of this workspace)";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  const SchemaDocuments remotes = suite_remotes(shared_data_dir() + "/json-schema-test-suite/remotes");
  ASSERT_FALSE(remotes.empty());
  Figures fig;
  for (const fs::path& p : files) {
    for (const Json& group : load_json(p.string())) {
      std::vector<std::pair<Json, bool>> cases;
      for (const Json& t : group["tests"]) cases.emplace_back(t["data"], t["valid"].get<bool>());
      run_schema(group["schema"], cases, p.stem().string() + "/" + group["description"].get<std::string>(), fig, {},
                 &remotes);
    }
  }
  print("JSON-Schema-Test-Suite draft2020-12", fig);
  EXPECT_EQ(fig.false_accepts, 0);
  const Json r = ratchet();
  EXPECT_GE(fig.passed, r["suite_instances_passed"].get<int>());
  EXPECT_GE(fig.passing, r["suite_groups_passing"].get<int>());
}

}  // namespace
}  // namespace keel::grammar::test

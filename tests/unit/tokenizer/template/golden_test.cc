// Chat templates against transformers' renderer (tests/golden/templates/gen_templates.py): the real
// templates of SmolLM2 (from its GGUF), Llama 3.1/3.2/3.3, Qwen 2.5/3, Mistral Nemo/Small 3.2 and
// DeepSeek-V3.1 over a matrix of conversations, and feature snippets. Outputs must match byte for
// byte; where jinja2 fails keel must fail too, with the same raise_exception() message.
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "format/gguf.h"
#include "tokenizer/chat_template.h"

namespace keel::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

Json load_golden(const std::string& name) {
  const std::string path = test::golden_dir() + "/templates/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "missing " << path << " (python3 tests/golden/templates/gen_templates.py)";
  return Json::parse(in);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "2025-03-14T15:09:26" → the clock strftime_now() reads in the generator.
jinja::RenderOptions fixed_clock(const std::string& iso) {
  std::tm tm{};
  std::istringstream ss(iso);
  ss >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  tm.tm_isdst = -1;
  std::tm copy = tm;
  std::mktime(&copy);  // fills tm_wday / tm_yday
  tm.tm_wday = copy.tm_wday;
  tm.tm_yday = copy.tm_yday;
  jinja::RenderOptions options;
  options.now = tm;
  return options;
}

Result<std::string> template_source(const Json& spec) {
  if (spec.contains("file")) {
    const std::string path = test::llamacpp_templates_dir() + "/" + spec["file"].get<std::string>();
    if (!test::exists(path)) {
      return make_error(ErrorCode::kNotFound, "{} is missing: run scripts/fetch_test_data.sh", path);
    }
    return read_file(path);
  }
  const std::string path = test::cache_dir() + "/models/" + spec["gguf"].get<std::string>();
  if (!test::exists(path)) return make_error(ErrorCode::kNotFound, "{} is missing: run scripts/fetch_model.sh", path);
  KEEL_ASSIGN_OR_RETURN(format::GgufFile file, format::GgufFile::open(path));
  return file.get_string(spec["key"].get<std::string>());
}

void check_case(const ChatTemplate& tmpl, const Json& c, const jinja::RenderOptions& options,
                const std::string& label) {
  const Result<std::string> out = tmpl.render(c["context"], options);
  if (c.contains("output")) {
    ASSERT_TRUE(out.ok()) << label << ": " << out.status().to_string();
    const std::string expected = c["output"].get<std::string>();
    if (*out == expected) return;
    size_t at = 0;
    while (at < out->size() && at < expected.size() && (*out)[at] == expected[at]) ++at;
    const size_t from = at < 80 ? 0 : at - 80;
    ADD_FAILURE() << label << ": output differs at byte " << at << " (keel " << out->size() << " bytes, jinja2 "
                  << expected.size() << ")\n  keel:   " << Json(out->substr(from, 160)).dump()
                  << "\n  jinja2: " << Json(expected.substr(from, 160)).dump();
    return;
  }
  ASSERT_FALSE(out.ok()) << label << ": jinja2 failed with " << c["error_type"] << " (" << c["error"]
                         << ") but keel rendered:\n"
                         << *out;
  if (c["raise_exception"].get<bool>()) {
    EXPECT_NE(out.status().message().find("raise_exception: " + c["error"].get<std::string>()), std::string::npos)
        << label << ": " << out.status().message();
  }
}

TEST(ChatTemplateGolden, RealTemplatesMatchTransformers) {
  const Json golden = load_golden("templates.json");
  const jinja::RenderOptions options = fixed_clock(golden["now"].get<std::string>());
  int n_cases = 0;
  for (const Json& t : golden["templates"]) {
    const std::string name = t["name"].get<std::string>();
    const Result<std::string> source = template_source(t["source"]);
    ASSERT_TRUE(source.ok()) << name << ": " << source.status().to_string();
    const Result<ChatTemplate> tmpl = ChatTemplate::compile(*source);
    ASSERT_TRUE(tmpl.ok()) << name << ": " << tmpl.status().to_string();
    for (const Json& c : t["cases"]) {
      check_case(*tmpl, c, options, name + " " + c["name"].get<std::string>());
      ++n_cases;
    }
  }
  EXPECT_GE(n_cases, 300);
}

TEST(ChatTemplateGolden, SnippetsMatchJinja2) {
  const Json golden = load_golden("snippets.json");
  const jinja::RenderOptions options = fixed_clock(golden["now"].get<std::string>());
  for (const Json& s : golden["snippets"]) {
    const std::string label = s["name"].get<std::string>();
    const Result<ChatTemplate> tmpl = ChatTemplate::compile(s["source"].get<std::string>());
    if (!tmpl.ok()) {
      EXPECT_TRUE(s.contains("error")) << label << ": keel failed to compile: " << tmpl.status().to_string();
      continue;
    }
    check_case(*tmpl, s, options, label);
  }
}

}  // namespace
}  // namespace keel::tokenizer

// The template interpreter's pieces through ChatTemplate: errors name the construct and the line,
// unsupported syntax is refused (never rendered differently), limits stop runaway templates, and
// generators behave like jinja2's (expected values checked with jinja2 3.1 by hand).
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"

namespace keel::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

Result<std::string> render(std::string_view source, const Json& context = Json::object(),
                           const jinja::RenderOptions& options = {}) {
  KEEL_ASSIGN_OR_RETURN(ChatTemplate t, ChatTemplate::compile(source));
  return t.render(context, options);
}

std::string ok(std::string_view source, const Json& context = Json::object()) {
  auto r = render(source, context);
  EXPECT_TRUE(r.ok()) << source << ": " << r.status().to_string();
  return r.ok() ? *r : std::string();
}

Status fails(std::string_view source, const Json& context = Json::object()) {
  auto r = render(source, context);
  EXPECT_FALSE(r.ok()) << source << " rendered " << (r.ok() ? *r : "");
  return r.ok() ? Status() : r.status();
}

TEST(ChatTemplateErrors, SyntaxErrorsNameTheLine) {
  auto t = ChatTemplate::compile("line one\n{% if x %}\nline three\n{{ 1 + }}\n{% endif %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("line 4"), std::string::npos) << t.status().message();

  auto unclosed = ChatTemplate::compile("a\n\n{% for m in messages %}{{ m }}");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_NE(unclosed.status().message().find("endfor"), std::string::npos);
  EXPECT_NE(unclosed.status().message().find("line 3"), std::string::npos) << unclosed.status().message();

  for (const char* bad : {"{{ 'abc }}", "{# no end", "{% raw %}x", "{{ (1 }}", "{{ 1 ]] }}", "{% endif %}",
                          "{% for %}{% endfor %}", "{{ a.1b }}", "{% set %}"}) {
    EXPECT_FALSE(ChatTemplate::compile(bad).ok()) << bad;
  }
}

TEST(ChatTemplateErrors, UnsupportedConstructsAreNamed) {
  struct Case {
    const char* source;
    const char* names;
  };
  for (const Case& c : {Case{"a\n{% include 'x' %}", "'include'"}, Case{"{% extends 'base' %}", "'extends'"},
                        Case{"{% for x in y recursive %}{% endfor %}", "recursive"},
                        Case{"{{ x | frobnicate }}", "filter 'frobnicate'"},
                        Case{"{% for m in ms %}{{ m is frob }}{% endfor %}", "test 'frob'"},
                        Case{"{{ f(*args) }}", "*args"}}) {
    auto t = ChatTemplate::compile(c.source);
    ASSERT_FALSE(t.ok()) << c.source;
    EXPECT_EQ(t.status().code(), ErrorCode::kUnsupported) << c.source;
    EXPECT_NE(t.status().message().find(c.names), std::string::npos) << t.status().message();
  }
  // Like jinja2, an unknown filter inside an if fails only when evaluated, with its line.
  EXPECT_EQ(ok("{% if false %}{{ x | from_json }}{% endif %}ok"), "ok");
  Status s = fails("{% if true %}\n{{ x | from_json }}{% endif %}");
  EXPECT_EQ(s.code(), ErrorCode::kUnsupported);
  EXPECT_NE(s.message().find("line 2"), std::string::npos) << s.message();
  // printf-style formatting, str.format and printing a generator are refused, not approximated.
  EXPECT_EQ(fails("{{ '%s' % 1 }}").code(), ErrorCode::kUnsupported);
  EXPECT_EQ(fails("{{ '{}'.format(1) }}").code(), ErrorCode::kUnsupported);
  EXPECT_EQ(fails("{{ [1] | map('string') }}").code(), ErrorCode::kUnsupported);
  EXPECT_EQ(fails("{{ {1: 2} }}").code(), ErrorCode::kUnsupported);
}

TEST(ChatTemplateErrors, RuntimeErrorsNameTheLine) {
  Status s = fails("a\nb\n{{ messages[0].content + 1 }}", Json::parse(R"({"messages": [{"content": "x"}]})"));
  EXPECT_NE(s.message().find("line 3"), std::string::npos) << s.message();
  s = fails("\n{{ raise_exception('Roles must alternate') }}");
  EXPECT_NE(s.message().find("line 2: raise_exception: Roles must alternate"), std::string::npos) << s.message();
  s = fails("{{ x.y }}");
  EXPECT_NE(s.message().find("'x' is undefined"), std::string::npos) << s.message();
  s = fails("{{ 9223372036854775807 + 1 }}");
  EXPECT_EQ(s.code(), ErrorCode::kOutOfRange);
  EXPECT_FALSE(ChatTemplate::compile("{{ 99999999999999999999 }}").ok());
  EXPECT_FALSE(render("{}", Json::array()).ok());  // the context must be an object
}

TEST(ChatTemplateLimits, RunawayTemplatesStop) {
  jinja::RenderOptions options;
  options.limits.max_loop_iterations = 1000;
  options.limits.max_output_bytes = 4096;
  auto r = render("{% for i in range(10) %}{% for j in range(1000) %}x{% endfor %}{% endfor %}", Json::object(),
                  options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  r = render("{{ 'x' * 5000 }}", Json::object(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  r = render("{% for i in range(100) %}0123456789012345678901234567890123456789012345678901234567890{% endfor %}",
             Json::object(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  r = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", Json::object(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  r = render("{{ range(100000000000) | length }}", Json::object(), options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kResourceExhausted);
  // Deep nesting is a compile error, not a stack overflow.
  EXPECT_FALSE(ChatTemplate::compile("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").ok());
  EXPECT_FALSE(ChatTemplate::compile(std::string(3000, '-') + "{{ " + std::string(3000, '-') + "1 }}").ok());
  std::string ifs;
  for (int k = 0; k < 400; ++k) ifs += "{% if true %}";
  EXPECT_FALSE(ChatTemplate::compile(ifs).ok());
}

TEST(ChatTemplateSemantics, GeneratorsBehaveLikeJinja) {
  // Truthy even when empty, single use, no len(), not JSON.
  EXPECT_EQ(ok("{% if [1] | select('gt', 5) %}truthy{% endif %}"), "truthy");
  EXPECT_EQ(ok("{% set g = [1, 2] | map('string') %}{{ g | join }}|{{ g | join }}"), "12|");
  EXPECT_EQ(fails("{{ [1] | select | length }}").code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(render("{{ [1] | map('int') | tojson }}").ok());
  EXPECT_EQ(ok("{{ [1, 2] | map('string') | list }}"), "['1', '2']");
  EXPECT_EQ(ok("{{ none | selectattr('a') | list }}"), "[]");  // jinja2 skips falsy inputs
  // Views and ranges are reusable and have a length.
  EXPECT_EQ(ok("{% set v = d.items() %}{{ v | length }}{{ v | list | length }}{{ v }}",
               Json::parse(R"({"d": {"a": 1}})")),
            "11dict_items([('a', 1)])");
  EXPECT_EQ(ok("{% set r = range(3) %}{{ r }} {{ r | length }} {{ r[-1] }} {{ r | list }} {{ r | list }}"),
            "range(0, 3) 3 2 [0, 1, 2] [0, 1, 2]");
  EXPECT_EQ(ok("{{ 2 in [1, 2] | map('int') }}"), "True");
}

TEST(ChatTemplateSemantics, ContextKeyOrderIsKept) {
  const Json ctx = Json::parse(R"({"d": {"zeta": 1, "alpha": 2}})");
  EXPECT_EQ(ok("{{ d | tojson }} {% for k in d %}{{ k }}{% endfor %}", ctx), "{\"zeta\": 1, \"alpha\": 2} zetaalpha");
  // From nlohmann::json (sorted objects) the order is that container's.
  auto t = ChatTemplate::compile("{{ d | tojson }}");
  ASSERT_TRUE(t.ok());
  auto r = t->render(nlohmann::json::parse(R"({"d": {"zeta": 1, "alpha": 2}})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "{\"alpha\": 2, \"zeta\": 1}");
}

TEST(ChatTemplateSemantics, FixedClockForStrftime) {
  jinja::RenderOptions options;
  std::tm tm{};
  tm.tm_year = 124;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  options.now = tm;
  auto r = render("{{ strftime_now('%Y-%m-%d') }}", Json::object(), options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "2024-07-26");
}

TEST(ChatTemplateSemantics, CompiledTemplateRendersFromManyThreads) {
  auto t = ChatTemplate::compile(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ m.content }}{% endfor %}"
      "{{ ns.n }}");
  ASSERT_TRUE(t.ok());
  std::vector<std::thread> threads;
  std::vector<std::string> outs(8);
  for (int k = 0; k < 8; ++k) {
    threads.emplace_back([&, k] {
      Json ctx = {{"messages", Json::array()}};
      for (int m = 0; m <= k; ++m) ctx["messages"].push_back({{"content", std::to_string(m)}});
      for (int rep = 0; rep < 50; ++rep) {
        auto r = t->render(ctx);
        outs[k] = r.ok() ? *r : r.status().to_string();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int k = 0; k < 8; ++k) {
    std::string want;
    for (int m = 0; m <= k; ++m) want += std::to_string(m);
    EXPECT_EQ(outs[k], want + std::to_string(k + 1));
  }
}

}  // namespace
}  // namespace keel::tokenizer

// Renders a Program (ast.h) against a context: statements in evaluator.cc, expressions in
// eval_expr.cc. Scoping follows jinja2: `set` inside a for loop is local to one iteration, `if` opens
// no scope, a macro sees its arguments and the template's top level. Every render is bounded (output
// bytes, loop iterations, bytes built by string operations, macro call depth): past a limit the
// render fails with kResourceExhausted. One Interpreter per render; not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/template/ast.h"
#include "tokenizer/template/render_options.h"
#include "tokenizer/template/value.h"

namespace keel::tokenizer::jinja {

class Interpreter {
 public:
  Interpreter(const RenderOptions& options, Dict context);

  Result<std::string> render(const Program& program);

  // For filters, tests, methods and globals.
  const RenderOptions& options() const { return options_; }
  Result<Value> call(const Value& callee, const CallArgs& args, int line);
  // Charges `n_bytes` of string building against the limits (each string ≤ max_output_bytes).
  Status charge_string(size_t n_bytes);
  // Charges `n` loop iterations or built list elements.
  Status charge_iterations(uint64_t n);
  // Attribute / item access with jinja2's fallbacks (eval_expr.cc).
  Result<Value> get_attr(const Value& obj, std::string_view name, int line);
  Result<Value> get_item(const Value& obj, const Value& key, int line);
  // Python iteration: items of a list/tuple, code points of a string, keys of a dict, nothing for
  // Undefined; anything else is a type error.
  Result<List> iterate(const Value& v, int line);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct Frame {
    Dict vars;
    bool barrier = false;  // a macro frame: lookups continue at the top level
  };

  // Statements (evaluator.cc).
  Status exec_body(const Body& body, std::string& out);
  Status exec(const Node& node, std::string& out);
  Status exec_if(const Node& node, std::string& out);
  Status exec_for(const Node& node, std::string& out);
  Status exec_set(const Node& node);
  Status exec_set_block(const Node& node);
  Status exec_call_block(const Node& node, std::string& out);
  Status exec_filter_block(const Node& node, std::string& out);
  Value make_macro(const Node& node);
  Result<Value> call_macro(const Node& node, const CallArgs& args, int line, bool barrier = true);
  Status append_output(std::string& out, std::string_view text);
  Status assign_targets(const std::vector<std::string>& targets, const Value& value, int line);

  // Expressions (eval_expr.cc).
 public:
  Result<Value> eval(const Expr& e);

 private:
  Value lookup(const std::string& name) const;
  void set_var(std::string name, Value value);
  Result<Value> eval_binary(const Expr& e);
  Result<Value> eval_compare(const Expr& e);
  Result<Value> eval_call(const Expr& e);
  Result<Value> eval_filter(const Expr& e);
  Result<Value> eval_test(const Expr& e);
  Result<Value> eval_slice(const Expr& e);
  Result<CallArgs> eval_args(const Expr& e, size_t first_child);

  RenderOptions options_;
  std::vector<Frame> frames_;
  Dict globals_;
  Flow flow_ = Flow::kNormal;
  uint64_t n_iterations_ = 0;
  uint64_t n_string_bytes_ = 0;
  int call_depth_ = 0;
  const Value* filter_block_input_ = nullptr;  // the body text a filter/set block pipes into its filters
};

// "line N: <message>" with the code kept.
Status at_line(const Status& s, int line);

}  // namespace keel::tokenizer::jinja

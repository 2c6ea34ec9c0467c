#include "tokenizer/template/evaluator.h"

#include <utility>

#include "tokenizer/template/filters.h"
#include "tokenizer/template/globals.h"

namespace keel::tokenizer::jinja {

Status at_line(const Status& s, int line) {
  if (s.ok() || s.message().starts_with("line ")) return s;
  return Status(s.code(), fmt::format("line {}: {}", line, s.message()));
}

Interpreter::Interpreter(const RenderOptions& options, Dict context) : options_(options), globals_(make_globals()) {
  frames_.push_back(Frame{std::move(context), false});
}

Result<std::string> Interpreter::render(const Program& program) {
  std::string out;
  KEEL_RETURN_IF_ERROR(exec_body(program.body, out));
  return out;
}

Status Interpreter::charge_string(size_t n_bytes) {
  if (n_bytes > options_.limits.max_output_bytes) {
    return make_error(ErrorCode::kResourceExhausted, "a string would exceed {} bytes (render limit)",
                      options_.limits.max_output_bytes);
  }
  n_string_bytes_ += n_bytes;
  if (n_string_bytes_ > options_.limits.max_string_work_bytes) {
    return make_error(ErrorCode::kResourceExhausted, "string operations exceeded {} bytes (render limit)",
                      options_.limits.max_string_work_bytes);
  }
  return Status::ok_status();
}

Status Interpreter::charge_iterations(uint64_t n) {
  n_iterations_ += n;
  if (n_iterations_ > options_.limits.max_loop_iterations) {
    return make_error(ErrorCode::kResourceExhausted, "more than {} loop iterations (render limit)",
                      options_.limits.max_loop_iterations);
  }
  return Status::ok_status();
}

Status Interpreter::append_output(std::string& out, std::string_view text) {
  KEEL_RETURN_IF_ERROR(charge_string(out.size() + text.size() > options_.limits.max_output_bytes
                                         ? out.size() + text.size()
                                         : text.size()));
  out += text;
  return Status::ok_status();
}

Status Interpreter::exec_body(const Body& body, std::string& out) {
  for (const NodePtr& node : body) {
    KEEL_RETURN_IF_ERROR(exec(*node, out));
    if (flow_ != Flow::kNormal) break;
  }
  return Status::ok_status();
}

Status Interpreter::exec(const Node& node, std::string& out) {
  switch (node.kind) {
    case Node::Kind::kText: return append_output(out, node.text);
    case Node::Kind::kOutput: {
      KEEL_ASSIGN_OR_RETURN(Value v, eval(*node.expr));
      if (v.is_string()) return append_output(out, v.as_string());
      auto s = to_str(v);
      if (!s.ok()) return at_line(s.status(), node.line);
      return append_output(out, *s);
    }
    case Node::Kind::kIf: return exec_if(node, out);
    case Node::Kind::kFor: return exec_for(node, out);
    case Node::Kind::kSet: return exec_set(node);
    case Node::Kind::kSetBlock: return exec_set_block(node);
    case Node::Kind::kMacro:
      set_var(node.name, make_macro(node));
      return Status::ok_status();
    case Node::Kind::kCallBlock: return exec_call_block(node, out);
    case Node::Kind::kFilterBlock: return exec_filter_block(node, out);
    case Node::Kind::kBreak:
      flow_ = Flow::kBreak;
      return Status::ok_status();
    case Node::Kind::kContinue:
      flow_ = Flow::kContinue;
      return Status::ok_status();
    case Node::Kind::kScope: return exec_body(node.body, out);
  }
  return Status::ok_status();
}

Status Interpreter::exec_if(const Node& node, std::string& out) {
  for (const auto& [cond, body] : node.branches) {
    if (cond) {
      KEEL_ASSIGN_OR_RETURN(Value v, eval(*cond));
      if (!v.truthy()) continue;
    }
    return exec_body(body, out);
  }
  return Status::ok_status();
}

Status Interpreter::assign_targets(const std::vector<std::string>& targets, const Value& value, int line) {
  if (targets.size() == 1) {
    set_var(targets[0], value);
    return Status::ok_status();
  }
  KEEL_ASSIGN_OR_RETURN(List items, iterate(value, line));
  if (items.size() != targets.size()) {
    return make_error(ErrorCode::kInvalidArgument, "line {}: cannot unpack {} values into {} names", line,
                      items.size(), targets.size());
  }
  for (size_t k = 0; k < targets.size(); ++k) set_var(targets[k], items[k]);
  return Status::ok_status();
}

Status Interpreter::exec_for(const Node& node, std::string& out) {
  KEEL_ASSIGN_OR_RETURN(Value iterable, eval(*node.expr));
  KEEL_ASSIGN_OR_RETURN(List items, iterate(iterable, node.line));
  if (node.cond) {  // `for x in xs if cond`: filtered before loop.length/last are known
    List kept;
    for (const Value& item : items) {
      KEEL_RETURN_IF_ERROR(at_line(charge_iterations(1), node.line));
      frames_.push_back(Frame{});
      Status s = assign_targets(node.targets, item, node.line);
      Result<Value> c = s.ok() ? eval(*node.cond) : Result<Value>(s);
      frames_.pop_back();
      if (!c.ok()) return c.status();
      if (c->truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  const auto n = static_cast<int64_t>(items.size());
  for (int64_t k = 0; k < n; ++k) {
    KEEL_RETURN_IF_ERROR(at_line(charge_iterations(1), node.line));
    auto loop = std::make_shared<Object>();
    loop->type = Object::Type::kLoop;
    Dict& a = loop->attrs;
    a.items = {{"index", Value::integer(k + 1)},         {"index0", Value::integer(k)},
               {"revindex", Value::integer(n - k)},      {"revindex0", Value::integer(n - k - 1)},
               {"first", Value::boolean(k == 0)},        {"last", Value::boolean(k == n - 1)},
               {"length", Value::integer(n)},            {"depth", Value::integer(1)},
               {"depth0", Value::integer(0)},
               {"previtem", k > 0 ? items[k - 1] : Value::undefined("there is no previous item")},
               {"nextitem", k + 1 < n ? items[k + 1] : Value::undefined("there is no next item")}};
    frames_.push_back(Frame{});
    Status s = assign_targets(node.targets, items[k], node.line);
    if (s.ok()) {
      set_var("loop", Value::object(loop));
      s = exec_body(node.body, out);
    }
    frames_.pop_back();
    KEEL_RETURN_IF_ERROR(s);
    if (flow_ == Flow::kBreak) {
      flow_ = Flow::kNormal;
      break;
    }
    flow_ = Flow::kNormal;
  }
  if (n == 0 && !node.else_body.empty()) return exec_body(node.else_body, out);
  return Status::ok_status();
}

Status Interpreter::exec_set(const Node& node) {
  KEEL_ASSIGN_OR_RETURN(Value v, eval(*node.expr));
  if (node.attr.empty()) return assign_targets(node.targets, v, node.line);
  const Value target = lookup(node.targets[0]);
  if (target.kind() != Kind::kObject || target.as_object().type != Object::Type::kNamespace) {
    return make_error(ErrorCode::kInvalidArgument, "line {}: cannot assign attribute on non-namespace object '{}'",
                      node.line, node.targets[0]);
  }
  if (node.attr.starts_with("_")) {
    return make_error(ErrorCode::kInvalidArgument,
                      "line {}: chat templates cannot store underscore-prefixed attributes on a namespace ('{}')",
                      node.line, node.attr);
  }
  target.as_object().attrs.set(node.attr, std::move(v));
  return Status::ok_status();
}

Status Interpreter::exec_set_block(const Node& node) {
  std::string body;
  frames_.push_back(Frame{});
  Status s = exec_body(node.body, body);
  frames_.pop_back();
  KEEL_RETURN_IF_ERROR(s);
  Value v = Value::string(std::move(body));
  if (node.expr) {
    filter_block_input_ = &v;
    auto filtered = eval(*node.expr);
    filter_block_input_ = nullptr;
    if (!filtered.ok()) return filtered.status();
    v = std::move(filtered).value();
  }
  set_var(node.targets[0], std::move(v));
  return Status::ok_status();
}

Status Interpreter::exec_filter_block(const Node& node, std::string& out) {
  std::string body;
  frames_.push_back(Frame{});
  Status s = exec_body(node.body, body);
  frames_.pop_back();
  KEEL_RETURN_IF_ERROR(s);
  const Value input = Value::string(std::move(body));
  filter_block_input_ = &input;
  auto filtered = eval(*node.expr);
  filter_block_input_ = nullptr;
  if (!filtered.ok()) return filtered.status();
  KEEL_ASSIGN_OR_RETURN(std::string text, to_str(*filtered));
  return append_output(out, text);
}

Value Interpreter::make_macro(const Node& node) {
  const Node* def = &node;
  return Value::callable(node.name, [def](Interpreter& in, const CallArgs& args) -> Result<Value> {
    return in.call_macro(*def, args, def->line);
  });
}

Result<Value> Interpreter::call_macro(const Node& node, const CallArgs& args, int line, bool barrier) {
  if (call_depth_ >= options_.limits.max_call_depth) {
    return make_error(ErrorCode::kResourceExhausted, "line {}: macro calls nested more than {} deep", line,
                      options_.limits.max_call_depth);
  }
  if (args.positional.size() > node.params.size()) {
    return make_error(ErrorCode::kInvalidArgument, "line {}: macro '{}' takes not more than {} argument(s)", line,
                      node.name, node.params.size());
  }
  Frame frame{Dict{}, barrier};
  for (const auto& [name, value] : args.keyword) {
    bool known = name == "caller";
    for (const std::string& p : node.params) known = known || p == name;
    if (!known) {
      return make_error(ErrorCode::kInvalidArgument, "line {}: macro '{}' takes no keyword argument '{}'", line,
                        node.name, name);
    }
  }
  frames_.push_back(std::move(frame));
  ++call_depth_;
  Status s;
  for (size_t k = 0; k < node.params.size() && s.ok(); ++k) {
    const std::string& p = node.params[k];
    if (k < args.positional.size()) {
      set_var(p, args.positional[k]);
    } else if (const Value* kw = args.find_keyword(p)) {
      set_var(p, *kw);
    } else if (node.defaults[k]) {
      auto d = eval(*node.defaults[k]);
      if (d.ok()) {
        set_var(p, std::move(d).value());
      } else {
        s = d.status();
      }
    } else {
      set_var(p, Value::undefined(fmt::format("parameter '{}' was not provided", p)));
    }
  }
  if (const Value* caller = args.find_keyword("caller")) set_var("caller", *caller);
  std::string out;
  if (s.ok()) s = exec_body(node.body, out);
  flow_ = Flow::kNormal;
  --call_depth_;
  frames_.pop_back();
  KEEL_RETURN_IF_ERROR(s);
  return Value::string(std::move(out));
}

Status Interpreter::exec_call_block(const Node& node, std::string& out) {
  const Node* def = &node;
  // `caller()` renders the block's body in the scope the call block stands in.
  auto closure = std::make_shared<const std::vector<Frame>>(frames_);
  Value caller = Value::callable("caller", [def, closure](Interpreter& in, const CallArgs& args) -> Result<Value> {
    std::vector<Frame> saved = std::exchange(in.frames_, *closure);
    auto result = in.call_macro(*def, args, def->line, /*barrier=*/false);
    in.frames_ = std::move(saved);
    return result;
  });
  const Expr& call = *node.expr;
  KEEL_ASSIGN_OR_RETURN(Value callee, eval(*call.children[0]));
  KEEL_ASSIGN_OR_RETURN(CallArgs args, eval_args(call, 1));
  args.keyword.emplace_back("caller", std::move(caller));
  KEEL_ASSIGN_OR_RETURN(Value result, this->call(callee, args, node.line));
  KEEL_ASSIGN_OR_RETURN(std::string text, to_str(result));
  return append_output(out, text);
}

}  // namespace keel::tokenizer::jinja

// The syntax tree of a compiled template: expressions (Expr) and statements (Node), each with the
// source line it came from for error messages. Built by the parser, read by the evaluator; immutable
// after compile, so one Program may be rendered by many threads at once.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/template/value.h"

namespace keel::tokenizer::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,   // value
    kName,      // name
    kList,      // children = items
    kTuple,     // children = items
    kDict,      // children = key0, value0, key1, value1, ...
    kAttr,      // children[0].name
    kItem,      // children[0][children[1]]
    kSlice,     // children[0][children[1]:children[2]:children[3]] (null where omitted)
    kCall,      // children[0](children[1..], kwargs)
    kFilter,    // children[0] | name(children[1..], kwargs); children[0] null in a filter block
    kTest,      // children[0] is [not] name(children[1..]); negated
    kNeg,       // -children[0]
    kPos,       // +children[0]
    kNot,       // not children[0]
    kBinary,    // children[0] <name> children[1]: + - * / // % ** ~
    kAnd,       // children[0] and children[1]
    kOr,        // children[0] or children[1]
    kCompare,   // children[0] ops[0] children[1] ops[1] children[2] ... (== != < <= > >= in notin)
    kCond,      // children[0] if children[1] else children[2] (null: undefined)
  };
  Kind kind = Kind::kLiteral;
  int line = 0;
  Value value;
  std::string name;
  bool negated = false;
  bool unknown = false;  // a filter/test keel lacks: an error where it is evaluated (jinja2 defers it too)
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // branches (cond, body); a final else has a null cond
    kFor,          // for targets in expr [if cond] body [else else_body]
    kSet,          // set targets = expr, or set targets[0].attr = expr (attr non-empty)
    kSetBlock,     // set targets[0] [| filter] body endset
    kMacro,        // macro name(params = defaults) body
    kCallBlock,    // call(params) expr body: body becomes `caller`
    kFilterBlock,  // filter expr(kFilter chain with a null innermost object) body
    kBreak,
    kContinue,
    kScope,        // body rendered in place (transformers' {% generation %})
  };
  Kind kind = Kind::kText;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;                                   // for ... if cond
  std::vector<std::pair<ExprPtr, Body>> branches;  // if/elif/else
  std::vector<std::string> targets;
  std::string attr;
  std::string name;                               // macro name
  std::vector<std::string> params;                // macro / call block parameters
  std::vector<ExprPtr> defaults;                  // per parameter, null when none
  Body body;
  Body else_body;
};

struct Program {
  Body body;
};

}  // namespace keel::tokenizer::jinja

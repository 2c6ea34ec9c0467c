#include "tokenizer/template/value.h"

#include <cmath>

#include "tokenizer/template/py_text.h"

namespace keel::tokenizer::jinja {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

Value* Dict::find(std::string_view key) {
  for (auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  if (Value* existing = find(key)) {
    *existing = std::move(value);
  } else {
    items.emplace_back(std::move(key), std::move(value));
  }
}

const Value* CallArgs::find_keyword(std::string_view name) const {
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}

Value Value::number(double d) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.d_ = d;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.s_ = std::move(s);
  return v;
}

Value Value::safe_string(std::string s) {
  Value v = string(std::move(s));
  v.b_ = true;
  return v;
}

Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}

Value Value::tuple(List items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}

Value Value::dict(Dict d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<const Dict>(std::move(d));
  return v;
}

Value Value::object(std::shared_ptr<Object> o) {
  Value v;
  v.kind_ = Kind::kObject;
  v.object_ = std::move(o);
  return v;
}

Value Value::callable(std::string name, std::function<Result<Value>(Interpreter&, const CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.callable_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

Value Value::iterator(IterState state) {
  Value v;
  v.kind_ = Kind::kIterator;
  v.iter_ = std::make_shared<IterState>(std::move(state));
  return v;
}

Value Value::generator(List items) {
  IterState state;
  state.items = std::move(items);
  state.type_name = "generator";
  return iterator(std::move(state));
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return d_ != 0;
    case Kind::kString: return !s_.empty();
    case Kind::kList:
    case Kind::kTuple: return !list_->empty();
    case Kind::kDict: return !dict_->items.empty();
    case Kind::kObject:
    case Kind::kCallable: return true;
    case Kind::kIterator: return !iter_->has_len || iter_->pos < iter_->items.size();
  }
  return false;
}

bool Value::equals(const Value& other) const {
  if (is_numeric() && other.is_numeric()) {
    if (kind_ == Kind::kFloat || other.kind_ == Kind::kFloat) return as_double() == other.as_double();
    return as_int() == other.as_int();
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return s_ == other.s_;
    case Kind::kList:
    case Kind::kTuple: {
      if (list_->size() != other.list_->size()) return false;
      for (size_t k = 0; k < list_->size(); ++k) {
        if (!(*list_)[k].equals((*other.list_)[k])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (dict_->items.size() != other.dict_->items.size()) return false;
      for (const auto& [key, value] : dict_->items) {
        const Value* o = other.dict_->find(key);
        if (o == nullptr || !value.equals(*o)) return false;
      }
      return true;
    }
    case Kind::kObject: return object_ == other.object_;
    case Kind::kCallable: return callable_ == other.callable_;
    case Kind::kIterator: return iter_ == other.iter_;
    default: return false;
  }
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kTuple: return "tuple";
    case Kind::kDict: return "dict";
    case Kind::kObject: return object_->type == Object::Type::kLoop ? "LoopContext" : "Namespace";
    case Kind::kCallable: return "function";
    case Kind::kIterator: return iter_->type_name;
  }
  return "?";
}

namespace {

Result<std::string> container_repr(const Value& v) {
  std::string out;
  if (v.kind() == Kind::kDict) {
    out = "{";
    bool first = true;
    for (const auto& [key, item] : v.as_dict().items) {
      if (!first) out += ", ";
      first = false;
      out += py_str_repr(key);
      out += ": ";
      KEEL_ASSIGN_OR_RETURN(std::string r, to_repr(item));
      out += r;
    }
    return out + "}";
  }
  const bool tuple = v.kind() == Kind::kTuple;
  out = tuple ? "(" : "[";
  const List& items = v.as_list();
  for (size_t k = 0; k < items.size(); ++k) {
    if (k > 0) out += ", ";
    KEEL_ASSIGN_OR_RETURN(std::string r, to_repr(items[k]));
    out += r;
  }
  if (tuple && items.size() == 1) out += ",";
  return out + (tuple ? ")" : "]");
}

}  // namespace

Result<std::string> to_str(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return std::string();
    case Kind::kNone: return std::string("None");
    case Kind::kBool: return std::string(v.as_bool() ? "True" : "False");
    case Kind::kInt: return std::to_string(v.as_int());
    case Kind::kFloat: return py_float_repr(v.as_double());
    case Kind::kString: return v.as_string();
    case Kind::kList:
    case Kind::kTuple:
    case Kind::kDict: return container_repr(v);
    case Kind::kObject: {
      const Object& o = v.as_object();
      if (o.type == Object::Type::kLoop) {
        const Value* index = o.attrs.find("index");
        const Value* length = o.attrs.find("length");
        return fmt::format("<LoopContext {}/{}>", index ? index->as_int() : 0, length ? length->as_int() : 0);
      }
      KEEL_ASSIGN_OR_RETURN(std::string attrs, container_repr(Value::dict(o.attrs)));
      return "<Namespace " + attrs + ">";
    }
    case Kind::kCallable:
      return make_error(ErrorCode::kUnsupported, "cannot print the callable '{}'", v.as_callable().name);
    case Kind::kIterator: {
      const IterState& it = v.as_iter();
      if (!it.repr.empty()) return it.repr;
      if (it.type_name.starts_with("dict_")) {
        KEEL_ASSIGN_OR_RETURN(std::string items, container_repr(Value::list(it.items)));
        return it.type_name + "(" + items + ")";
      }
      return make_error(ErrorCode::kUnsupported, "cannot print a {} object (Python prints its address)",
                        it.type_name);
    }
  }
  return std::string();
}

Result<std::string> to_repr(const Value& v) {
  if (v.is_markup()) return "Markup(" + py_str_repr(v.as_string()) + ")";
  if (v.kind() == Kind::kString) return py_str_repr(v.as_string());
  if (v.is_undefined()) return std::string("Undefined");
  return to_str(v);
}

Result<bool> less_than(const Value& a, const Value& b) {
  if (a.is_numeric() && b.is_numeric()) {
    if (a.kind() == Kind::kFloat || b.kind() == Kind::kFloat) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.kind() == b.kind() && a.is_sequence()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (size_t k = 0; k < x.size() && k < y.size(); ++k) {
      if (x[k].equals(y[k])) continue;
      return less_than(x[k], y[k]);
    }
    return x.size() < y.size();
  }
  return make_error(ErrorCode::kInvalidArgument, "'<' not supported between instances of '{}' and '{}'",
                    a.type_name(), b.type_name());
}

Result<Value> from_json(const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null:
    case T::discarded: return Value::none();
    case T::boolean: return Value::boolean(j.get<bool>());
    case T::number_integer: return Value::integer(j.get<int64_t>());
    case T::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) {
        return make_error(ErrorCode::kUnsupported, "context integer {} does not fit in 64 bits", u);
      }
      return Value::integer(static_cast<int64_t>(u));
    }
    case T::number_float: return Value::number(j.get<double>());
    case T::string: return Value::string(j.get<std::string>());
    case T::array: {
      List items;
      items.reserve(j.size());
      for (const auto& item : j) {
        KEEL_ASSIGN_OR_RETURN(Value v, from_json(item));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items));
    }
    case T::object: {
      Dict d;
      d.items.reserve(j.size());
      for (const auto& [key, item] : j.items()) {
        KEEL_ASSIGN_OR_RETURN(Value v, from_json(item));
        d.items.emplace_back(key, std::move(v));
      }
      return Value::dict(std::move(d));
    }
    case T::binary: break;
  }
  return make_error(ErrorCode::kUnsupported, "binary values in the template context");
}

}  // namespace keel::tokenizer::jinja

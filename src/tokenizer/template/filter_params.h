// Internal to the filters: how a filter binds its arguments, and the sequence filters' entry point
// (filters_sequence.cc). Not part of the template engine's interface (filters.h is).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/template/value.h"

namespace keel::tokenizer::jinja::filter_detail {

// Positional-or-keyword parameters of one filter, as Python binds them.
class Params {
 public:
  Params(const CallArgs& args, std::string_view filter, std::vector<std::string_view> names)
      : args_(args), filter_(filter), names_(std::move(names)) {}

  Status check() const {
    if (args_.positional.size() > names_.size()) {
      return make_error(ErrorCode::kInvalidArgument, "filter '{}' takes at most {} argument(s)", filter_,
                        names_.size());
    }
    for (const auto& [name, value] : args_.keyword) {
      if (std::find(names_.begin(), names_.end(), name) == names_.end()) {
        return make_error(ErrorCode::kInvalidArgument, "filter '{}' got an unexpected keyword argument '{}'",
                          filter_, name);
      }
    }
    return Status::ok_status();
  }

  const Value* get(size_t i) const {
    if (i < args_.positional.size()) return &args_.positional[i];
    return args_.find_keyword(names_[i]);
  }

  Result<std::string> str(size_t i, std::string dflt) const {
    const Value* v = get(i);
    if (v == nullptr) return dflt;
    return to_str(*v);
  }

  bool flag(size_t i, bool dflt) const {
    const Value* v = get(i);
    return v == nullptr ? dflt : v->truthy();
  }

 private:
  const CallArgs& args_;
  std::string_view filter_;
  std::vector<std::string_view> names_;
};

// Binds `args` to the filter's parameter `names` and checks them (count, unknown keywords).
Result<Params> bind(const CallArgs& args, std::string_view filter, std::vector<std::string_view> names);

// jinja2's make_attrgetter: "a.b.0" walks items/attributes.
Result<Value> get_path(Interpreter& in, const Value& item, const std::string& path, int line);

// items, list, first, last, reverse, select, reject, selectattr, rejectattr, map, dictsort, sort, unique,
// min, max.
Result<Value> apply_sequence_filter(Interpreter& in, std::string_view name, const Value& v, const CallArgs& args,
                                    int line);

}  // namespace keel::tokenizer::jinja::filter_detail

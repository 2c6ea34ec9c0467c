// Names every template sees besides its context: jinja2's range, namespace and dict, and the
// functions transformers adds, raise_exception(message) and strftime_now(format). (jinja2's cycler,
// joiner and lipsum are not provided: calling them is an undefined-callable error.) Used by the evaluator.
#pragma once

#include "tokenizer/template/value.h"

namespace keel::tokenizer::jinja {

Dict make_globals();

}  // namespace keel::tokenizer::jinja

// Reference resolution for the JSON Schema compiler: before compiling, every `$ref` (and each
// `$dynamicRef` whose target is static) is rewritten into a JSON pointer from the document root, so
// the compiler only ever follows '#/...'. Resolution follows RFC 3986 against the base URI that
// `$id`s establish (JSON Schema 2020-12 §8.2): `$id` resources, `$anchor` and `$dynamicAnchor` names,
// JSON-pointer fragments relative to a resource. Documents the caller supplies (SchemaDocuments, by
// URI) are embedded under the internal keyword `$keelDocuments` and resolved the same way; keel never
// fetches anything. A reference that names nothing known is a kUnsupported error naming '$ref'.
#include <map>
#include <set>

#include "grammar/schema_compiler.h"

namespace keel::grammar::detail {
namespace {

struct Uri {
  std::string scheme, authority, path, query, fragment;
  bool has_scheme = false, has_authority = false, has_query = false, has_fragment = false;
};

Uri parse_uri(const std::string& s) {
  Uri u;
  size_t i = 0;
  const size_t colon = s.find(':');
  if (colon != std::string::npos && colon > 0 && s.find_first_of("/?#") > colon &&
      std::isalpha(static_cast<unsigned char>(s[0]))) {
    u.has_scheme = true;
    u.scheme = s.substr(0, colon);
    i = colon + 1;
  }
  if (s.compare(i, 2, "//") == 0) {
    const size_t end = s.find_first_of("/?#", i + 2);
    u.has_authority = true;
    u.authority = s.substr(i + 2, end == std::string::npos ? std::string::npos : end - i - 2);
    i = end == std::string::npos ? s.size() : end;
  }
  const size_t path_end = std::min(s.find_first_of("?#", i), s.size());
  u.path = s.substr(i, path_end - i);
  i = path_end;
  if (i < s.size() && s[i] == '?') {
    const size_t end = std::min(s.find('#', i), s.size());
    u.has_query = true;
    u.query = s.substr(i + 1, end - i - 1);
    i = end;
  }
  if (i < s.size() && s[i] == '#') {
    u.has_fragment = true;
    u.fragment = s.substr(i + 1);
  }
  return u;
}

std::string remove_dot_segments(std::string in) {
  std::string out;
  while (!in.empty()) {
    if (in.rfind("../", 0) == 0) {
      in.erase(0, 3);
    } else if (in.rfind("./", 0) == 0) {
      in.erase(0, 2);
    } else if (in.rfind("/./", 0) == 0) {
      in.erase(0, 2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.rfind("/../", 0) == 0 || in == "/..") {
      in = in == "/.." ? "/" : in.substr(3);
      const size_t cut = out.rfind('/');
      out.erase(cut == std::string::npos ? 0 : cut);
    } else if (in == "." || in == "..") {
      in.clear();
    } else {
      const size_t next = in.find('/', in[0] == '/' ? 1 : 0);
      out += in.substr(0, next);
      in.erase(0, next == std::string::npos ? in.size() : next);
    }
  }
  return out;
}

std::string to_string(const Uri& u, bool with_fragment) {
  std::string out;
  if (u.has_scheme) out += u.scheme + ":";
  if (u.has_authority) out += "//" + u.authority;
  out += u.path;
  if (u.has_query) out += "?" + u.query;
  if (with_fragment && u.has_fragment) out += "#" + u.fragment;
  return out;
}

// RFC 3986 §5.2.2 (strict).
Uri resolve_uri(const std::string& base, const std::string& ref) {
  const Uri b = parse_uri(base), r = parse_uri(ref);
  Uri t;
  if (r.has_scheme) {
    t = r;
    t.path = remove_dot_segments(r.path);
    return t;
  }
  t.has_scheme = b.has_scheme;
  t.scheme = b.scheme;
  t.has_fragment = r.has_fragment;
  t.fragment = r.fragment;
  if (r.has_authority) {
    t.has_authority = true;
    t.authority = r.authority;
    t.path = remove_dot_segments(r.path);
    t.has_query = r.has_query;
    t.query = r.query;
    return t;
  }
  t.has_authority = b.has_authority;
  t.authority = b.authority;
  if (r.path.empty()) {
    t.path = b.path;
    t.has_query = r.has_query || b.has_query;
    t.query = r.has_query ? r.query : b.query;
    return t;
  }
  if (r.path[0] == '/') {
    t.path = remove_dot_segments(r.path);
  } else if (b.has_authority && b.path.empty()) {
    t.path = remove_dot_segments("/" + r.path);
  } else {
    const size_t slash = b.path.rfind('/');
    t.path = remove_dot_segments((slash == std::string::npos ? "" : b.path.substr(0, slash + 1)) + r.path);
  }
  t.has_query = r.has_query;
  t.query = r.query;
  return t;
}

// JSON pointer text usable inside a '#...' reference (resolve_pointer percent-decodes it).
std::string pointer_fragment(const std::string& pointer) {
  std::string out;
  for (char c : pointer) out += c == '%' ? std::string("%25") : std::string(1, c);
  return out;
}

bool is_schema(const Json& v) { return v.is_object() || v.is_boolean(); }

class RefResolver {
 public:
  RefResolver(Json& doc, const SchemaDocuments* docs) : doc_(doc), docs_(docs) {
    // Draft-03/04 spell $id as "id" (in later drafts "id" is an unknown keyword, so data).
    if (doc.is_object() && doc.contains("$schema") && doc["$schema"].is_string()) {
      const std::string meta = doc["$schema"].get<std::string>();
      legacy_id_ = meta.find("draft-04") != std::string::npos || meta.find("draft-03") != std::string::npos;
    }
  }

  Status run() {
    walk(doc_, "", "");
    // Resolving can embed supplied documents, whose references are then resolved in turn; every
    // target is known (and every dynamic anchor seen) before anything is rewritten.
    std::vector<std::string> to;
    for (size_t i = 0; i < refs_.size(); ++i) {
      const Json& s = doc_[Json::json_pointer(refs_[i].pointer)];
      const std::string ref = s[refs_[i].keyword].get<std::string>();
      KEEL_ASSIGN_OR_RETURN(std::string t, target(refs_[i], ref));
      to.push_back(std::move(t));
    }
    for (size_t i = 0; i < refs_.size(); ++i) KEEL_RETURN_IF_ERROR(rewrite(refs_[i], to[i]));
    return {};
  }

 private:
  struct Ref {
    std::string pointer, base, keyword;
  };

  void walk(const Json& s, const std::string& ptr, std::string base) {
    if (!s.is_object()) return;
    const char* id_key = legacy_id_ && !s.contains("$id") ? "id" : "$id";
    if (s.contains(id_key) && s[id_key].is_string()) {
      const std::string id = s[id_key].get<std::string>();
      if (!id.empty() && id[0] == '#') {  // draft-06/07 plain-name $id: an anchor
        anchors_.try_emplace(to_string(resolve_uri(base, ""), false) + id, ptr);
      } else {
        base = to_string(resolve_uri(base, id), false);
        resources_.try_emplace(base, ptr);
      }
    }
    for (const char* k : {"$anchor", "$dynamicAnchor"}) {
      if (!s.contains(k) || !s[k].is_string()) continue;
      const std::string name = to_string(resolve_uri(base, ""), false) + "#" + s[k].get<std::string>();
      anchors_.try_emplace(name, ptr);
      if (std::string_view(k) == "$dynamicAnchor") dynamic_[s[k].get<std::string>()].insert(name);
    }
    for (const char* k : {"$ref", "$dynamicRef"})
      if (s.contains(k) && s[k].is_string()) refs_.push_back({ptr, base, k});
    for (auto& [k, v] : s.items()) {
      const std::string kp = ptr + "/" + pointer_escape(k);
      if (k == "items" && v.is_array()) {
        for (size_t i = 0; i < v.size(); ++i) walk(v[i], kp + "/" + std::to_string(i), base);
      } else if (k == "additionalProperties" || k == "additionalItems" || k == "items" || k == "contains" ||
                 k == "not" || k == "if" || k == "then" || k == "else" || k == "propertyNames" ||
                 k == "unevaluatedProperties" || k == "unevaluatedItems" || k == "contentSchema") {
        walk(v, kp, base);
      } else if ((k == "allOf" || k == "anyOf" || k == "oneOf" || k == "prefixItems") && v.is_array()) {
        for (size_t i = 0; i < v.size(); ++i) walk(v[i], kp + "/" + std::to_string(i), base);
      } else if ((k == "properties" || k == "patternProperties" || k == "$defs" || k == "definitions" ||
                  k == "dependentSchemas" || k == "dependencies" || k == kDocumentsKey) &&
                 v.is_object()) {
        for (auto& [name, sub] : v.items())
          if (is_schema(sub)) walk(sub, kp + "/" + pointer_escape(name), base);
      }
    }
  }

  // The root pointer of a resource: one of the document, or a supplied document embedded now.
  std::optional<std::string> resource(const std::string& uri) {
    if (auto it = resources_.find(uri); it != resources_.end()) return it->second;
    if (uri.empty()) return std::string();
    if (!docs_) return std::nullopt;
    auto it = docs_->find(uri);
    if (it == docs_->end()) return std::nullopt;
    if (!doc_.is_object()) return std::nullopt;
    const std::string key = std::to_string(doc_[std::string(kDocumentsKey)].size());
    doc_[std::string(kDocumentsKey)][key] = it->second;
    const std::string ptr = "/" + pointer_escape(std::string(kDocumentsKey)) + "/" + key;
    resources_.emplace(uri, ptr);
    walk(it->second, ptr, uri);
    return ptr;
  }

  Result<std::string> target(const Ref& r, const std::string& ref) {
    const Uri u = resolve_uri(r.base, ref);
    const std::string doc = to_string(u, false);
    const auto root = resource(doc);
    if (!root) {
      return make_error(ErrorCode::kUnsupported,
                        "JSON Schema keyword '{}' at '#{}' is not supported: '{}' names a document keel was not given "
                        "(keel resolves references within the schema and its supplied documents only)",
                        r.keyword, r.pointer, ref);
    }
    if (u.fragment.empty() || u.fragment[0] == '/') return "#" + pointer_fragment(*root) + u.fragment;
    auto it = anchors_.find(doc + "#" + u.fragment);
    if (it == anchors_.end())
      return make_error(ErrorCode::kInvalidArgument, "'{}' '{}' at '#{}' does not resolve", r.keyword, ref, r.pointer);
    return "#" + pointer_fragment(it->second);
  }

  Status rewrite(const Ref& r, const std::string& to) {
    Json& s = doc_[Json::json_pointer(r.pointer)];
    const std::string ref = s[r.keyword].get<std::string>();
    if (r.keyword == "$ref") {
      s["$ref"] = to;
      return {};
    }
    // $dynamicRef: like $ref unless its fragment names a $dynamicAnchor of the target, and then
    // still like $ref when no other resource declares that dynamic anchor (the dynamic scope can
    // only find the same one).
    const Uri u = resolve_uri(r.base, ref);
    const std::string name = u.fragment;
    auto dyn = dynamic_.find(name);
    const bool dynamic = dyn != dynamic_.end() && dyn->second.count(to_string(u, false) + "#" + name) > 0;
    if (dynamic && dyn->second.size() > 1)
      return make_error(ErrorCode::kUnsupported,
                        "JSON Schema keyword '$dynamicRef' at '#{}' is not supported: '{}' is declared by {} resources, "
                        "so the target depends on the dynamic scope",
                        r.pointer, name, dyn->second.size());
    s.erase("$dynamicRef");
    if (!s.contains("allOf")) s["allOf"] = Json::array();
    if (!s["allOf"].is_array())
      return make_error(ErrorCode::kInvalidArgument, "'allOf' at '#{}' must be a non-empty array", r.pointer);
    s["allOf"].push_back(Json{{"$ref", to}});
    return {};
  }

  Json& doc_;
  const SchemaDocuments* docs_;
  bool legacy_id_ = false;
  std::map<std::string, std::string> resources_, anchors_;  // URI -> pointer
  std::map<std::string, std::set<std::string>> dynamic_;   // dynamic anchor name -> its URIs
  std::vector<Ref> refs_;
};

}  // namespace

Result<Json> resolve_references(const Json& schema, const SchemaDocuments* docs) {
  Json out = schema;
  RefResolver resolver(out, docs);
  KEEL_RETURN_IF_ERROR(resolver.run());
  return out;
}

}  // namespace keel::grammar::detail

// Tokenizer::from_hf_json: a VocabSpec from HF tokenizers' tokenizer.json (model, normalizer,
// pre_tokenizer, post_processor, decoder, added_tokens) and tokenizer_config.json. Anything keel
// does not implement is a kUnsupported Status naming the component; nlohmann exceptions stop here.
#include <nlohmann/json.hpp>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_defaults.h"

namespace keel::tokenizer {

namespace {

using nlohmann::json;

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

Status unsupported(std::string_view what, const json& node) {
  return make_error(ErrorCode::kUnsupported, "unsupported tokenizer.json {}: {}", what, node.dump().substr(0, 200));
}

std::string type_of(const json& node) { return node.is_object() ? node.value("type", std::string()) : std::string(); }

// Flattens "Sequence" nodes (key `list_key` holds the children).
std::vector<json> flatten(const json& node, const char* list_key) {
  if (node.is_null()) return {};
  if (type_of(node) == "Sequence") {
    std::vector<json> out;
    for (const json& child : node.at(list_key)) {
      for (json& j : flatten(child, list_key)) out.push_back(std::move(j));
    }
    return out;
  }
  return {node};
}

std::string escape_regex(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

struct Shape {
  bool byte_level = false;
  bool spm = false;
};

Status read_normalizer(const json& root, VocabSpec& spec, Shape& shape) {
  for (const json& n : flatten(root.value("normalizer", json()), "normalizers")) {
    const std::string t = type_of(n);
    if (t == "Prepend" && n.at("prepend").get<std::string>() == kSpmSpace) {
      spec.add_space_prefix = true;
      spec.space_prefix_every_segment = true;
      shape.spm = true;
    } else if (t == "Replace" && n.at("pattern").value("String", std::string()) == " " &&
               n.at("content").get<std::string>() == kSpmSpace) {
      shape.spm = true;
    } else {
      return unsupported("normalizer", n);
    }
  }
  return Status::ok_status();
}

Status read_pre_tokenizer(const json& root, VocabSpec& spec, Shape& shape) {
  for (const json& p : flatten(root.value("pre_tokenizer", json()), "pretokenizers")) {
    const std::string t = type_of(p);
    if (t == "ByteLevel") {
      if (p.value("add_prefix_space", false)) return unsupported("pre_tokenizer (ByteLevel add_prefix_space)", p);
      if (p.value("use_regex", true)) spec.pre_steps.push_back({kGpt2Regex});
      shape.byte_level = true;
    } else if (t == "Split") {
      if (p.value("behavior", std::string()) != "Isolated" || p.value("invert", false)) {
        return unsupported("pre_tokenizer (Split behaviour other than Isolated)", p);
      }
      const json& pat = p.at("pattern");
      if (pat.contains("Regex")) {
        spec.pre_steps.push_back({pat.at("Regex").get<std::string>()});
      } else {
        spec.pre_steps.push_back({escape_regex(pat.at("String").get<std::string>())});
      }
    } else if (t == "Digits") {
      spec.pre_steps.push_back({p.value("individual_digits", false) ? "\\p{N}" : "\\p{N}+"});
    } else if (t == "Metaspace") {
      if (p.value("replacement", std::string(kSpmSpace)) != kSpmSpace) return unsupported("pre_tokenizer (Metaspace replacement)", p);
      const std::string scheme = p.value("prepend_scheme", std::string(p.value("add_prefix_space", true) ? "always" : "never"));
      if (scheme == "always" && !spec.space_prefix_every_segment) return unsupported("pre_tokenizer (Metaspace prepend_scheme always)", p);
      spec.add_space_prefix = scheme != "never";
      spec.spm_split_on_space = p.value("split", true);
      shape.spm = true;
    } else {
      return unsupported("pre_tokenizer", p);
    }
  }
  return Status::ok_status();
}

Status read_decoder(const json& root, VocabSpec& spec) {
  for (const json& d : flatten(root.value("decoder", json()), "decoders")) {
    const std::string t = type_of(d);
    if (t == "Strip") {
      if (d.value("content", std::string(" ")) != " " || d.value("stop", 0) != 0) return unsupported("decoder (Strip)", d);
      spec.decode_strip_leading_spaces = d.value("start", 0);
    } else if (t == "Metaspace") {
      spec.decode_strip_leading_spaces = d.value("prepend_scheme", std::string("always")) != "never" ? 1 : 0;
    } else if (t != "ByteLevel" && t != "Replace" && t != "ByteFallback" && t != "Fuse") {
      return unsupported("decoder", d);
    }
  }
  return Status::ok_status();
}

Status read_model(const json& model, VocabSpec& spec) {
  if (type_of(model) != "BPE") return unsupported("model (only BPE)", json(type_of(model)));
  if (!model.value("dropout", json()).is_null()) return unsupported("model (BPE dropout)", model.at("dropout"));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json v = model.value(key, json());
    if (!v.is_null() && !v.get<std::string>().empty()) return unsupported(fmt::format("model ({})", key), v);
  }
  const json& vocab = model.at("vocab");
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const int64_t id = it.value().get<int64_t>();
    if (id < 0 || id > 10'000'000) return make_error(ErrorCode::kCorruptFile, "token id {} out of range", id);
    if (spec.tokens.size() <= static_cast<size_t>(id)) spec.tokens.resize(id + 1);
    spec.tokens[id] = it.key();
  }
  for (const json& m : model.value("merges", json::array())) {
    if (m.is_string()) spec.merges.push_back(m.get<std::string>());
    else spec.merges.push_back(m.at(0).get<std::string>() + " " + m.at(1).get<std::string>());
  }
  spec.ignore_merges = model.value("ignore_merges", false);
  spec.byte_fallback = model.value("byte_fallback", false);
  return Status::ok_status();
}

Status read_added_tokens(const json& root, VocabSpec& spec) {
  for (const json& a : root.value("added_tokens", json::array())) {
    const int64_t id = a.at("id").get<int64_t>();
    if (id < 0 || id > 10'000'000) return make_error(ErrorCode::kCorruptFile, "added token id {} out of range", id);
    if (a.value("single_word", false)) return unsupported("added token (single_word)", a);
    if (spec.tokens.size() <= static_cast<size_t>(id)) spec.tokens.resize(id + 1);
    spec.types.resize(spec.tokens.size(), TokenType::kNormal);
    spec.tokens[id] = a.at("content").get<std::string>();
    spec.types[id] = a.value("special", false) ? TokenType::kControl : TokenType::kUserDefined;
    if (a.value("lstrip", false) || a.value("rstrip", false)) {
      spec.added_strips.push_back({static_cast<int32_t>(id), a.value("lstrip", false), a.value("rstrip", false)});
    }
  }
  spec.types.resize(spec.tokens.size(), TokenType::kNormal);
  return Status::ok_status();
}

// TemplateProcessing's "single" template decides what encode(add_special_tokens=True) adds.
Status read_post_processor(const json& root, VocabSpec& spec) {
  for (const json& p : flatten(root.value("post_processor", json()), "processors")) {
    const std::string t = type_of(p);
    if (t == "ByteLevel") continue;
    if (t != "TemplateProcessing") return unsupported("post_processor", p);
    const json& single = p.at("single");
    auto special_id = [&](const json& piece) -> int32_t {
      const std::string name = piece.at("SpecialToken").at("id").get<std::string>();
      const json& ids = p.at("special_tokens").at(name).at("ids");
      return ids.size() == 1 ? ids.at(0).get<int32_t>() : -1;
    };
    for (size_t i = 0; i < single.size(); ++i) {
      if (!single[i].contains("SpecialToken")) continue;
      const int32_t id = special_id(single[i]);
      if (id < 0) return unsupported("post_processor (multi-id special token)", single[i]);
      if (i == 0) {
        spec.add_bos = true;
        spec.bos_id = id;
      } else if (i + 1 == single.size()) {
        spec.add_eos = true;
        spec.eos_id = id;
      } else {
        return unsupported("post_processor (special token inside the template)", single[i]);
      }
    }
  }
  return Status::ok_status();
}

std::string token_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object()) return v.value("content", std::string());
  return {};
}

void read_config(const json& cfg, VocabSpec& spec) {
  auto id_of = [&](const char* key) { return cfg.contains(key) ? find_token(spec, token_text(cfg.at(key))) : -1; };
  if (int32_t id = id_of("bos_token"); id >= 0 && spec.bos_id < 0) spec.bos_id = id;
  if (int32_t id = id_of("eos_token"); id >= 0) spec.eos_id = id;
  if (int32_t id = id_of("unk_token"); id >= 0) spec.unk_id = id;
  if (int32_t id = id_of("pad_token"); id >= 0) spec.pad_id = id;
  if (cfg.contains("add_bos_token") && cfg.at("add_bos_token").is_boolean()) spec.add_bos = cfg.at("add_bos_token").get<bool>();
  if (cfg.contains("add_eos_token") && cfg.at("add_eos_token").is_boolean()) spec.add_eos = cfg.at("add_eos_token").get<bool>();
  const json tmpl = cfg.value("chat_template", json());
  if (tmpl.is_string()) spec.chat_template = tmpl.get<std::string>();
  if (tmpl.is_array()) {
    for (const json& t : tmpl) {
      if (t.value("name", std::string()) == "default") spec.chat_template = t.value("template", std::string());
    }
  }
}

Result<VocabSpec> parse_spec(std::string_view tokenizer_json, std::string_view config_json) {
  const json root = json::parse(tokenizer_json);
  VocabSpec spec;
  Shape shape;
  spec.pre_tokenizer = "tokenizer.json";
  KEEL_RETURN_IF_ERROR(read_model(root.at("model"), spec));
  KEEL_RETURN_IF_ERROR(read_normalizer(root, spec, shape));
  KEEL_RETURN_IF_ERROR(read_pre_tokenizer(root, spec, shape));
  if (shape.byte_level == shape.spm) {
    return make_error(ErrorCode::kUnsupported, "tokenizer.json is neither byte-level BPE nor SentencePiece-style BPE");
  }
  spec.algorithm = shape.byte_level ? Algorithm::kByteLevelBpe : Algorithm::kSentencePieceBpe;
  if (shape.byte_level && spec.pre_steps.empty()) spec.pre_steps.push_back({"(?s).+"});
  if (shape.spm && !spec.pre_steps.empty()) return make_error(ErrorCode::kUnsupported, "Split/Digits with Metaspace");
  KEEL_RETURN_IF_ERROR(read_decoder(root, spec));
  KEEL_RETURN_IF_ERROR(read_added_tokens(root, spec));
  KEEL_RETURN_IF_ERROR(read_post_processor(root, spec));
  const std::string unk = root.at("model").value("unk_token", json()).is_string()
                              ? root.at("model").at("unk_token").get<std::string>() : std::string();
  if (!unk.empty()) spec.unk_id = find_token(spec, unk);
  if (spec.unk_id >= 0 && spec.types[spec.unk_id] == TokenType::kNormal) spec.types[spec.unk_id] = TokenType::kUnknown;
  if (shape.spm && spec.byte_fallback) {
    for (size_t i = 0; i < spec.tokens.size(); ++i) {
      const std::string& t = spec.tokens[i];
      if (t.size() == 6 && t.starts_with("<0x") && t.back() == '>') spec.types[i] = TokenType::kByte;
    }
  }
  if (!config_json.empty()) read_config(json::parse(config_json), spec);
  add_named_eog_ids(spec);
  return spec;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_hf_json(std::string_view tokenizer_json,
                                                           std::string_view tokenizer_config_json) {
  try {
    KEEL_ASSIGN_OR_RETURN(VocabSpec spec, parse_spec(tokenizer_json, tokenizer_config_json));
    return create(std::move(spec));
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::kCorruptFile, "tokenizer.json: {}", e.what());
  }
}

}  // namespace keel::tokenizer

// keel's GGUF reader against the `gguf` Python package (GGUFReader) on real files: SmolLM2 and
// llama.cpp's vocab GGUFs. Golden: tests/golden/format/gguf_summary.json (gen_gguf_summary.py).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "common/test_paths.h"
#include "format/gguf.h"

namespace keel::format {
namespace {

using nlohmann::json;

constexpr size_t kMaxInlineString = 160;

uint64_t fnv1a64(std::string_view s, uint64_t h = 0xCBF29CE484222325ULL) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ULL;
  return h;
}

std::string hex(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out += fmt::format("{:02x}", c);
  return out;
}

// The generator writes valid UTF-8 as a JSON string and anything else as {"hex": ...}.
void expect_text(const json& want, std::string_view got, const std::string& where) {
  if (want.is_object()) {
    EXPECT_EQ(want.at("hex").get<std::string>(), hex(got)) << where;
  } else {
    EXPECT_EQ(want.get<std::string>(), got) << where;
  }
}

void expect_string(const json& want, const std::string& got, const std::string& where) {
  if (got.size() <= kMaxInlineString) {
    ASSERT_TRUE(want.contains("value")) << where << ": keel read " << got.size() << " bytes";
    expect_text(want.at("value"), got, where);
    return;
  }
  EXPECT_EQ(want.at("len").get<size_t>(), got.size()) << where;
  expect_text(want.at("head"), std::string_view(got).substr(0, 32), where);
  EXPECT_EQ(want.at("fnv").get<std::string>(), fmt::format("{:016x}", fnv1a64(got))) << where;
}

void expect_scalar(const json& want, const GgufValue& v, const std::string& where) {
  switch (v.type) {
    case GgufType::kString: expect_string(want, std::get<std::string>(v.value), where); return;
    case GgufType::kBool: EXPECT_EQ(want.at("value").get<bool>(), std::get<bool>(v.value)) << where; return;
    case GgufType::kFloat32:
    case GgufType::kFloat64: EXPECT_EQ(want.at("value").get<double>(), std::get<double>(v.value)) << where; return;
    case GgufType::kInt8:
    case GgufType::kInt16:
    case GgufType::kInt32:
    case GgufType::kInt64: EXPECT_EQ(want.at("value").get<int64_t>(), std::get<int64_t>(v.value)) << where; return;
    case GgufType::kUint8:
    case GgufType::kUint16:
    case GgufType::kUint32:
    case GgufType::kUint64: EXPECT_EQ(want.at("value").get<uint64_t>(), std::get<uint64_t>(v.value)) << where; return;
    case GgufType::kArray: FAIL() << where << ": array where a scalar was expected";
  }
}

json number_json(const GgufValue& v) {
  if (const auto* u = std::get_if<uint64_t>(&v.value)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v.value)) return *i;
  return std::get<double>(v.value);
}

void expect_array(const json& want, const GgufArray& arr, const std::string& where) {
  ASSERT_EQ(want.at("elem_type").get<uint32_t>(), static_cast<uint32_t>(arr.elem_type)) << where;
  ASSERT_EQ(want.at("count").get<size_t>(), arr.items.size()) << where;
  if (arr.elem_type == GgufType::kArray) return;
  const size_t n = arr.items.size();
  if (arr.elem_type == GgufType::kString) {
    uint64_t h = 0xCBF29CE484222325ULL;
    size_t total = 0;
    for (const GgufValue& item : arr.items) {
      const auto& s = std::get<std::string>(item.value);
      const uint64_t len = s.size();
      h = fnv1a64(std::string_view(reinterpret_cast<const char*>(&len), 8), h);
      h = fnv1a64(s, h);
      total += s.size();
    }
    EXPECT_EQ(want.at("fnv").get<std::string>(), fmt::format("{:016x}", h)) << where;
    EXPECT_EQ(want.at("total_bytes").get<size_t>(), total) << where;
    for (size_t i = 0; i < std::min<size_t>(3, n); ++i) {
      expect_text(want.at("first")[i], std::get<std::string>(arr.items[i].value), where);
    }
    if (n > 0) {
      expect_text(want.at("last"), std::get<std::string>(arr.items[n - 1].value), where);
    }
    return;
  }
  double fsum = 0;
  int64_t isum = 0;
  for (const GgufValue& item : arr.items) {
    if (const auto* u = std::get_if<uint64_t>(&item.value)) isum += static_cast<int64_t>(*u);
    if (const auto* i = std::get_if<int64_t>(&item.value)) isum += *i;
    if (const auto* d = std::get_if<double>(&item.value)) fsum += *d;
  }
  if (arr.elem_type == GgufType::kFloat32 || arr.elem_type == GgufType::kFloat64) {
    EXPECT_NEAR(want.at("sum").get<double>(), fsum, 1e-9 * std::max(1.0, std::abs(fsum))) << where;
  } else if (arr.elem_type != GgufType::kBool) {
    EXPECT_EQ(want.at("sum").get<int64_t>(), isum) << where;
  }
  if (arr.elem_type == GgufType::kBool) return;
  for (size_t i = 0; i < std::min<size_t>(3, n); ++i) {
    EXPECT_EQ(want.at("first")[i], number_json(arr.items[i])) << where;
  }
  if (n > 0) {
    EXPECT_EQ(want.at("last"), number_json(arr.items[n - 1])) << where;
  }
}

void check_file(const json& want) {
  const std::string rel = want.at("file").get<std::string>();
  const std::string path = test::cache_dir() + "/" + rel;
  ASSERT_TRUE(test::exists(path)) << path << " is missing: run scripts/fetch_model.sh and scripts/fetch_test_data.sh";
  Result<GgufFile> f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(want.at("version").get<uint32_t>(), f->version());
  EXPECT_EQ(want.at("alignment").get<uint64_t>(), f->alignment());

  const json& meta = want.at("metadata");
  ASSERT_EQ(meta.size(), f->metadata().size()) << rel;
  for (size_t i = 0; i < meta.size(); ++i) {
    const auto& [key, value] = f->metadata()[i];
    const std::string where = rel + " " + key;
    ASSERT_EQ(meta[i].at("key").get<std::string>(), key) << rel << " metadata #" << i;
    ASSERT_EQ(meta[i].at("type").get<uint32_t>(), static_cast<uint32_t>(value.type)) << where;
    if (value.type == GgufType::kArray) {
      expect_array(meta[i], *std::get<std::shared_ptr<GgufArray>>(value.value), where);
    } else {
      expect_scalar(meta[i], value, where);
    }
  }

  const json& tensors = want.at("tensors");
  ASSERT_EQ(tensors.size(), f->tensors().size()) << rel;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const GgufTensorInfo& t = f->tensors()[i];
    const json& w = tensors[i];
    ASSERT_EQ(w.at("name").get<std::string>(), t.name) << rel << " tensor #" << i;
    EXPECT_EQ(tensor::dtype_from_ggml_type(w.at("ggml_type").get<uint32_t>()), t.dtype) << t.name;
    const auto shape = w.at("shape").get<std::vector<int64_t>>();
    ASSERT_EQ(static_cast<int>(shape.size()), t.shape.rank) << t.name;
    for (size_t d = 0; d < shape.size(); ++d) {
      EXPECT_EQ(shape[d], t.shape[static_cast<int>(d)]) << t.name;
    }
    EXPECT_EQ(w.at("offset").get<uint64_t>(), t.offset) << t.name;
    EXPECT_EQ(w.at("n_bytes").get<size_t>(), t.size_bytes) << t.name;
    const tensor::TensorView view = f->tensor_view(t);
    EXPECT_EQ(view.data, f->data_section().data() + t.offset) << t.name;
    EXPECT_EQ(view.size_bytes, t.size_bytes) << t.name;
  }
}

json load_golden() {
  std::ifstream in(test::golden_dir() + "/format/gguf_summary.json");
  EXPECT_TRUE(in.good()) << "missing golden: python3 tests/golden/format/gen_gguf_summary.py";
  return json::parse(in);
}

TEST(GgufGolden, MatchesGgufPyOnEveryRealFile) {
  const json golden = load_golden();
  ASSERT_GE(golden.at("files").size(), 2u);
  for (const json& file : golden.at("files")) {
    SCOPED_TRACE(file.at("file").get<std::string>());
    check_file(file);
  }
}

TEST(GgufGolden, SmolLm2TypedGetters) {
  const std::string path = test::default_model_path();
  ASSERT_TRUE(test::exists(path)) << path << " is missing: run scripts/fetch_model.sh";
  Result<GgufFile> f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(f->get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f->get_int("llama.embedding_length").value(), 576);
  EXPECT_EQ(f->get_int("llama.block_count").value(), 30);
  EXPECT_FLOAT_EQ(static_cast<float>(f->get_float("llama.rope.freq_base").value()), 100000.0f);
  EXPECT_DOUBLE_EQ(f->get_float("llama.embedding_length").value(), 576.0);  // ints widen to float
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens").value().size(), 49152u);
  EXPECT_EQ(f->get_int_array("tokenizer.ggml.token_type").value().size(), 49152u);
  EXPECT_EQ(f->get_string("missing.key").status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(f->get_int("general.architecture").status().code(), ErrorCode::kCorruptFile);
  EXPECT_EQ(f->get_bool("llama.block_count").status().code(), ErrorCode::kCorruptFile);
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.token_type").status().code(), ErrorCode::kCorruptFile);

  const GgufTensorInfo* emb = f->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, tensor::DType::kQ8_0);
  EXPECT_EQ(emb->shape, tensor::make_shape({49152, 576}));  // ne[] = {576, 49152} reversed
  EXPECT_EQ(f->find_tensor("no.such.tensor"), nullptr);
  // The last tensor ends within the data section, and the views point into the mapped file.
  const GgufTensorInfo& last = f->tensors().back();
  EXPECT_LE(last.offset + last.size_bytes, f->data_section().size());
}

// The views land on the same bytes gguf-py reads: rows of the shipped file stored in the dequant
// golden (tests/golden/dequant/gen_dequant.py) must equal tensor_view().row(r).
TEST(GgufGolden, ViewsHoldTheRowsGgufPyReads) {
  const std::string dir = test::golden_dir() + "/dequant/";
  std::ifstream js(dir + "dequant_golden.json");
  std::ifstream bin(dir + "dequant_golden.bin", std::ios::binary);
  ASSERT_TRUE(js.good() && bin.good()) << "missing golden: python3 tests/golden/dequant/gen_dequant.py";
  const json index = json::parse(js);
  const std::vector<uint8_t> blob{std::istreambuf_iterator<char>(bin), {}};
  Result<GgufFile> f = GgufFile::open(test::default_model_path());
  ASSERT_TRUE(f.ok()) << f.status().to_string() << " (run scripts/fetch_model.sh)";
  int checked = 0;
  for (const json& c : index.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    if (name.rfind("Q4_1 file ", 0) != 0 || c.at("op") != "dequantize") continue;
    // "Q4_1 file <tensor> row <r>"
    const size_t row_at = name.rfind(" row ");
    const std::string tensor_name = name.substr(10, row_at - 10);
    const int64_t row = std::stoll(name.substr(row_at + 5));
    const GgufTensorInfo* t = f->find_tensor(tensor_name);
    ASSERT_NE(t, nullptr) << tensor_name;
    const auto off = c.at("src")[0].get<size_t>();
    const auto len = c.at("src")[1].get<size_t>();
    ASSERT_EQ(len, tensor::row_size_bytes(t->dtype, t->shape.row_len())) << name;
    EXPECT_EQ(std::memcmp(f->tensor_view(*t).row(row), blob.data() + off, len), 0) << name;
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

}  // namespace
}  // namespace keel::format

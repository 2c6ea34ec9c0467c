// safetensors reader against files written by the real `safetensors` package and a sharded
// checkpoint saved by transformers (tests/golden/format/gen_safetensors.py), folder detection,
// and corrupt variants built here: each must be a Status naming the problem, never a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "common/test_paths.h"
#include "format/safetensors.h"
#include "tensor/dequantize.h"

namespace keel::format {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string golden_path(const std::string& rel) { return test::golden_dir() + "/format/safetensors/" + rel; }

json expected() {
  std::ifstream in(test::golden_dir() + "/format/safetensors_expected.json");
  EXPECT_TRUE(in.good()) << "missing golden: python3 tests/golden/format/gen_safetensors.py";
  return json::parse(in);
}

std::vector<double> values_of(const tensor::TensorView& v) {
  std::vector<double> out;
  if (v.dtype == tensor::DType::kI32) {
    for (int64_t i = 0; i < v.numel(); ++i) {
      int32_t x = 0;
      std::memcpy(&x, static_cast<const uint8_t*>(v.data) + 4 * i, 4);
      out.push_back(x);
    }
    return out;
  }
  std::vector<float> f(static_cast<size_t>(v.numel()));
  tensor::dequantize_row(v.dtype, v.data, f.data(), v.numel());
  return {f.begin(), f.end()};
}

void check_tensors(const SafetensorsSet& set, const json& file) {
  const std::string path = golden_path(file.at("file").get<std::string>());
  Result<MappedFile> raw = MappedFile::open(path);
  ASSERT_TRUE(raw.ok()) << raw.status().to_string();
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, raw->data(), 8);
  for (const json& want : file.at("tensors")) {
    const std::string name = want.at("name").get<std::string>();
    SCOPED_TRACE(name);
    const tensor::TensorView* v = set.find(name);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(tensor::dtype_from_safetensors(want.at("dtype").get<std::string>()), v->dtype);
    const auto shape = want.at("shape").get<std::vector<int64_t>>();
    ASSERT_EQ(static_cast<int>(shape.size()), v->shape.rank);
    for (size_t d = 0; d < shape.size(); ++d) {
      EXPECT_EQ(shape[d], v->shape[static_cast<int>(d)]);
    }
    // Same byte range as the header names, located in a mapping of the same file.
    const auto range = want.at("data_offsets").get<std::vector<uint64_t>>();
    EXPECT_EQ(v->size_bytes, range[1] - range[0]);
    const std::vector<double> vals = values_of(*v);
    double sum = 0;
    for (double x : vals) sum += std::isfinite(x) ? x : 0.0;
    EXPECT_NEAR(want.at("sum").get<double>(), sum, 1e-5 * std::max(1.0, std::fabs(sum)));
    const auto first = want.at("first").get<std::vector<double>>();
    for (size_t i = 0; i < first.size(); ++i) {
      EXPECT_EQ(first[i], vals[i]) << "element " << i;
    }
    // The bytes match the file at 8 + header + begin.
    EXPECT_EQ(std::memcmp(v->data, raw->data() + 8 + header_bytes + range[0], v->size_bytes), 0);
  }
}

TEST(Safetensors, SingleFilesMatchTheSafetensorsPackage) {
  const json exp = expected();
  for (int i : {0, 1}) {
    const json& file = exp.at("files")[static_cast<size_t>(i)];
    SCOPED_TRACE(file.at("file").get<std::string>());
    Result<SafetensorsSet> set = SafetensorsSet::open(golden_path(file.at("file").get<std::string>()));
    ASSERT_TRUE(set.ok()) << set.status().to_string();
    EXPECT_EQ(set->tensors().size(), file.at("tensors").size());
    EXPECT_EQ(set->metadata(), (file.at("metadata").get<std::unordered_map<std::string, std::string>>()));
    check_tensors(*set, file);
  }
}

TEST(Safetensors, ShardedCheckpointFromTransformers) {
  const json exp = expected();
  const std::string dir = golden_path(exp.at("sharded").at("dir").get<std::string>());
  for (const std::string& path : {dir, dir + "/model.safetensors.index.json"}) {
    Result<SafetensorsSet> set = SafetensorsSet::open(path);
    ASSERT_TRUE(set.ok()) << set.status().to_string();
    EXPECT_EQ(set->tensors().size(), exp.at("sharded").at("weight_map").size());
    EXPECT_EQ(set->metadata().at("format"), "pt");
    for (size_t i = 2; i < exp.at("files").size(); ++i) check_tensors(*set, exp.at("files")[i]);
    const tensor::TensorView* emb = set->find("model.embed_tokens.weight");
    ASSERT_NE(emb, nullptr);
    EXPECT_EQ(emb->shape, tensor::make_shape({64, 16}));
    EXPECT_EQ(emb->dtype, tensor::DType::kBF16);
    EXPECT_EQ(set->find("no.such.tensor"), nullptr);
  }
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / fmt::format("keel_st_{}_{}", ::getpid(), counter_++)) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(Safetensors, FolderDetection) {
  const std::vector<uint8_t> single = read_file(golden_path("numpy_mixed.safetensors"));
  ASSERT_FALSE(single.empty());
  {
    TempDir dir;
    write_file(dir.file("weights.safetensors"), single);
    Result<SafetensorsSet> set = SafetensorsSet::open(dir.str());
    ASSERT_TRUE(set.ok()) << set.status().to_string();
    EXPECT_NE(set->find("weight"), nullptr);
    write_file(dir.file("other.safetensors"), single);
    EXPECT_EQ(SafetensorsSet::open(dir.str()).status().code(), ErrorCode::kInvalidArgument);
    write_file(dir.file("model.safetensors"), read_file(golden_path("torch_bf16_fp8.safetensors")));
    set = SafetensorsSet::open(dir.str());  // model.safetensors wins over the others
    ASSERT_TRUE(set.ok()) << set.status().to_string();
    EXPECT_NE(set->find("bf16"), nullptr);
  }
  TempDir empty;
  EXPECT_EQ(SafetensorsSet::open(empty.str()).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(SafetensorsSet::open(empty.file("missing.safetensors")).status().code(), ErrorCode::kNotFound);
}

TEST(Safetensors, BrokenIndexes) {
  TempDir dir;
  const std::vector<uint8_t> single = read_file(golden_path("numpy_mixed.safetensors"));
  write_file(dir.file("a.safetensors"), single);
  write_file(dir.file("b.safetensors"), single);
  auto with_index = [&](const std::string& text) {
    std::ofstream(dir.file("model.safetensors.index.json")) << text;
    return SafetensorsSet::open(dir.str());
  };
  EXPECT_TRUE(with_index(R"({"weight_map": {"weight": "a.safetensors"}})").ok());
  auto expect = [](const Result<SafetensorsSet>& r, ErrorCode code, std::string_view needle) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code) << r.status().to_string();
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().to_string();
  };
  expect(with_index(R"({"weight_map": {"weight": "a.safetensors", "half": "b.safetensors"}})"), ErrorCode::kCorruptFile,
         "more than one file");
  expect(with_index(R"({"weight_map": {"nope": "a.safetensors"}})"), ErrorCode::kCorruptFile, "does not hold it");
  expect(with_index(R"({"weight_map": {"weight": "missing.safetensors"}})"), ErrorCode::kNotFound, "missing");
  expect(with_index(R"({"weight_map": {"weight": "../a.safetensors"}})"), ErrorCode::kCorruptFile, "beside");
  expect(with_index(R"({"weight_map": {"weight": 3}})"), ErrorCode::kCorruptFile, "not a string");
  expect(with_index(R"({"metadata": {}})"), ErrorCode::kCorruptFile, "weight_map");
  expect(with_index(R"({"weight_map": {}})"), ErrorCode::kCorruptFile, "empty");
  expect(with_index(R"({"weight_map": )"), ErrorCode::kCorruptFile, "JSON");
}

// One file from a header string and `data_bytes` zero bytes of data.
std::vector<uint8_t> make_file(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

void expect_parse_error(const std::string& header, size_t data_bytes, ErrorCode code, std::string_view needle) {
  SCOPED_TRACE(header);
  const std::vector<uint8_t> bytes = make_file(header, data_bytes);
  Result<SafetensorsSet> r = SafetensorsSet::parse(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().to_string();
}

TEST(Safetensors, HeaderValidation) {
  const std::vector<uint8_t> ok = make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  ASSERT_TRUE(SafetensorsSet::parse(ok).ok());
  const auto k = ErrorCode::kCorruptFile;
  expect_parse_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4, k, "run past the end");
  expect_parse_error(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, k, "do not hold 3 F32");
  expect_parse_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, k, "do not hold");
  expect_parse_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                     16, k, "overlap");
  expect_parse_error(R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8, ErrorCode::kUnsupported, "I64");
  expect_parse_error(R"({"a":{"dtype":"F32","shape":[1,1,1,1,1],"data_offsets":[0,4]}})", 4, ErrorCode::kUnsupported,
                     "5 dimensions");
  expect_parse_error(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, k, "shape");
  expect_parse_error(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4, k, "int64");
  expect_parse_error(R"({"a":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", 4, k,
                     "do not hold");
  expect_parse_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4, k, "[begin, end]");
  expect_parse_error(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,-4]}})", 4, k, "non-negative");
  expect_parse_error(R"({"a":{"dtype":"F32","shape":[1]}})", 4, k, "needs dtype");
  expect_parse_error(R"({"a":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", 4, k, "not a string");
  expect_parse_error(R"({"a":[1,2]})", 4, k, "not a JSON object");
  expect_parse_error(R"({"__metadata__":{"k":1}})", 0, k, "__metadata__ 'k'");
  expect_parse_error(R"([1,2,3])", 0, k, "not a JSON object");
  expect_parse_error(R"({"a":)", 0, k, "header JSON");
  expect_parse_error(std::string("{\"a\xff\":1}"), 0, k, "header JSON");

  std::vector<uint8_t> huge = make_file("{}", 0);
  const uint64_t n = 1ull << 40;
  std::memcpy(huge.data(), &n, 8);
  EXPECT_EQ(SafetensorsSet::parse(huge).status().code(), ErrorCode::kCorruptFile);
  EXPECT_EQ(SafetensorsSet::parse(std::span<const uint8_t>(huge).first(5)).status().code(), ErrorCode::kCorruptFile);
}

TEST(Safetensors, EveryTruncationFails) {
  const std::vector<uint8_t> bytes = read_file(golden_path("numpy_mixed.safetensors"));
  ASSERT_FALSE(bytes.empty()) << "missing golden: python3 tests/golden/format/gen_safetensors.py";
  ASSERT_TRUE(SafetensorsSet::parse(bytes).ok());
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    Result<SafetensorsSet> r = SafetensorsSet::parse(std::span(bytes).first(cut));
    ASSERT_FALSE(r.ok()) << "cut at " << cut;
    EXPECT_EQ(r.status().code(), ErrorCode::kCorruptFile) << "cut at " << cut;
  }
  std::vector<uint8_t> flipped = bytes;
  for (size_t pos = 0; pos < flipped.size(); ++pos) {  // never crashes; views stay inside the bytes
    for (uint8_t mask : {0x01, 0x20, 0x80}) {
      flipped[pos] ^= mask;
      Result<SafetensorsSet> r = SafetensorsSet::parse(flipped);
      if (r.ok()) {
        for (const SafetensorsTensor& t : r->tensors()) {
          const auto* p = static_cast<const uint8_t*>(t.view.data);
          EXPECT_TRUE(p >= flipped.data() && p + t.view.size_bytes <= flipped.data() + flipped.size());
        }
      }
      flipped[pos] ^= mask;
    }
  }
}

}  // namespace
}  // namespace keel::format

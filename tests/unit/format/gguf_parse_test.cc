// GGUF parsing of hand-built files: every value type, nested arrays, alignment, shapes, views, and
// one test per validation rule, each asserting the error code and what the message names.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "format/gguf.h"
#include "unit/format/gguf_builder.h"

namespace keel::format {
namespace {

using test::GgufBuilder;

void expect_error_at(int line, const Result<GgufFile>& r, ErrorCode code, std::string_view needle) {
  SCOPED_TRACE(fmt::format("expect_error on line {}", line));
  ASSERT_FALSE(r.ok()) << "parsed a file that should fail with " << error_code_name(code);
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().to_string();
}
#define expect_error(...) expect_error_at(__LINE__, __VA_ARGS__)

TEST(GgufParse, EveryValueTypeRoundTrips) {
  GgufBuilder b;
  b.header(0, 13);
  b.key("u8", GgufType::kUint8).put<uint8_t>(200);
  b.key("i8", GgufType::kInt8).put<int8_t>(-100);
  b.key("u16", GgufType::kUint16).put<uint16_t>(60000);
  b.key("i16", GgufType::kInt16).put<int16_t>(-30000);
  b.key("u32", GgufType::kUint32).put<uint32_t>(4000000000u);
  b.key("i32", GgufType::kInt32).put<int32_t>(-2000000000);
  b.key("f32", GgufType::kFloat32).put<float>(0.1f);
  b.key("bool", GgufType::kBool).put<uint8_t>(1);
  b.key("str", GgufType::kString).str("héllo");
  b.key("u64", GgufType::kUint64).put<uint64_t>(std::numeric_limits<uint64_t>::max());
  b.key("i64", GgufType::kInt64).put<int64_t>(std::numeric_limits<int64_t>::min());
  b.key("f64", GgufType::kFloat64).put<double>(-2.5e300);
  b.key("floats", GgufType::kArray).put<uint32_t>(6).put<uint64_t>(3).put<float>(1.5f).put<float>(-2).put<float>(0);
  Result<GgufFile> f = b.parse();
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  ASSERT_EQ(f->metadata().size(), 13u);
  EXPECT_EQ(f->metadata()[0].first, "u8");
  EXPECT_EQ(f->get_int("u8").value(), 200);
  EXPECT_EQ(f->get_int("i8").value(), -100);
  EXPECT_EQ(f->get_int("u16").value(), 60000);
  EXPECT_EQ(f->get_int("i16").value(), -30000);
  EXPECT_EQ(f->get_int("u32").value(), 4000000000LL);
  EXPECT_EQ(f->get_int("i32").value(), -2000000000);
  EXPECT_EQ(f->get_float("f32").value(), static_cast<double>(0.1f));
  EXPECT_TRUE(f->get_bool("bool").value());
  EXPECT_EQ(f->get_string("str").value(), "héllo");
  EXPECT_EQ(f->get_int("u64").status().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(std::get<uint64_t>(f->find("u64")->value), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f->get_int("i64").value(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f->get_float("f64").value(), -2.5e300);
  EXPECT_EQ(f->get_float_array("floats").value(), (std::vector<float>{1.5f, -2.0f, 0.0f}));
  EXPECT_EQ(f->get_int_array("floats").status().code(), ErrorCode::kCorruptFile);
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_TRUE(f->data_section().empty());
}

TEST(GgufParse, NestedArraysAndDepthLimit) {
  GgufBuilder b;
  b.header(0, 1, 2);  // version 2 has the same layout as 3
  b.key("nested", GgufType::kArray).put<uint32_t>(9).put<uint64_t>(2);
  b.put<uint32_t>(5).put<uint64_t>(2).put<int32_t>(7).put<int32_t>(-8);
  b.put<uint32_t>(8).put<uint64_t>(1).str("x");
  Result<GgufFile> f = b.parse();
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 2u);
  const auto& outer = *std::get<std::shared_ptr<GgufArray>>(f->find("nested")->value);
  ASSERT_EQ(outer.elem_type, GgufType::kArray);
  ASSERT_EQ(outer.items.size(), 2u);
  const auto& ints = *std::get<std::shared_ptr<GgufArray>>(outer.items[0].value);
  EXPECT_EQ(ints.elem_type, GgufType::kInt32);
  EXPECT_EQ(std::get<int64_t>(ints.items[1].value), -8);
  const auto& strs = *std::get<std::shared_ptr<GgufArray>>(outer.items[1].value);
  EXPECT_EQ(std::get<std::string>(strs.items[0].value), "x");

  GgufBuilder deep;
  deep.header(0, 1).key("deep", GgufType::kArray);
  for (int i = 0; i < 20; ++i) deep.put<uint32_t>(9).put<uint64_t>(1);
  deep.put<uint32_t>(0).put<uint64_t>(0).zeros(64);
  expect_error(deep.parse(), ErrorCode::kCorruptFile, "nested deeper");
}

TEST(GgufParse, TensorsShapesAlignmentAndViews) {
  const float f32[6] = {1, 2, 3, 4, 5, 6};
  GgufBuilder b;
  b.header(2, 1).kv_u32("general.alignment", 64);
  b.tensor("a", {3, 2}, 0, 0);    // F32, ne = {3, 2} -> shape [2, 3]
  b.tensor("q", {64, 1}, 8, 64);  // Q8_0: 2 blocks of 34 bytes
  b.pad_to(64);
  const size_t data_start = b.bytes.size();
  b.data(f32, sizeof f32).pad_to(64).zeros(68);
  Result<GgufFile> f = b.parse();
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->data_section().data(), b.bytes.data() + data_start);
  const GgufTensorInfo* a = f->find_tensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->shape, tensor::make_shape({2, 3}));
  EXPECT_EQ(a->size_bytes, 24u);
  tensor::TensorView v = f->tensor_view(*a);
  EXPECT_EQ(static_cast<const float*>(v.data)[4], 5.0f);
  EXPECT_EQ(reinterpret_cast<const float*>(v.row(1))[0], 4.0f);
  const GgufTensorInfo* q = f->find_tensor("q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, tensor::DType::kQ8_0);
  EXPECT_EQ(q->shape, tensor::make_shape({1, 64}));
  EXPECT_EQ(q->size_bytes, 68u);
}

TEST(GgufParse, HeaderErrors) {
  GgufBuilder bad_magic;
  bad_magic.bytes = {'G', 'G', 'M', 'L', 3, 0, 0, 0};
  expect_error(bad_magic.parse(), ErrorCode::kCorruptFile, "not a GGUF file");
  expect_error(GgufBuilder().header(0, 0, 1).parse(), ErrorCode::kUnsupported, "version 1");
  expect_error(GgufBuilder().header(0, 0, 0x03000000).parse(), ErrorCode::kUnsupported, "big-endian");
  expect_error(GgufBuilder().header(0, 1000).parse(), ErrorCode::kCorruptFile, "metadata count 1000");
  expect_error(GgufBuilder().header(1u << 30, 0).parse(), ErrorCode::kCorruptFile, "tensor count");
  GgufBuilder empty;
  expect_error(empty.parse(), ErrorCode::kCorruptFile, "magic");
}

TEST(GgufParse, MetadataErrors) {
  GgufBuilder long_str;
  long_str.header(0, 1).key("k", GgufType::kString).put<uint64_t>(1ull << 62).zeros(16);
  expect_error(long_str.parse(), ErrorCode::kCorruptFile, "string length");
  GgufBuilder big_array;
  big_array.header(0, 1).key("k", GgufType::kArray).put<uint32_t>(4).put<uint64_t>(1ull << 60).zeros(16);
  expect_error(big_array.parse(), ErrorCode::kCorruptFile, "cannot fit");
  GgufBuilder bad_type;
  bad_type.header(0, 1).str("k").put<uint32_t>(13).zeros(16);
  expect_error(bad_type.parse(), ErrorCode::kCorruptFile, "unknown GGUF value type 13");
  GgufBuilder bad_bool;
  bad_bool.header(0, 1).key("flag", GgufType::kBool).put<uint8_t>(2);
  expect_error(bad_bool.parse(), ErrorCode::kCorruptFile, "'flag'");
  GgufBuilder dup;
  dup.header(0, 2).kv_u32("k", 1).kv_u32("k", 2);
  expect_error(dup.parse(), ErrorCode::kCorruptFile, "twice");
  GgufBuilder empty_key;
  empty_key.header(0, 1).kv_u32("", 1);
  expect_error(empty_key.parse(), ErrorCode::kCorruptFile, "empty key");
  GgufBuilder align3;
  align3.header(0, 1).kv_u32("general.alignment", 48);
  expect_error(align3.parse(), ErrorCode::kCorruptFile, "power of two");
  GgufBuilder align_type;
  align_type.header(0, 1).kv_str("general.alignment", "32");
  expect_error(align_type.parse(), ErrorCode::kCorruptFile, "uint32");
}

Result<GgufFile> one_tensor(std::vector<uint64_t> ne, uint32_t ggml_type, uint64_t offset, size_t data_bytes) {
  GgufBuilder b;
  b.header(1, 0).tensor("t", std::move(ne), ggml_type, offset).pad_to(32).zeros(data_bytes);
  return b.parse();
}

TEST(GgufParse, TensorInfoErrors) {
  ASSERT_TRUE(one_tensor({32, 2}, 2, 0, 36).ok());  // Q4_0, 2 rows of 18 bytes
  expect_error(one_tensor({256}, 13, 0, 4096), ErrorCode::kUnsupported, "ggml type 13 (q5_K)");
  expect_error(one_tensor({256}, 999, 0, 4096), ErrorCode::kUnsupported, "ggml type 999");
  expect_error(one_tensor({33, 2}, 2, 0, 4096), ErrorCode::kCorruptFile, "not a multiple of q4_0's block size 32");
  expect_error(one_tensor({100, 2}, 12, 0, 4096), ErrorCode::kCorruptFile, "block size 256");
  expect_error(one_tensor({1ull << 40, 1ull << 40}, 0, 0, 64), ErrorCode::kCorruptFile, "overflows");
  expect_error(one_tensor({1ull << 63}, 0, 0, 64), ErrorCode::kCorruptFile, "overflows");
  // A zero dimension does not hide an overflow of the others (found by gguf_fuzz under UBSan).
  expect_error(one_tensor({1ull << 40, 1ull << 40, 0}, 0, 0, 64), ErrorCode::kCorruptFile, "overflows");
  expect_error(one_tensor({0, 1ull << 40, 1ull << 40}, 0, 0, 64), ErrorCode::kCorruptFile, "overflows");
  Result<GgufFile> empty = one_tensor({32, 0, 1ull << 40}, 0, 0, 64);  // no rows: a legal, empty tensor
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_EQ(empty->tensors()[0].size_bytes, 0u);
  expect_error(one_tensor({1ull << 62}, 0, 0, 64), ErrorCode::kCorruptFile, "byte size overflows");
  expect_error(one_tensor({1, 1, 1, 1, 1}, 0, 0, 64), ErrorCode::kCorruptFile, "5 dimensions");
  expect_error(one_tensor({4}, 0, 8, 64), ErrorCode::kCorruptFile, "not a multiple of the alignment");
  expect_error(one_tensor({4}, 0, 64, 64), ErrorCode::kCorruptFile, "run past the end");
  expect_error(one_tensor({32}, 0, 0, 127), ErrorCode::kCorruptFile, "run past the end");

  GgufBuilder overlap;
  overlap.header(2, 0).tensor("x", {16}, 0, 0).tensor("y", {16}, 0, 32).pad_to(32).zeros(128);
  expect_error(overlap.parse(), ErrorCode::kCorruptFile, "overlap");
  GgufBuilder dup;
  dup.header(2, 0).tensor("x", {8}, 0, 0).tensor("x", {8}, 0, 32).pad_to(32).zeros(128);
  expect_error(dup.parse(), ErrorCode::kCorruptFile, "twice");
}

TEST(GgufParse, TensorlessFileMayEndBeforeDataPadding) {
  // llama.cpp's vocab-only GGUFs end right after the metadata, before the alignment padding.
  GgufBuilder b;
  b.header(0, 1).kv_str("general.architecture", "llama");
  ASSERT_NE(b.bytes.size() % 32, 0u);
  Result<GgufFile> f = b.parse();
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_TRUE(f->data_section().empty());
}

TEST(GgufParse, OpenReportsMissingFileAndPath) {
  Result<GgufFile> f = GgufFile::open("/nonexistent/keel/model.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(f.status().message().find("/nonexistent/keel/model.gguf"), std::string::npos);
}

}  // namespace
}  // namespace keel::format

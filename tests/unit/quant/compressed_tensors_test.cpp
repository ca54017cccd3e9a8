// compressed_tensors: every twin, repacked into compressed-tensors' parameters, decodes
// by compressed-tensors' formulas to tensorkit's own values bit for bit, and reads back
// (ct_quantized) into a Quantized that tensorkit decodes to the same values. The
// compressed-tensors side is decoded by the reference below, written from the package's
// unpack_from_int32 and _dequantize (x_q.to(scale.dtype) - zp) * scale, and nvfp4's
// e2m1 * (scale / global_scale). The package itself is checked in
// tests/interop/test_compressed_tensors_interop.py.
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tk/core/dtype.h"
#include "tk/quant/compressed_tensors.h"
#include "tk/quant/ct_model.h"
#include "tk/quant/view.h"

namespace tk::quant {
namespace {

std::vector<float> to_f32(const Tensor& t) {
  std::vector<float> out(t.numel());
  convert_to_f32(t.dtype(), t.data(), 0, t.numel(), out.data());
  return out;
}

// compressed-tensors' decoding of the parameters of a 2-D weight [rows, cols].
std::vector<float> ct_reference(const CtScheme& s, const std::map<std::string, Tensor>& p, int64_t rows, int64_t cols) {
  std::vector<float> y(static_cast<size_t>(rows * cols));
  const std::vector<float> scale = to_f32(p.at("weight_scale"));
  const DType scale_dtype = p.at("weight_scale").dtype();
  auto round_to = [&](float v) {  // arithmetic in the scale's dtype
    float out = 0;
    Tensor t = Tensor::empty(scale_dtype, {1});
    cast_array(DType::kF32, &v, scale_dtype, t.mutable_data(), 1);
    convert_to_f32(scale_dtype, t.data(), 0, 1, &out);
    return out;
  };
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float q = 0, d = 0;
      if (s.format == "pack-quantized") {
        const auto* words = p.at("weight_packed").data_as<uint32_t>() + r * ((cols * s.num_bits + 31) / 32);
        const int64_t bit = c * s.num_bits;
        uint64_t pair = words[bit / 32];
        if (bit % 32 + s.num_bits > 32) pair |= static_cast<uint64_t>(words[bit / 32 + 1]) << 32;
        const int64_t v = static_cast<int64_t>(pair >> (bit % 32) & ((1u << s.num_bits) - 1)) - (1 << (s.num_bits - 1));
        const int64_t groups = s.strategy == "group" ? cols / s.group_size : 1;
        const int64_t gi = s.strategy == "group" ? c / s.group_size : 0;
        int64_t zp = 0;
        if (!s.symmetric) {  // packed down the column of group gi, then less the offset
          const auto* z = p.at("weight_zero_point").data_as<uint32_t>();
          const int64_t zbit = r * s.num_bits;
          uint64_t zpair = z[(zbit / 32) * groups + gi];
          if (zbit % 32 + s.num_bits > 32) zpair |= static_cast<uint64_t>(z[(zbit / 32 + 1) * groups + gi]) << 32;
          zp = static_cast<int64_t>(zpair >> (zbit % 32) & ((1u << s.num_bits) - 1)) - (1 << (s.num_bits - 1));
        }
        q = static_cast<float>(v - zp);
        d = s.strategy == "tensor" ? scale[0] : scale[r * groups + gi];
        y[r * cols + c] = round_to(q * d);
      } else if (s.format == "float-quantized") {
        float w = 0;
        convert_to_f32(DType::kF8E4M3, p.at("weight").data(), r * cols + c, 1, &w);
        d = s.strategy == "channel" ? scale[r] : scale[0];
        y[r * cols + c] = w * d;
      } else {
        static const float kE2M1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
        const uint8_t byte = p.at("weight_packed").data()[(r * cols + c) / 2];
        const int code = c % 2 == 0 ? byte & 0xf : byte >> 4;
        const float e = (code & 8 ? -1.0f : 1.0f) * kE2M1[code & 7];
        const float g = p.at("weight_global_scale").data_as<float>()[0];
        y[r * cols + c] = e * (scale[r * (cols / 16) + c / 16] / g);
      }
    }
  }
  return y;
}

void expect_same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  size_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += std::memcmp(&a[i], &b[i], 4) != 0 && !(a[i] == 0 && b[i] == 0);
  EXPECT_EQ(differ, 0u);
}

struct Case {
  std::string scheme;
  QuantOptions options;
  Shape shape;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.scheme << " " << shape_to_string(c.shape); }

// The test's name: the scheme and the options that matter here.
std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  const char* g[] = {"default", "tensor", "channel", "group"};
  std::string name = c.scheme + "_" + g[static_cast<int>(c.options.granularity)] + std::to_string(c.options.group_size) +
                     "_" + dtype_name(c.options.scale_dtype) + (c.options.symmetric ? "" : "_asym");
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name + "_" + std::to_string(info.index);
}

class CtTwin : public ::testing::TestWithParam<Case> {};

TEST_P(CtTwin, DecodesAsTensorkitAndReadsBack) {
  const Case& c = GetParam();
  const int64_t rows = c.shape[0], cols = c.shape[1];
  const std::vector<float> x = test::normal_floats(static_cast<size_t>(rows * cols), 7, 0.0f, 0.05f);
  auto scheme = make_scheme(c.scheme);
  const Quantized q = scheme->quantize(x.data(), c.shape, c.options);
  std::vector<float> tk(x.size());
  dequantize_view(*scheme, q, tk.data());

  std::string why;
  const std::optional<CtScheme> s = ct_scheme_for(q, &why);
  ASSERT_TRUE(s) << why;
  std::map<std::string, Tensor> params;
  std::vector<std::string> names;
  for (auto& [name, t] : ct_params(q, *s)) {
    names.push_back(name);
    params[name] = t;
  }
  EXPECT_EQ(names, ct_param_names(*s));
  // compressed-tensors multiplies in the scale's dtype: tensorkit's f32 values rounded
  // to it (the tensor's own dtype by default, which `tquant dequant` rounds to as well).
  const std::vector<float> ct = ct_reference(*s, params, rows, cols);
  std::vector<float> rounded = tk;
  if (auto sc = params.find("weight_scale"); s->format == "pack-quantized") {
    Tensor t = Tensor::empty(sc->second.dtype(), {static_cast<int64_t>(tk.size())});
    cast_array(DType::kF32, tk.data(), sc->second.dtype(), t.mutable_data(), tk.size());
    rounded = to_f32(t);
  }
  expect_same_bits(rounded, ct);

  const Quantized back = ct_quantized(*s, params);
  std::vector<float> again(x.size());
  dequantize_view(*make_scheme(back.scheme), back, again.data());
  expect_same_bits(tk, again);
}

QuantOptions with(Granularity g, int64_t group, DType scale_dtype) {
  QuantOptions o;
  o.granularity = g;
  o.group_size = group;
  o.scale_dtype = scale_dtype;
  return o;
}

QuantOptions asym(Granularity g, int64_t group, DType scale_dtype) {
  QuantOptions o = with(g, group, scale_dtype);
  o.symmetric = false;
  o.integer_zero_point = true;
  return o;
}

INSTANTIATE_TEST_SUITE_P(
    Schemes, CtTwin,
    ::testing::Values(Case{"int4", with(Granularity::kGroup, 32, DType::kF16), {6, 96}},
                      Case{"int4", with(Granularity::kGroup, 128, DType::kBF16), {5, 256}},
                      Case{"int8", with(Granularity::kGroup, 64, DType::kF32), {4, 128}},
                      Case{"int3", with(Granularity::kGroup, 32, DType::kF32), {3, 64}},
                      Case{"int4", with(Granularity::kChannel, 0, DType::kF32), {7, 45}},  // rows padded to 48
                      Case{"int6", with(Granularity::kTensor, 0, DType::kF16), {3, 37}},
                      Case{"int2", with(Granularity::kGroup, 16, DType::kF32), {2, 48}},
                      Case{"int4", asym(Granularity::kGroup, 32, DType::kF16), {7, 64}},
                      Case{"int8", asym(Granularity::kChannel, 0, DType::kBF16), {9, 40}},
                      Case{"int3", asym(Granularity::kGroup, 16, DType::kF32), {11, 48}},
                      Case{"fp8_e4m3", with(Granularity::kDefault, 0, DType::kF16), {5, 40}},
                      Case{"fp8_e4m3", with(Granularity::kChannel, 0, DType::kF16), {5, 40}},
                      Case{"nvfp4", [] {
                             QuantOptions o;
                             o.power_of_two_tensor_scale = true;
                             return o;
                           }(),
                           {4, 64}}),
    case_name);

TEST(CtScheme, NoTwinSaysWhy) {
  const std::vector<float> x = test::normal_floats(4 * 48, 3);
  std::string why;
  QuantOptions asym;
  asym.symmetric = false;
  EXPECT_FALSE(ct_scheme_for(make_scheme("int4")->quantize(x.data(), Shape{4, 48}, asym), &why));
  EXPECT_NE(why.find("zero points"), std::string::npos) << why;
  // Groups of 32 do not divide 48 columns: the rows are padded.
  EXPECT_FALSE(ct_scheme_for(make_scheme("int4")->quantize(x.data(), Shape{4, 48}, {}), &why));
  EXPECT_NE(why.find("whole groups"), std::string::npos) << why;
  EXPECT_FALSE(ct_scheme_for(make_scheme("int4")->quantize(x.data(), Shape{2, 2, 48}, with(Granularity::kGroup, 16, DType::kF16)), &why));
  EXPECT_NE(why.find("2-D"), std::string::npos) << why;
  // nvfp4's tensor scale amax / 2688 is no power of two unless asked for.
  EXPECT_FALSE(ct_scheme_for(make_scheme("nvfp4")->quantize(x.data(), Shape{4, 48}, {}), &why));
  EXPECT_NE(why.find("power of two"), std::string::npos) << why;
  EXPECT_FALSE(ct_scheme_for(make_scheme("nf4")->quantize(x.data(), Shape{4, 64}, {}), &why));
  EXPECT_NE(why.find("no format for nf4"), std::string::npos) << why;
}

TEST(CtQuantized, RefusesMalformedParameters) {
  const CtScheme s{"pack-quantized", "int", 4, "group", 32, true};
  const std::vector<float> x = test::normal_floats(2 * 64, 5);
  const Quantized q = make_scheme("int4")->quantize(x.data(), Shape{2, 64}, with(Granularity::kGroup, 32, DType::kF16));
  std::map<std::string, Tensor> params;
  for (auto& [name, t] : ct_params(q, s)) params[name] = t;

  auto without = params;
  without.erase("weight_scale");
  EXPECT_EQ(test::kind_of([&] { ct_quantized(s, without); }), ErrorKind::kInvalidInput);
  auto huge = params;
  huge["weight_shape"].mutable_data_as<int64_t>()[1] = int64_t{1} << 40;  // more than the packed words hold
  EXPECT_EQ(test::kind_of([&] { ct_quantized(s, huge); }), ErrorKind::kInvalidInput);
  auto wrong = params;
  wrong["weight_packed"] = Tensor::zeros(DType::kU8, {2, 32});
  EXPECT_EQ(test::kind_of([&] { ct_quantized(s, wrong); }), ErrorKind::kInvalidInput);
  CtScheme asym = s;
  asym.symmetric = false;
  EXPECT_EQ(test::kind_of([&] { ct_quantized(asym, params); }), ErrorKind::kInvalidInput);
}

TEST(CtConfig, WritesAndParsesGroups) {
  CtConfig c;
  c.groups.push_back({CtScheme{"pack-quantized", "int", 4, "group", 128, true}, {"model.layers.0.mlp.down_proj"}});
  c.groups.push_back({CtScheme{"float-quantized", "float", 8, "channel", 0, true}, {"model.layers.0.self_attn.q_proj"}});
  const std::string text = "{\"torch_dtype\": \"bfloat16\", \"quantization_config\": " + ct_quantization_config(c) + "}";
  const std::optional<CtConfig> back = ct_config_parse(text);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->groups.size(), 2u);
  EXPECT_EQ(back->groups[0].scheme, c.groups[0].scheme);
  EXPECT_EQ(back->groups[1].scheme, c.groups[1].scheme);
  EXPECT_EQ(back->dtype, DType::kBF16);
  EXPECT_NE(text.find("\"mixed-precision\""), std::string::npos);
  EXPECT_EQ(ct_group_for(*back, "model.layers.0.mlp.down_proj"), &back->groups[0]);
  EXPECT_EQ(ct_group_for(*back, "model.layers.0.mlp.up_proj"), nullptr);

  // As llm-compressor writes it: a class target, a pattern in ignore.
  const std::optional<CtConfig> llmc = ct_config_parse(R"({"quantization_config": {"quant_method": "compressed-tensors",
    "format": "pack-quantized", "ignore": ["re:.*lm_head"], "config_groups": {"group_0": {"targets": ["Linear"],
    "weights": {"num_bits": 4, "type": "int", "symmetric": true, "strategy": "group", "group_size": 128}}}}})");
  ASSERT_TRUE(llmc);
  EXPECT_EQ(ct_group_for(*llmc, "model.layers.3.mlp.gate_proj"), &llmc->groups[0]);
  EXPECT_EQ(ct_group_for(*llmc, "lm_head"), nullptr);

  EXPECT_FALSE(ct_config_parse("{\"architectures\": [\"BertModel\"]}"));
  EXPECT_FALSE(ct_config_parse("not json"));
  EXPECT_FALSE(ct_config_parse(R"({"quantization_config": {"quant_method": "gptq"}})"));
  EXPECT_EQ(test::kind_of([] {
              ct_config_parse(R"({"quantization_config": {"quant_method": "compressed-tensors", "config_groups":
                {"g": {"targets": ["Linear"], "weights": {"num_bits": 99}}}}})");
            }),
            ErrorKind::kInvalidInput);
}

TEST(CtConfig, PatternsMatchAsReMatchInLinearTime) {
  auto config_with = [](const std::string& target, const std::string& ignore = "") {
    nlohmann::json qc = {{"quant_method", "compressed-tensors"},
                         {"config_groups", {{"g", {{"targets", {target}}, {"weights", {{"num_bits", 4}}}}}}},
                         {"ignore", {ignore}}};
    std::optional<CtConfig> c = ct_config_parse(nlohmann::json{{"quantization_config", qc}}.dump());
    if (!c) throw std::runtime_error("not a compressed-tensors config");
    return *c;
  };
  const std::string name = std::string(40, 'a');
  // re.match: anchored at the start of the name, not at its end.
  EXPECT_TRUE(ct_group_for(config_with("re:a{3}"), name));
  EXPECT_FALSE(ct_group_for(config_with("re:a{3}$"), name));
  EXPECT_FALSE(ct_group_for(config_with("re:b"), "ab"));
  EXPECT_TRUE(ct_group_for(config_with("re:b|a"), "ab"));
  EXPECT_TRUE(ct_group_for(config_with("re:.*layers\\.\\d+\\.mlp"), "model.layers.12.mlp.up_proj"));
  // A pattern that backtracking takes 2^40 steps for, in the ignore list checked first.
  EXPECT_TRUE(ct_group_for(config_with(name, "re:(a|aa)*c"), name));
  EXPECT_TRUE(ct_group_for(config_with("re:(a*)*$"), name + "b") == nullptr);
  // A config changed by hand compiles its new pattern when used.
  CtConfig edited = config_with("x");
  edited.groups[0].targets = {"re:a+"};
  EXPECT_TRUE(ct_group_for(edited, name));
  // What RE2 does not take (Python's backreferences, lookaround) is refused up front.
  EXPECT_EQ(test::kind_of([&] { config_with("re:(a)\\1"); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(test::kind_of([&] { config_with("re:a(?=b)"); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(test::kind_of([&] { config_with("re:" + std::string(2000, 'a')); }), ErrorKind::kInvalidInput);
}

TEST(CtModel, ConfigIsTheSourceTextWithTheMemberAppended) {
  CtConfig ct;
  ct.groups.push_back({CtScheme{"pack-quantized", "int", 4, "group", 32, true}, {"layers.0.q_proj"}});
  const std::string source = "{\n  \"architectures\": [\"Toy\"],\n  \"torch_dtype\": \"bfloat16\"\n}\n";
  const std::string out = ct_model_config(source, ct);
  EXPECT_EQ(out.substr(0, source.size() - 3), source.substr(0, source.size() - 3));
  EXPECT_EQ(out.substr(source.size() - 3, 28), ",\n  \"quantization_config\": {");
  const std::optional<CtConfig> back = ct_config_parse(out);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->groups[0].targets, ct.groups[0].targets);
  EXPECT_EQ(back->dtype, DType::kBF16);
  EXPECT_TRUE(ct_config_parse(ct_model_config("", ct)));
  // The JSON policy: too deep, not an object; and a model quantized already.
  const std::string deep = "{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(test::kind_of([&] { ct_model_config(deep, ct); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(test::kind_of([&] { ct_model_config("[]", ct); }), ErrorKind::kInvalidInput);
  EXPECT_EQ(test::kind_of([&] { ct_model_config(out, ct); }), ErrorKind::kUsage);
}

TEST(CtModel, ModuleOfAWeight) {
  EXPECT_EQ(ct_module_of("encoder.layer.0.attention.self.query.weight"), "encoder.layer.0.attention.self.query");
  EXPECT_EQ(ct_module_of("encoder.layer.0.attention.self.query.bias"), "");
  EXPECT_EQ(ct_module_of(".weight"), "");
  EXPECT_EQ(ct_module_of("weight"), "");
}

}  // namespace
}  // namespace tk::quant

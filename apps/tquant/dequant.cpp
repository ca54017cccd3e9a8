// tquant dequant IN -o OUT: dense tensors again, from the parts and the metadata alone.
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/input.h"
#include "cli/output.h"
#include "cli/provenance.h"
#include "cli/report.h"
#include "cli/std_streams.h"
#include "tk/core/error.h"
#include "tk/quant/layout.h"
#include "tk/quant/view.h"
#include "tquant.h"

namespace tk::tquant {

namespace {

std::optional<DType> parse_dtype(const std::string& text) {
  if (text.empty()) return std::nullopt;
  auto d = dtype_parse(text);
  if (!d || (*d != DType::kF32 && *d != DType::kBF16 && *d != DType::kF16)) {
    throw usage_error("expected f32, bf16 or f16, got '" + text + "'", "--dtype");
  }
  return d;
}

struct Slot {
  size_t input_index = 0;
  const std::string* record = nullptr;  // dequantize this record, else copy the input
};

// Restore one record as a tensor of `dtype`.
Tensor restore(const std::string& name, const quant::LayoutRecord& record, DType dtype,
               const std::function<Tensor(const std::string&)>& read_part) {
  std::unique_ptr<quant::Scheme> scheme;
  try {
    scheme = quant::make_scheme(record.scheme);
  } catch (const Error&) {
    throw invalid_input("unknown scheme '" + record.scheme + "' in the metadata", "tensor '" + name + "'");
  }
  std::map<std::string, Tensor> parts;
  uint64_t part_bits = 0;
  for (const std::string& suffix : record.parts) {
    Tensor t = read_part(quant::layout_part_name(name, suffix));
    part_bits += t.nbytes() * 8;
    parts[suffix] = std::move(t);
  }
  uint64_t n = shape_numel(record.shape);
  // No scheme stores less than 1/64 bit per value: a larger shape is a corrupt record,
  // not a reason to allocate.
  if (n > part_bits * 64 + 64) throw invalid_input("shape too large for its parts", "tensor '" + name + "'");
  quant::Quantized q = quant::layout_collect(name, record, [&](const std::string& part) -> const Tensor* {
    return &parts.at(part.substr(name.size() + 1));
  });
  std::vector<float> values(n);
  try {
    quant::dequantize_view(*scheme, q, values.data());
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidInput) throw;
    throw invalid_input(e.message(), "tensor '" + name + "'");
  }
  Tensor out = Tensor::empty(dtype, record.shape);
  cast_array(DType::kF32, values.data(), dtype, out.mutable_data(), n);
  return out;
}

}  // namespace

int run_dequant(cli::Tool& tool, const DequantArgs& args) {
  io::FileFormat format = cli::output_format(args.output, args.format);
  std::optional<DType> cast = parse_dtype(args.dtype);
  cli::check_binary_input({args.input}, cli::stdin_is_terminal());
  tool.check_output(args.output, {args.input});
  if (tool.options().json && *tool.options().json == "-" && args.output == "-") {
    throw usage_error("--json - and -o - both want stdout; give one of them a file");
  }

  auto reader = cli::open_seekable_reader(tool, args.input);
  const std::string where = io::input_display_name(args.input);
  io::Metadata metadata = reader->metadata();
  auto tk_value = metadata.find(cli::kTkMetadataKey);
  if (tk_value == metadata.end()) throw invalid_input("no quantization metadata (no tk metadata key)", where);
  std::map<std::string, quant::LayoutRecord> records;
  try {
    records = quant::layout_metadata_parse(tk_value->second);
  } catch (const Error& e) {
    throw e.with_context(where);
  }
  tk_value->second = quant::layout_metadata_strip(tk_value->second);
  tool.stamp(metadata);

  // Every part must exist; the record's tensor takes the place of its first part.
  std::map<std::string, const std::string*> owner;
  for (const auto& [name, record] : records) {
    if (reader->find(name)) throw invalid_input("tensor is both quantized and stored densely", "tensor '" + name + "'");
    for (const std::string& suffix : record.parts) {
      std::string part = quant::layout_part_name(name, suffix);
      if (!reader->find(part)) throw quant::layout_missing_part(name, suffix).with_context(where);
      owner[part] = &name;
    }
    if (record.parts.empty()) throw invalid_input("quantized tensor without parts", "tensor '" + name + "'");
  }
  std::vector<io::TensorInfo> infos;
  std::vector<Slot> slots;
  std::set<const std::string*> placed;
  for (size_t i = 0; i < reader->tensors().size(); ++i) {
    const io::TensorInfo& in = reader->tensors()[i];
    auto it = owner.find(in.name);
    if (it == owner.end()) {
      io::TensorInfo out = in;
      if (cast && dtype_is_float(in.dtype)) {
        out.dtype = *cast;
        out.nbytes = dtype_storage_bytes(*cast, shape_numel(in.shape));
      }
      infos.push_back(out);
      slots.push_back({i, nullptr});
    } else if (placed.insert(it->second).second) {
      const quant::LayoutRecord& r = records.at(*it->second);
      DType dtype = cast.value_or(r.dtype);
      infos.push_back({*it->second, dtype, r.shape, dtype_storage_bytes(dtype, shape_numel(r.shape))});
      slots.push_back({i, it->second});
    }
  }

  // Parts are read by name (a pipe was spooled to a temporary file).
  auto read_index = [&](size_t i) { return reader->read(i); };
  auto read_part = [&](const std::string& part) { return read_index(*reader->find(part)); };
  // A passed-through float tensor in the --dtype asked for.
  auto pass = [&](size_t i, DType dtype) {
    Tensor t = read_index(i);
    if (t.dtype() == dtype) return t;
    Tensor out = Tensor::empty(dtype, t.shape());
    cast_array(t.dtype(), t.data(), dtype, out.mutable_data(), t.numel());
    return out;
  };

  io::WriteOptions options;
  options.format = format;
  auto writer = io::open_writer(args.output, options);
  for (size_t k : writer->begin(infos, metadata)) {
    const Slot& s = slots[k];
    writer->write(k, s.record ? restore(*s.record, records.at(*s.record), infos[k].dtype, read_part)
                              : pass(s.input_index, infos[k].dtype));
  }
  writer->finish();
  const size_t passed = infos.size() - records.size();
  tool.summary(fmt::format("{} restored, {} passed through", records.size(), passed));
  if (const auto& json = tool.options().json) {
    nlohmann::json tensors = nlohmann::json::array();
    for (size_t k = 0; k < infos.size(); ++k) {
      const auto* record = slots[k].record ? &records.at(*slots[k].record) : nullptr;
      nlohmann::json t = {{"name", infos[k].name},
                          {"action", record ? "restore" : "pass"},
                          {"dtype", dtype_name(infos[k].dtype)},
                          {"shape", infos[k].shape},
                          {"bytes", infos[k].nbytes}};
      if (record) t["scheme"] = record->scheme;
      tensors.push_back(std::move(t));
    }
    cli::write_json({{"input", args.input},
                     {"output", args.output},
                     {"tensors", std::move(tensors)},
                     {"totals", {{"restored", records.size()}, {"passed", passed}}}},
                    *json);
  }
  return cli::kExitOk;
}

}  // namespace tk::tquant

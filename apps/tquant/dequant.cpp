// tquant dequant IN -o OUT: dense tensors again, from the parts and the metadata alone.
#include <fmt/format.h>

#include "cli/input.h"
#include "cli/output.h"
#include "cli/path_args.h"
#include "cli/provenance.h"
#include "cli/report.h"
#include "cli/std_streams.h"
#include "tk/core/error.h"
#include "tk/device/device.h"
#include "tk/quant/dequant_reader.h"
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

}  // namespace

int run_dequant(cli::Tool& tool, const DequantArgs& args) {
  io::FileFormat format = cli::output_format(args.output, args.format);
  std::optional<DType> cast = parse_dtype(args.dtype);
  cli::check_binary_input({args.input}, cli::stdin_is_terminal());
  tool.check_output(args.output, {args.input});
  tool.options().check_one_stdout(args.output);

  std::unique_ptr<io::TensorReader> inner = cli::open_seekable_reader(tool, args.input);
  const std::string name = cli::input_display_name(args.input);
  std::unique_ptr<quant::DequantReader> opened =
      quant::open_dequant_reader(inner, cli::file_path(args.input), name, cast, true);
  // Neither tquant's nor GGUF nor compressed-tensors: the reader says what is missing.
  if (!opened) opened = std::make_unique<quant::DequantReader>(std::move(inner), name, cast);
  quant::DequantReader& reader = *opened;
  // The GPU decodes the integer schemes: every tensor under --device cuda, under auto
  // those large enough to pay for their copies there and back.
  constexpr uint64_t kGpuMinValues = uint64_t{1} << 20;
  const device::Placement where = device::place(tool.options().device, kGpuMinValues, kGpuMinValues, true, "dequant");
  const bool asked = tool.options().device.kind == device::Request::Kind::kCuda;
  reader.decode_on(where.cuda ? where.index : -1, asked ? 0 : kGpuMinValues);
  io::Metadata metadata = reader.metadata();
  tool.stamp(metadata);
  const auto& infos = reader.tensors();

  io::WriteOptions options;
  options.format = format;
  auto writer = cli::open_writer(args.output, options);
  for (size_t k : writer->begin(infos, metadata)) {
    writer->write(k, reader.read(k));
    reader.release(k);
  }
  writer->finish();
  const size_t restored = reader.quantized_count(), passed = infos.size() - restored;
  tool.summary(fmt::format("{} restored, {} passed through", restored, passed));
  if (const auto& json = tool.options().json) {
    nlohmann::json tensors = nlohmann::json::array();
    for (size_t k = 0; k < infos.size(); ++k) {
      const quant::LayoutRecord* record = reader.record(k);
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
                     {"totals", {{"restored", restored}, {"passed", passed}}}},
                    *json);
  }
  return cli::kExitOk;
}

}  // namespace tk::tquant

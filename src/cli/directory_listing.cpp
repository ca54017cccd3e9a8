#include "cli/directory_listing.h"

#include <fmt/format.h>

#include "cli/number_format.h"

namespace tk::cli {

using nlohmann::json;

DirectoryTable step_table(const std::vector<ckpt::StepListing>& steps, const std::set<uint64_t>& durable,
                          std::vector<Error>& invalid) {
  DirectoryTable out{TextTable({"STEP", "CREATED", "TENSORS", "SIZE", "STORED", "STATE", "PARENT"})};
  for (const auto& listed : steps) {
    if (listed.error) {
      const Error& e = *listed.error;
      invalid.push_back(e);
      out.table.add_row({std::to_string(listed.step), "-", "-", "-", "-", "invalid", "-"});
      out.rows.push_back({{"step", listed.step},
                          {"state", "invalid"},
                          {"error", (e.where().empty() ? "" : e.where() + ": ") + e.message()}});
      continue;
    }
    const ckpt::StepInfo& s = *listed.info;
    const std::string state = durable.count(s.step) > 0 ? "flushed" : "committed";
    out.table.add_row({std::to_string(s.step), s.created, std::to_string(s.tensors), format_bytes(s.logical_bytes),
                       format_bytes(s.stored_bytes), state, s.parent ? std::to_string(*s.parent) : "-"});
    out.rows.push_back({{"step", s.step},
                        {"created", s.created},
                        {"tensors", s.tensors},
                        {"logical_bytes", s.logical_bytes},
                        {"stored_bytes", s.stored_bytes},
                        {"state", state},
                        {"parent", s.parent ? json(*s.parent) : json(nullptr)},
                        {"metadata", s.metadata}});
    if (s.world_size) out.rows.back()["world_size"] = s.world_size;
  }
  return out;
}

void throw_invalid_steps(const std::vector<Error>& invalid) {
  if (invalid.empty()) return;
  std::string more = invalid.size() > 1 ? fmt::format(" (and {} more invalid steps)", invalid.size() - 1) : "";
  throw Error(ErrorKind::kInvalidInput, invalid.front().message() + more, invalid.front().where());
}

std::string ratio_text(uint64_t logical, uint64_t stored) {
  if (stored == 0) return "-";
  return fmt::format("{:.2f}", static_cast<double>(logical) / static_cast<double>(stored));
}

json ratio_json(uint64_t logical, uint64_t stored) {
  if (stored == 0) return nullptr;
  return static_cast<double>(logical) / static_cast<double>(stored);
}

json store_file_json(const store::StoreFileInfo& f) {
  return {{"name", f.name},
          {"kind", f.kind},
          {"base", f.base.empty() ? json(nullptr) : json(f.base)},
          {"created", f.created},
          {"sha256", f.sha256},
          {"logical_bytes", f.logical_bytes},
          {"stored_bytes", f.stored_bytes},
          {"unique_bytes", f.unique_bytes},
          {"ratio", ratio_json(f.logical_bytes, f.stored_bytes)},
          {"tensors", f.tensors},
          {"objects", f.objects}};
}

DirectoryTable store_table(const store::StoreStats& stats) {
  DirectoryTable out{TextTable({"NAME", "KIND", "SIZE", "STORED", "TENSORS", "BASE", "ADDED"})};
  for (const auto& f : stats.files) {
    out.table.add_row({f.name, f.kind, format_bytes(f.logical_bytes), format_bytes(f.stored_bytes),
                       std::to_string(f.tensors), f.base.empty() ? "-" : f.base, f.created});
    out.rows.push_back(store_file_json(f));
  }
  return out;
}

}  // namespace tk::cli

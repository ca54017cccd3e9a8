// The directories the tools write, as tables and JSON rows: the steps of a checkpoint
// directory (`tckpt ls`, `tinfo DIR`) and the files of a model store (`tcompress store
// ls`, `tinfo STORE`). One source for both views, so they never disagree.
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/report.h"
#include "tk/ckpt/checkpoint.h"
#include "tk/store/store.h"

namespace tk::cli {

struct DirectoryTable {
  TextTable table;
  nlohmann::json rows = nlohmann::json::array();
};

// STEP CREATED TENSORS SIZE STORED STATE PARENT, one row per step; a step in `durable`
// is "flushed", one whose manifest could not be read "invalid" (its error is added to
// `invalid`).
DirectoryTable step_table(const std::vector<ckpt::StepListing>& steps, const std::set<uint64_t>& durable,
                          std::vector<Error>& invalid);

// kInvalidInput for the first of `invalid` ("... (and N more invalid steps)"); nothing
// when it is empty.
void throw_invalid_steps(const std::vector<Error>& invalid);

// NAME KIND SIZE STORED TENSORS BASE ADDED, one row per stored file.
DirectoryTable store_table(const store::StoreStats& stats);

// A store file's JSON row.
nlohmann::json store_file_json(const store::StoreFileInfo& file);

// Logical over stored bytes: "1.52" ("-" when nothing is stored); JSON null then.
std::string ratio_text(uint64_t logical, uint64_t stored);
nlohmann::json ratio_json(uint64_t logical, uint64_t stored);

}  // namespace tk::cli

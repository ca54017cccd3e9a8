// tdecomp rank spread over processes: the realisations of one process as JSON (the
// --partial file of a job-array task, and what an MPI rank sends to rank 0), read back
// with every claim checked, and the MPI form of the sweep.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tk/core/shape.h"
#include "tk/decomp/rank_select.h"
#include "tk/dist/comm.h"

namespace tk::tdecomp {

// The options every part of one sweep must share (the threshold only scores: it may
// differ at the merge).
struct SweepKey {
  std::string method;  // "cp" or "rescal"
  decomp::RankSelectOptions options;
};

// One tensor's realisations fitted by one process.
struct TensorPart {
  std::string name;
  Shape shape;
  std::vector<decomp::Realisation> realisations;
};

// Task `index` of `count`: realisation j of the grid, in grid order (rank, then
// index), is the task's when j % count == index.
struct Task {
  int index = 0, count = 1;
};
Task task_parse(const std::string& text);  // "I/N"; kUsage otherwise
decomp::RealisationFilter task_filter(const Task& task, const decomp::RankSelectOptions& options);

nlohmann::json part_json(const SweepKey& key, const Task& task, const std::vector<TensorPart>& tensors);
// Parse a part; kInvalidInput (naming `where`) when it is not one, or was made with
// other options than `key`'s.
std::vector<TensorPart> part_parse(const nlohmann::json& doc, const SweepKey& key, const std::string& where);
// Read a --partial file.
std::vector<TensorPart> part_read(const std::string& path, const SweepKey& key);

// Under MPI: run `fit` (this rank's parts) on every rank; rank 0 gets every rank's
// parts and runs `finish` on them. The outcome (success, or the first rank's error, in
// rank order) reaches every rank: each returns or throws the same error, so that every
// rank stops with the same message and exit code and none waits for a failed one.
void run_on_ranks(dist::Comm& comm, const SweepKey& key, const Task& task,
                  const std::function<std::vector<TensorPart>()>& fit,
                  const std::function<void(std::vector<std::vector<TensorPart>>)>& finish);

}  // namespace tk::tdecomp

// The C interface of the distributed checkpointer (tk_ckpt_dist.h) over
// tk::ckpt::DistCheckpointer, with the conventions of c_api.cpp.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tk/ckpt/c_api_internal.h"
#include "tk/ckpt/dist_checkpoint.h"
#include "tk_ckpt_dist.h"

struct tk_dckpt {
  std::unique_ptr<tk::ckpt::DistCheckpointer> impl;
};

namespace {

using namespace tk::ckpt::capi;

// The C++ view of a caller's slice descriptor; the data stays the caller's.
tk::ckpt::DistSlice slice_from(const tk_dckpt_slice& s, size_t index) {
  if (s.name == nullptr || *s.name == '\0') throw usage_error("slice has no name", "slice #" + std::to_string(index));
  const std::string where = "tensor '" + std::string(s.name) + "'";
  if (s.dtype == nullptr) throw usage_error("dtype is NULL", where);
  std::optional<tk::DType> dtype = tk::dtype_from_safetensors_name(s.dtype);
  if (!dtype) throw usage_error("unknown dtype '" + std::string(s.dtype) + "'", where);
  if (s.ndim < 0 || s.ndim > 64) throw usage_error("ndim out of range", where);
  if (s.ndim > 0 && s.global_shape == nullptr) throw usage_error("global_shape is NULL", where);
  tk::ckpt::DistSlice out;
  out.name = s.name;
  out.dtype = *dtype;
  out.global_shape.assign(s.global_shape, s.global_shape + s.ndim);
  if (s.offsets) out.offsets.assign(s.offsets, s.offsets + s.ndim);
  if (s.shape) out.shape.assign(s.shape, s.shape + s.ndim);
  for (int64_t d : out.global_shape)
    if (d < 0) throw usage_error("negative dimension in the global shape", where);
  out.data = static_cast<uint8_t*>(s.data);
  out.nbytes = s.nbytes;
  out.replicated = s.replicated != 0;
  return out;
}

std::vector<tk::ckpt::DistSlice> slices_from(const tk_dckpt_slice* slices, size_t count) {
  if (count > 0) require(slices, "slices");
  std::vector<tk::ckpt::DistSlice> out;
  for (size_t i = 0; i < count; ++i) out.push_back(slice_from(slices[i], i));
  return out;
}

}  // namespace

extern "C" {

void tk_dckpt_options_init(tk_dckpt_options* options) {
  if (options == nullptr) return;
  const tk::ckpt::DistOptions d;
  *options = tk_dckpt_options{};
  options->timeout_seconds = d.timeout_seconds;
  options->threads = d.threads;
}

int tk_dckpt_open(const char* dir, tk_dckpt_comm comm, const tk_dckpt_options* options, tk_dckpt** out) {
  return guarded([&] {
    require(dir, "dir");
    require(out, "out");
    tk_dckpt_options o;
    tk_dckpt_options_init(&o);
    if (options) o = *options;
    tk::ckpt::DistOptions d;
    d.timeout_seconds = o.timeout_seconds;
    d.threads = o.threads;
    if (o.local_dir) d.local_dir = o.local_dir;
    d.keep_last = o.keep_last;
    d.staging_bytes = o.staging_bytes;
    auto handle = std::make_unique<tk_dckpt>();
    handle->impl = std::make_unique<tk::ckpt::DistCheckpointer>(dir, tk::dist::mpi_comm(comm), d);
    *out = handle.release();
    return TK_CKPT_OK;
  });
}

namespace {

int start_save(tk_dckpt* ckpt, uint64_t step, const tk_dckpt_slice* slices, size_t count,
               tk::ckpt::DistCheckpointer::Snapshot snapshot) {
  return guarded([&] {
    require(ckpt, "ckpt");
    std::vector<tk::ckpt::DistSlice> converted;
    try {
      converted = slices_from(slices, count);
    } catch (const tk::Error& e) {
      // Still take part in the save, so that wait() fails on every rank.
      ckpt->impl->save_async_refused(step, e);
    }
    ckpt->impl->save_async(step, converted, snapshot);
    return TK_CKPT_OK;
  });
}

}  // namespace

int tk_dckpt_save_async(tk_dckpt* ckpt, uint64_t step, const tk_dckpt_slice* slices, size_t count) {
  return start_save(ckpt, step, slices, count, tk::ckpt::DistCheckpointer::Snapshot::kNow);
}

int tk_dckpt_save_lazy(tk_dckpt* ckpt, uint64_t step, const tk_dckpt_slice* slices, size_t count) {
  return start_save(ckpt, step, slices, count, tk::ckpt::DistCheckpointer::Snapshot::kLazy);
}

int tk_dckpt_snapshot_wait(tk_dckpt* ckpt) {
  return guarded([&] {
    require(ckpt, "ckpt");
    ckpt->impl->snapshot_wait();
    return TK_CKPT_OK;
  });
}

int tk_dckpt_wait(tk_dckpt* ckpt, tk_dckpt_stats* stats) {
  return guarded([&] {
    require(ckpt, "ckpt");
    tk::ckpt::DistSaveStats s = ckpt->impl->wait();
    if (stats) {
      stats->step = s.step;
      stats->stall_seconds = s.stall_seconds;
      stats->write_seconds = s.write_seconds;
      stats->commit_seconds = s.commit_seconds;
      stats->written_bytes = s.written_bytes;
      stats->step_bytes = s.step_bytes;
    }
    return TK_CKPT_OK;
  });
}

int tk_dckpt_flush(tk_dckpt* ckpt) {
  return guarded([&] {
    require(ckpt, "ckpt");
    ckpt->impl->flush();
    return TK_CKPT_OK;
  });
}

int tk_dckpt_flush_status(const tk_dckpt* ckpt, tk_ckpt_flush_report* status) {
  return guarded([&] {
    require(ckpt, "ckpt");
    require(status, "status");
    tk::ckpt::DistFlushStatus s = ckpt->impl->flush_status();
    uint64_t pending = 0;
    for (const auto& lag : s.steps) pending += lag.durable ? 0 : 1;
    *status = flush_report(s.latest_committed, s.latest_durable, pending, s.steps.empty() ? 0 : s.steps.back().lag_seconds);
    return TK_CKPT_OK;
  });
}

int tk_dckpt_step_lag(const tk_dckpt* ckpt, uint64_t step, double* seconds) {
  return guarded([&] {
    require(ckpt, "ckpt");
    require(seconds, "seconds");
    for (const auto& lag : ckpt->impl->flush_status().steps) {
      if (lag.step != step) continue;
      *seconds = lag.lag_seconds;
      if (lag.error) throw *lag.error;
      return lag.durable ? TK_CKPT_OK : TK_CKPT_NONE;
    }
    throw usage_error("step " + std::to_string(step) + " was not committed through this handle with a node-local tier");
  });
}

int tk_dckpt_latest(const tk_dckpt* ckpt, uint64_t* step) {
  return guarded([&] {
    require(ckpt, "ckpt");
    require(step, "step");
    auto latest = ckpt->impl->latest();
    if (!latest) return TK_CKPT_NONE;
    *step = *latest;
    return TK_CKPT_OK;
  });
}

int tk_dckpt_step_world_size(const tk_dckpt* ckpt, uint64_t step, uint64_t* world_size) {
  return guarded([&] {
    require(ckpt, "ckpt");
    require(world_size, "world_size");
    *world_size = ckpt->impl->world_size(step);
    return TK_CKPT_OK;
  });
}

int tk_dckpt_restore(const tk_dckpt* ckpt, uint64_t step, const tk_dckpt_slice* wanted, size_t count) {
  return guarded([&] {
    require(ckpt, "ckpt");
    ckpt->impl->restore(step, slices_from(wanted, count));
    return TK_CKPT_OK;
  });
}

int tk_dckpt_close(tk_dckpt* ckpt) {
  if (ckpt == nullptr) return TK_CKPT_OK;
  int status = guarded([&] {
    if (ckpt->impl->pending() && !ckpt->impl->broken()) ckpt->impl->wait();
    return TK_CKPT_OK;
  });
  guarded([&] {
    delete ckpt;
    return TK_CKPT_OK;
  });
  return status;
}

}  // extern "C"

// The C interface (tk_ckpt.h) over tk::ckpt::Checkpointer. Every entry point runs its
// body inside guarded(), which turns any exception into a status and a thread-local
// message, so nothing is thrown across the C boundary.
#include "tk_ckpt.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tk/ckpt/c_api_internal.h"
#include "tk/ckpt/checkpoint.h"
#include "tk/core/error.h"

struct tk_ckpt {
  std::unique_ptr<tk::ckpt::Checkpointer> impl;
};

struct tk_ckpt_step {
  tk::ckpt::StepInfo info;
};

namespace {

using tk::ErrorKind;
using tk::usage_error;
using namespace tk::ckpt::capi;

// Wrap a caller's tensor descriptor without copying its data, after checking that the
// descriptor is consistent in itself (whether it matches a step is the engine's job).
tk::ckpt::NamedTensor borrow_tensor(const tk_ckpt_tensor& t, size_t index, bool writable) {
  if (t.name == nullptr || *t.name == '\0') {
    throw usage_error("tensor has no name", "tensor #" + std::to_string(index));
  }
  std::string where = "tensor '" + std::string(t.name) + "'";
  if (t.dtype == nullptr) throw usage_error("dtype is NULL", where);
  std::optional<tk::DType> dtype = tk::dtype_from_safetensors_name(t.dtype);
  if (!dtype) {
    throw usage_error("unknown dtype '" + std::string(t.dtype) +
                          "' (expected a safetensors name such as F32 or BF16)", where);
  }
  if (t.ndim < 0) throw usage_error("ndim is negative", where);
  if (t.ndim > 0 && t.shape == nullptr) throw usage_error("shape is NULL", where);
  tk::Shape shape(t.shape, t.shape + t.ndim);
  for (int64_t d : shape) {
    if (d < 0) throw usage_error("negative dimension in shape " + tk::shape_to_string(shape), where);
  }
  uint64_t expected = 0;
  try {
    expected = tk::dtype_storage_bytes(*dtype, tk::shape_numel(shape));
  } catch (const tk::Error& e) {
    throw usage_error(std::string(e.message()) + " for shape " + tk::shape_to_string(shape), where);
  }
  if (t.nbytes != expected) {
    throw usage_error("nbytes is " + std::to_string(t.nbytes) + " but " + tk::dtype_name(*dtype) + " " +
                          tk::shape_to_string(shape) + " needs " + std::to_string(expected), where);
  }
  if (t.data == nullptr && expected > 0) throw usage_error("data is NULL", where);
  tk::Buffer data = writable ? tk::Buffer::borrow(t.data, expected) : tk::Buffer::borrow_const(t.data, expected);
  return {t.name, tk::Tensor(*dtype, std::move(shape), std::move(data))};
}

std::vector<tk::ckpt::NamedTensor> borrow_tensors(const tk_ckpt_tensor* tensors, size_t count, bool writable) {
  if (count > 0) require(tensors, "tensors");
  std::vector<tk::ckpt::NamedTensor> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) out.push_back(borrow_tensor(tensors[i], i, writable));
  return out;
}

tk::ckpt::Metadata metadata_from(const char* const* keys, const char* const* values, size_t count) {
  tk::ckpt::Metadata metadata;
  if (count == 0) return metadata;
  require(keys, "meta_keys");
  require(values, "meta_values");
  for (size_t i = 0; i < count; ++i) {
    std::string where = "metadata #" + std::to_string(i);
    if (keys[i] == nullptr || *keys[i] == '\0') throw usage_error("metadata key is empty", where);
    if (values[i] == nullptr) throw usage_error("metadata value is NULL", where);
    if (!metadata.emplace(keys[i], values[i]).second) {
      throw usage_error("duplicate metadata key '" + std::string(keys[i]) + "'", where);
    }
  }
  return metadata;
}

tk::ckpt::Options options_from(const tk_ckpt_options& c) {
  tk::ckpt::Options o;
  o.read_only = c.read_only != 0;
  o.durable_dir = c.durable_dir != nullptr ? c.durable_dir : "";
  o.keep_last = c.keep_last;
  o.keep_every = c.keep_every;
  switch (c.compression) {
    case TK_CKPT_COMPRESSION_NONE: o.compression = tk::ckpt::Compression::kNone; break;
    case TK_CKPT_COMPRESSION_LOSSLESS: o.compression = tk::ckpt::Compression::kLossless; break;
    default: throw usage_error("unknown compression " + std::to_string(c.compression), "options");
  }
  o.incremental = c.incremental != 0;
  o.full_every = c.full_every;
  o.delta_max_ratio = c.delta_max_ratio;
  o.staging_limit = c.staging_limit;
  o.shard_bytes = c.shard_bytes;
  o.threads = c.threads;
  return o;
}

void fill_stats(const tk::ckpt::SaveStats& s, tk_ckpt_save_stats* out) {
  if (out == nullptr) return;
  out->step = s.step;
  out->stall_seconds = s.stall_seconds;
  out->write_seconds = s.write_seconds;
  out->commit_seconds = s.commit_seconds;
  out->logical_bytes = s.logical_bytes;
  out->written_bytes = s.written_bytes;
  out->tensors_stored = s.tensors_stored;
  out->tensors_referenced = s.tensors_referenced;
  out->tensors_delta = s.tensors_delta;
}

void copy_text(const std::string& text, char* out, size_t capacity) {
  if (out == nullptr || capacity == 0) return;
  size_t n = std::min(text.size(), capacity - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace

extern "C" {

int tk_ckpt_version(void) { return TK_CKPT_VERSION; }

const char* tk_ckpt_last_error(void) {
  return error_out_of_memory ? "out of memory" : error_message.c_str();
}

void tk_ckpt_options_init(tk_ckpt_options* options) {
  if (options == nullptr) return;
  const tk::ckpt::Options d;
  *options = tk_ckpt_options{};
  options->read_only = d.read_only ? 1 : 0;
  options->durable_dir = nullptr;
  options->keep_last = d.keep_last;
  options->keep_every = d.keep_every;
  options->compression = TK_CKPT_COMPRESSION_NONE;
  options->incremental = d.incremental ? 1 : 0;
  options->full_every = d.full_every;
  options->delta_max_ratio = d.delta_max_ratio;
  options->staging_limit = d.staging_limit;
  options->shard_bytes = d.shard_bytes;
  options->threads = d.threads;
}

int tk_ckpt_open(const char* dir, const tk_ckpt_options* options, tk_ckpt** out) {
  return guarded([&] {
    require(out, "out");
    require(dir, "dir");
    if (*dir == '\0') throw usage_error("dir is empty");
    tk_ckpt_options defaults;
    tk_ckpt_options_init(&defaults);
    tk::ckpt::Options o = options_from(options != nullptr ? *options : defaults);
    auto handle = std::make_unique<tk_ckpt>();
    handle->impl = tk::ckpt::Checkpointer::open(dir, o);
    *out = handle.release();
    return TK_CKPT_OK;
  });
}

int tk_ckpt_close(tk_ckpt* ckpt) {
  if (ckpt == nullptr) return TK_CKPT_OK;
  std::unique_ptr<tk_ckpt> owned(ckpt);
  int status = guarded([&] {
    owned->impl->wait_all();
    return TK_CKPT_OK;
  });
  // The destructor waits too and never throws; a second failure would only repeat.
  owned.reset();
  return status;
}

int tk_ckpt_save_async(tk_ckpt* ckpt, uint64_t step, const tk_ckpt_tensor* tensors, size_t count,
                       const char* const* meta_keys, const char* const* meta_values, size_t meta_count,
                       int flags, uint64_t* handle) {
  return guarded([&] {
    require(ckpt, "checkpoint handle");
    require(handle, "handle");
    if ((flags & ~TK_CKPT_BORROW) != 0) throw usage_error("unknown flags " + std::to_string(flags));
    auto snapshot = (flags & TK_CKPT_BORROW) ? tk::ckpt::Snapshot::kBorrow : tk::ckpt::Snapshot::kCopy;
    *handle = ckpt->impl->save_async(step, borrow_tensors(tensors, count, false),
                                     metadata_from(meta_keys, meta_values, meta_count), snapshot);
    return TK_CKPT_OK;
  });
}

int tk_ckpt_wait(tk_ckpt* ckpt, uint64_t handle, tk_ckpt_save_stats* stats) {
  return guarded([&] {
    require(ckpt, "checkpoint handle");
    fill_stats(ckpt->impl->wait(handle), stats);
    return TK_CKPT_OK;
  });
}

int tk_ckpt_save(tk_ckpt* ckpt, uint64_t step, const tk_ckpt_tensor* tensors, size_t count,
                 const char* const* meta_keys, const char* const* meta_values, size_t meta_count,
                 tk_ckpt_save_stats* stats) {
  return guarded([&] {
    require(ckpt, "checkpoint handle");
    // Borrowing is safe: the tensors are no longer read once wait() returns.
    tk::ckpt::SaveHandle handle =
        ckpt->impl->save_async(step, borrow_tensors(tensors, count, false),
                               metadata_from(meta_keys, meta_values, meta_count), tk::ckpt::Snapshot::kBorrow);
    fill_stats(ckpt->impl->wait(handle), stats);
    return TK_CKPT_OK;
  });
}

int tk_ckpt_wait_all(tk_ckpt* ckpt) {
  return guarded([&] {
    require(ckpt, "checkpoint handle");
    ckpt->impl->wait_all();
    return TK_CKPT_OK;
  });
}

int tk_ckpt_latest(const tk_ckpt* ckpt, uint64_t* step) {
  return guarded([&] {
    require(ckpt, "checkpoint handle");
    require(step, "step");
    std::optional<uint64_t> latest = ckpt->impl->latest();
    if (!latest) return static_cast<int>(TK_CKPT_NONE);
    *step = *latest;
    return static_cast<int>(TK_CKPT_OK);
  });
}

int tk_ckpt_list(const tk_ckpt* ckpt, uint64_t* steps, size_t capacity, size_t* count) {
  return guarded([&] {
    require(ckpt, "checkpoint handle");
    require(count, "count");
    if (capacity > 0) require(steps, "steps");
    std::vector<uint64_t> all = ckpt->impl->steps();
    std::copy_n(all.begin(), std::min(all.size(), capacity), steps);
    *count = all.size();
    return TK_CKPT_OK;
  });
}

int tk_ckpt_step_open(const tk_ckpt* ckpt, uint64_t step, tk_ckpt_step** out) {
  return guarded([&] {
    require(ckpt, "checkpoint handle");
    require(out, "out");
    *out = new tk_ckpt_step{ckpt->impl->info(step)};
    return TK_CKPT_OK;
  });
}

void tk_ckpt_step_close(tk_ckpt_step* step) { delete step; }

int tk_ckpt_step_info(const tk_ckpt_step* step, tk_ckpt_step_summary* info) {
  return guarded([&] {
    require(step, "step handle");
    require(info, "info");
    const tk::ckpt::StepInfo& s = step->info;
    *info = tk_ckpt_step_summary{};
    info->step = s.step;
    info->tensors = s.entries.size();
    info->logical_bytes = s.logical_bytes;
    info->stored_bytes = s.stored_bytes;
    info->has_parent = s.parent.has_value() ? 1 : 0;
    info->parent = s.parent.value_or(0);
    info->durable = s.durable ? 1 : 0;
    info->created = s.created.c_str();
    return TK_CKPT_OK;
  });
}

int tk_ckpt_step_tensor(const tk_ckpt_step* step, size_t index, tk_ckpt_tensor* tensor) {
  return guarded([&] {
    require(step, "step handle");
    require(tensor, "tensor");
    const std::vector<tk::ckpt::TensorEntry>& entries = step->info.entries;
    if (index >= entries.size()) {
      throw usage_error("tensor index " + std::to_string(index) + " out of range (the step has " +
                        std::to_string(entries.size()) + ")", "step " + std::to_string(step->info.step));
    }
    const tk::ckpt::TensorEntry& e = entries[index];
    tensor->name = e.name.c_str();
    tensor->dtype = tk::dtype_name(e.dtype);
    tensor->ndim = static_cast<int32_t>(e.shape.size());
    tensor->shape = e.shape.data();
    tensor->data = nullptr;
    tensor->nbytes = e.nbytes;
    return TK_CKPT_OK;
  });
}

int tk_ckpt_step_metadata(const tk_ckpt_step* step, const char* key, const char** value) {
  return guarded([&] {
    require(step, "step handle");
    require(key, "key");
    require(value, "value");
    auto it = step->info.metadata.find(key);
    if (it == step->info.metadata.end()) return static_cast<int>(TK_CKPT_NONE);
    *value = it->second.c_str();
    return static_cast<int>(TK_CKPT_OK);
  });
}

int tk_ckpt_restore_into(const tk_ckpt* ckpt, uint64_t step, const tk_ckpt_tensor* targets, size_t count) {
  return guarded([&] {
    require(ckpt, "checkpoint handle");
    std::vector<tk::ckpt::NamedTensor> tensors = borrow_tensors(targets, count, true);
    ckpt->impl->restore_into(step, tensors);
    return TK_CKPT_OK;
  });
}

int tk_ckpt_verify(const tk_ckpt* ckpt, uint64_t step, uint64_t* problems, char* first_problem,
                   size_t capacity) {
  if (problems != nullptr) *problems = 0;
  copy_text({}, first_problem, capacity);
  return guarded([&] {
    require(ckpt, "checkpoint handle");
    tk::ckpt::VerifyReport report = ckpt->impl->verify(step);
    if (report.ok()) return static_cast<int>(TK_CKPT_OK);
    if (problems != nullptr) *problems = report.problems.size();
    copy_text(report.problems.front(), first_problem, capacity);
    return fail(TK_CKPT_ERR_INVALID_INPUT, [&] {
      std::string text = report.problems.front();
      if (report.problems.size() > 1) text += " (and " + std::to_string(report.problems.size() - 1) + " more)";
      return text;
    });
  });
}

int tk_ckpt_gc(tk_ckpt* ckpt, tk_ckpt_gc_report* report) {
  return guarded([&] {
    require(ckpt, "checkpoint handle");
    tk::ckpt::GcReport r = ckpt->impl->gc();
    if (report != nullptr) {
      report->removed_steps = r.removed_steps.size();
      report->removed_temp_dirs = r.removed_temp_dirs;
      report->bytes_freed = r.bytes_freed;
    }
    return TK_CKPT_OK;
  });
}

int tk_ckpt_flush_status(const tk_ckpt* ckpt, tk_ckpt_flush_report* status) {
  return guarded([&] {
    require(ckpt, "checkpoint handle");
    require(status, "status");
    tk::ckpt::FlushStatus s = ckpt->impl->flush_status();
    *status = flush_report(s.latest_committed, s.latest_durable, s.pending, s.lag_seconds);
    return TK_CKPT_OK;
  });
}

}  // extern "C"

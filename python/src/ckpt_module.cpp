// tensorkit._ckpt: the checkpoint engine (tk::ckpt::Checkpointer) for Python. A thin
// layer: tensors arrive as raw descriptors (name, dtype, shape, address, bytes) that
// tensorkit/ckpt.py builds from torch tensors and numpy arrays and keeps alive for the
// call; results leave as plain dicts that ckpt.py turns into typed objects. Every call
// that waits, copies or touches files runs without the GIL, and every tk::Error becomes
// the tensorkit.errors exception of its kind.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tk/ckpt/checkpoint.h"
#include "tk/core/dtype.h"
#include "tk/core/error.h"
#include "tk/core/shape.h"

namespace py = pybind11;

namespace {

using tk::ckpt::Checkpointer;
using tk::ckpt::NamedTensor;

// (name, safetensors dtype name, shape, address, nbytes), as ckpt.py builds them.
using Descriptor = std::tuple<std::string, std::string, std::vector<int64_t>, uintptr_t, uint64_t>;

std::vector<NamedTensor> borrow(const std::vector<Descriptor>& descriptors, bool writable) {
  std::vector<NamedTensor> out;
  out.reserve(descriptors.size());
  for (const auto& [name, dtype_name, shape, address, nbytes] : descriptors) {
    const std::string where = "tensor '" + name + "'";
    auto dtype = tk::dtype_from_safetensors_name(dtype_name);
    if (!dtype) throw tk::usage_error("unknown dtype '" + dtype_name + "'", where);
    const uint64_t expected = tk::dtype_storage_bytes(*dtype, tk::shape_numel(shape));
    if (nbytes != expected) {
      throw tk::usage_error(std::to_string(nbytes) + " bytes given, " + tk::dtype_name(*dtype) + " " +
                                tk::shape_to_string(shape) + " needs " + std::to_string(expected), where);
    }
    void* data = reinterpret_cast<void*>(address);
    tk::Buffer buffer = writable ? tk::Buffer::borrow(data, nbytes) : tk::Buffer::borrow_const(data, nbytes);
    out.push_back({name, tk::Tensor(*dtype, shape, std::move(buffer))});
  }
  return out;
}

py::dict stats_dict(const tk::ckpt::SaveStats& s) {
  py::dict d;
  d["step"] = s.step;
  d["stall_seconds"] = s.stall_seconds;
  d["write_seconds"] = s.write_seconds;
  d["commit_seconds"] = s.commit_seconds;
  d["logical_bytes"] = s.logical_bytes;
  d["written_bytes"] = s.written_bytes;
  d["tensors_stored"] = s.tensors_stored;
  d["tensors_referenced"] = s.tensors_referenced;
  d["tensors_delta"] = s.tensors_delta;
  return d;
}

py::dict step_dict(const tk::ckpt::StepInfo& info) {
  py::list entries;
  for (const auto& e : info.entries) {
    py::dict t;
    t["name"] = e.name;
    t["dtype"] = tk::dtype_name(e.dtype);
    t["shape"] = py::tuple(py::cast(e.shape));
    t["nbytes"] = e.nbytes;
    t["stored_bytes"] = e.stored_bytes;
    t["encoding"] = e.encoding;
    t["source_step"] = e.source_step ? py::cast(*e.source_step) : py::none();
    entries.append(std::move(t));
  }
  py::dict d;
  d["step"] = info.step;
  d["dir"] = info.dir;
  d["created"] = info.created;
  d["logical_bytes"] = info.logical_bytes;
  d["stored_bytes"] = info.stored_bytes;
  d["parent"] = info.parent ? py::cast(*info.parent) : py::none();
  d["durable"] = info.durable;
  d["world_size"] = info.world_size;
  d["metadata"] = info.metadata;
  d["tensors"] = entries;
  return d;
}

// `f()` with the GIL released: the engine's waits and I/O must not stop other Python
// threads (the training loop). What it returns holds no Python object.
template <typename F>
auto without_gil(F&& f) {
  py::gil_scoped_release release;
  return f();
}

// One open checkpoint directory. The engine is safe to call from several threads (a
// save on one while another waits); the mutex only guards closing against use.
class Engine {
 public:
  Engine(const std::string& dir, const tk::ckpt::Options& options) {
    py::gil_scoped_release release;
    impl_ = Checkpointer::open(dir, options);
  }

  uint64_t save_async(uint64_t step, const std::vector<Descriptor>& tensors, const tk::ckpt::Metadata& metadata) {
    auto named = borrow(tensors, false);
    py::gil_scoped_release release;
    return get()->save_async(step, std::move(named), metadata, tk::ckpt::Snapshot::kCopy);
  }

  py::dict wait(uint64_t handle) {
    std::shared_ptr<Checkpointer> impl = get();
    const auto stats = without_gil([&] { return impl->wait(handle); });
    return stats_dict(stats);
  }

  void wait_all() {
    std::shared_ptr<Checkpointer> impl = get();
    py::gil_scoped_release release;
    impl->wait_all();
  }

  std::optional<uint64_t> latest() { return get()->latest(); }

  std::vector<uint64_t> steps() {
    std::shared_ptr<Checkpointer> impl = get();
    py::gil_scoped_release release;
    return impl->steps();
  }

  py::list list() {
    std::shared_ptr<Checkpointer> impl = get();
    const auto infos = without_gil([&] { return impl->list(); });
    py::list out;
    for (const auto& info : infos) out.append(step_dict(info));
    return out;
  }

  py::dict info(uint64_t step) {
    std::shared_ptr<Checkpointer> impl = get();
    const auto info = without_gil([&] { return impl->info(step); });
    return step_dict(info);
  }

  void restore_into(uint64_t step, const std::vector<Descriptor>& targets) {
    std::shared_ptr<Checkpointer> impl = get();
    auto named = borrow(targets, true);
    py::gil_scoped_release release;
    impl->restore_into(step, named);
  }

  py::dict verify(uint64_t step) {
    std::shared_ptr<Checkpointer> impl = get();
    const auto report = without_gil([&] { return impl->verify(step); });
    py::dict d;
    d["step"] = report.step;
    d["tensors_checked"] = report.tensors_checked;
    d["bytes_checked"] = report.bytes_checked;
    d["problems"] = report.problems;
    return d;
  }

  py::dict gc() {
    std::shared_ptr<Checkpointer> impl = get();
    const auto report = without_gil([&] { return impl->gc(); });
    py::dict d;
    d["removed_steps"] = report.removed_steps;
    d["removed_temp_dirs"] = report.removed_temp_dirs;
    d["bytes_freed"] = report.bytes_freed;
    return d;
  }

  py::dict flush_status() {
    tk::ckpt::FlushStatus s = get()->flush_status();
    py::dict d;
    d["latest_committed"] = s.latest_committed;
    d["latest_durable"] = s.latest_durable;
    d["pending"] = s.pending;
    d["lag_seconds"] = s.lag_seconds;
    return d;
  }

  // Wait for every save and flush, then let go of the directory (its lock). The engine
  // is destroyed by whoever holds it last: a wait running on another thread finishes.
  void close() {
    std::shared_ptr<Checkpointer> impl;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      impl = std::move(impl_);
    }
    if (!impl) return;
    py::gil_scoped_release release;
    try {
      impl->wait_all();
    } catch (...) {
      impl.reset();
      throw;
    }
    impl.reset();
  }

  bool closed() {
    std::lock_guard<std::mutex> lock(mutex_);
    return !impl_;
  }

 private:
  std::shared_ptr<Checkpointer> get() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!impl_) throw tk::usage_error("the checkpointer is closed");
    return impl_;
  }

  std::mutex mutex_;
  std::shared_ptr<Checkpointer> impl_;
};

tk::ckpt::Options make_options(bool read_only, const std::string& durable_dir, uint32_t keep_last,
                               uint32_t keep_every, bool lossless, bool incremental, uint32_t full_every,
                               double delta_max_ratio, uint64_t staging_limit, uint64_t shard_bytes, int threads) {
  tk::ckpt::Options o;
  o.read_only = read_only;
  o.durable_dir = durable_dir;
  o.keep_last = keep_last;
  o.keep_every = keep_every;
  o.compression = lossless ? tk::ckpt::Compression::kLossless : tk::ckpt::Compression::kNone;
  o.incremental = incremental;
  o.full_every = full_every;
  o.delta_max_ratio = delta_max_ratio;
  o.staging_limit = staging_limit;
  o.shard_bytes = shard_bytes;
  o.threads = threads;
  return o;
}

}  // namespace

PYBIND11_MODULE(_ckpt, m) {
  m.doc() = "The tensorkit checkpoint engine (use tensorkit.ckpt, not this module).";

  // tk::Error -> the exception class tensorkit.errors picks for its kind, carrying the
  // engine's message and location.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tk::Error& e) {
      py::object make = py::module_::import("tensorkit.errors").attr("_from_engine");
      py::object exc = make(tk::error_kind_name(e.kind()), py::bytes(e.message()), py::bytes(e.where()));
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    }
  });

  py::class_<Engine>(m, "Engine")
      .def(py::init([](const std::string& dir, bool read_only, const std::string& durable_dir, uint32_t keep_last,
                       uint32_t keep_every, bool lossless, bool incremental, uint32_t full_every,
                       double delta_max_ratio, uint64_t staging_limit, uint64_t shard_bytes, int threads) {
             return std::make_unique<Engine>(dir, make_options(read_only, durable_dir, keep_last, keep_every, lossless,
                                                               incremental, full_every, delta_max_ratio,
                                                               staging_limit, shard_bytes, threads));
           }),
           py::arg("dir"), py::arg("read_only"), py::arg("durable_dir"), py::arg("keep_last"), py::arg("keep_every"),
           py::arg("lossless"), py::arg("incremental"), py::arg("full_every"), py::arg("delta_max_ratio"),
           py::arg("staging_limit"), py::arg("shard_bytes"), py::arg("threads"))
      .def("save_async", &Engine::save_async)
      .def("wait", &Engine::wait)
      .def("wait_all", &Engine::wait_all)
      .def("latest", &Engine::latest)
      .def("steps", &Engine::steps)
      .def("list", &Engine::list)
      .def("info", &Engine::info)
      .def("restore_into", &Engine::restore_into)
      .def("verify", &Engine::verify)
      .def("gc", &Engine::gc)
      .def("flush_status", &Engine::flush_status)
      .def("close", &Engine::close)
      .def_property_readonly("closed", &Engine::closed);

  m.attr("cuda") = py::bool_(
#ifdef TK_HAVE_CUDA
      true
#else
      false
#endif
  );
}

// tk_dckpt_fixture DIR STEP WORLD [--gap|--part-offset|--part-dtype]: write step STEP of a distributed checkpoint
// as WORLD ranks would, without MPI (each rank's part in turn, then rank 0's commit), for
// the CLI cases of tckpt. Tensors: "w" F32 [10, 3] = i*3 + j split by rows, "v" F64
// [4, 5] = 100 + i*5 + j split by columns (both unevenly), "b" I32 [3] = {7, 8, 9}
// replicated (saved by rank 0). --gap publishes a manifest that lacks rank 1's slice of
// w, as a damaged or hand-made step would (the commit itself refuses such a step).
// --part-offset and --part-dtype commit the step, then rewrite rank 1's part with its
// slice of w at another offset, or as I32, and the part's checksum recomputed: a part
// changed after the commit that still passes its own checksum.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tk/ckpt/dist_part.h"
#include "tk/ckpt/fileops.h"
#include "tk/ckpt/manifest.h"
#include "tk/ckpt/tier.h"
#include "tk/core/clock.h"

using namespace tk;
using namespace tk::ckpt;

namespace {

std::pair<int64_t, int64_t> share(int64_t n, uint32_t world, uint32_t r) {
  int64_t total = int64_t(world) * (world + 1) / 2, before = int64_t(r) * (r + 1) / 2;
  int64_t first = n * before / total;
  return {first, n * (before + r + 1) / total - first};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: tk_dckpt_fixture DIR STEP WORLD [--gap|--part-offset|--part-dtype]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const uint64_t step = std::stoull(argv[2]);
  const uint32_t world = static_cast<uint32_t>(std::stoul(argv[3]));
  const std::string flag = argc > 4 ? argv[4] : "";
  const bool gap = flag == "--gap";
  try {
    fs::make_dirs(dir);
    io::DirFd root = io::DirFd::open(dir);
    const std::string tmp_name = step_dir_name(step) + ".tmp-fixture";
    io::DirFd tmp = root.make_dir(tmp_name);
    std::vector<RankPart> parts;
    std::vector<uint64_t> part_bytes;
    for (uint32_t r = 0; r < world; ++r) {
      auto [w0, wn] = share(10, world, r);
      auto [v0, vn] = share(5, world, r);
      std::vector<float> w;
      for (int64_t i = w0; i < w0 + wn; ++i)
        for (int64_t j = 0; j < 3; ++j) w.push_back(static_cast<float>(i * 3 + j));
      std::vector<double> v;
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = v0; j < v0 + vn; ++j) v.push_back(100.0 + static_cast<double>(i * 5 + j));
      std::vector<int32_t> b = {7, 8, 9};
      auto bytes = [](const auto& vec) {
        return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(vec.data()), vec.size() * sizeof(vec[0]));
      };
      std::vector<LocalSlice> slices = {
          {"w", DType::kF32, {10, 3}, {{w0, 0}, {wn, 3}}, bytes(w), false, true},
          {"v", DType::kF64, {4, 5}, {{0, v0}, {4, vn}}, bytes(v), false, true},
          {"b", DType::kI32, {3}, {{0}, {3}}, bytes(b), true, r == 0},
      };
      uint64_t written = 0;
      std::vector<uint8_t> encoded;
      parts.push_back(write_rank_part(tmp, step, r, world, slices, 1, &written, &encoded));
      part_bytes.push_back(encoded.size());
    }
    if (!gap) {
      publish_parts(root, tmp_name, step, world);
      if (flag != "--part-offset" && flag != "--part-dtype") return 0;
      io::DirFd step_dir = *root.open_dir(step_dir_name(step));
      RankPart part = read_part(step_dir, 1, step);
      if (flag == "--part-offset") part.pieces.at(0).slice.offset += 4;
      else part.pieces.at(0).dtype = DType::kI32;
      const std::string name = part_file_name(1);
      step_dir.unlink(name);
      fs::File file = fs::create_file(step_dir, name);
      fs::write_all(file, part_encode(part));
      return 0;
    }
    Manifest m = merge_parts(step, parts, part_bytes);
    m.info.created = utc_now_iso8601();
    auto& slices = m.info.entries.at(0).slices;
    slices.erase(slices.begin() + 1);
    publish_step(root, tmp_name, step, manifest_encode(m));
  } catch (const Error& e) {
    std::fprintf(stderr, "tk_dckpt_fixture: error: %s (%s)\n", e.message().c_str(), e.where().c_str());
    return 1;
  }
  return 0;
}

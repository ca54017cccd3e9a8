#include "tk/quant/cuda/groups.h"

#include "tk/quant/cuda/groups_state.h"
#include "tk/quant/nf4_math.h"

namespace tk::quant::gpu {
namespace {

// One thread per group: the reference search, operation for operation.
__global__ void search_kernel(const float* x, const float* w, int64_t rows, int64_t padded_cols, int64_t group,
                              bool symmetric, int nmax, bool fast, detail::AffineScale* out) {
  Piece p;
  if (!piece_of_thread(rows, padded_cols, group, p)) return;
  const int64_t g = p.g;
  const float* xg = x + p.r * padded_cols + p.b * group;
  const float* wg = w + p.b * group;
  const detail::GroupStats s = detail::normalised_stats(detail::group_stats_ref(xg, wg, group), xg, group);
  if (symmetric) {
    const float lo = static_cast<float>(-nmax), hi = static_cast<float>(nmax - 1);
    const float d = detail::symmetric_search(
        s, nmax, fast, detail::kIntSymmetricTries,
        [&](float iscale, float) { return detail::trial_symmetric_ref(xg, wg, group, iscale, lo, hi); },
        [&](const float* iscales, const float*, int count, detail::TrialSums* sums) {
          for (int k = 0; k < count; ++k) sums[k] = detail::trial_symmetric_ref(xg, wg, group, iscales[k], lo, hi);
        });
    out[g] = {d, 0.0f};
  } else {
    const float hi = static_cast<float>(nmax);
    out[g] = detail::asymmetric_search(
        s, nmax, false, fast, detail::kIntAsymmetricSteps,
        [&](float iscale, float min) { return detail::trial_asymmetric_ref(xg, wg, group, iscale, min, hi); },
        [&](const float* iscales, const float* mins, int count, detail::TrialSums* sums) {
          for (int k = 0; k < count; ++k) {
            sums[k] = detail::trial_asymmetric_ref(xg, wg, group, iscales[k], mins[k], hi);
          }
        });
  }
}

// One thread per 8 values (one group holds them all): their codes, packed.
__global__ void encode_kernel(const float* x, int64_t rows, int64_t padded_cols, int64_t group, const float* inv,
                              const float* mins, int nmax, int bits, uint8_t* packed) {
  Piece p;
  if (!piece_of_thread(rows, padded_cols, 8, p)) return;
  const int64_t r = p.r, c = p.b * 8;
  const int64_t g = r * (padded_cols / group) + c / group;
  const float* xr = x + r * padded_cols + c;
  uint8_t codes[8];
  if (mins == nullptr) {
    const float lo = static_cast<float>(-nmax), hi = static_cast<float>(nmax - 1);
    for (int i = 0; i < 8; ++i) codes[i] = detail::code_symmetric(xr[i], inv[g], lo, hi, nmax);
  } else {
    for (int i = 0; i < 8; ++i) codes[i] = detail::code_asymmetric(xr[i], inv[g], mins[g], static_cast<float>(nmax));
  }
  detail::pack8(codes, bits, packed + r * (padded_cols * bits / 8) + c / 8 * bits);
}

// One thread per block: nf4's and iq4nl's scale searches, the reference's own code.
__global__ void nf4_scale_kernel(const float* x, const float* w, int64_t rows, int64_t padded_cols, int64_t group,
                                 bool fast, float* out) {
  Piece p;
  if (!piece_of_thread(rows, padded_cols, group, p)) return;
  out[p.g] = detail::nf4::fit_scale(detail::nf4::levels(), x + p.r * padded_cols + p.b * group, w + p.b * group,
                                    group, fast);
}
__global__ void iq4nl_scale_kernel(const float* x, const float* w, int64_t rows, int64_t padded_cols, int64_t group,
                                   bool fast, float* out) {
  Piece p;
  if (!piece_of_thread(rows, padded_cols, group, p)) return;
  out[p.g] = detail::iq4nl::fit_scale(detail::iq4nl::levels(), x + p.r * padded_cols + p.b * group, w + p.b * group,
                                      fast);
}

// One thread per 8 values: their codes through 16 levels from the stored scale, packed.
__global__ void table4_encode_kernel(const float* x, int64_t rows, int64_t padded_cols, int64_t group,
                                     detail::nf4::Levels levels, const float* scales, uint8_t* packed) {
  Piece p;
  if (!piece_of_thread(rows, padded_cols, 8, p)) return;
  const int64_t r = p.r, c = p.b * 8;
  uint8_t codes[8];
  detail::nf4::encode(levels, x + r * padded_cols + c, 8, scales[r * (padded_cols / group) + c / group], codes);
  detail::pack8(codes, 4, packed + r * (padded_cols / 2) + c / 2);
}

// One thread per value: its code (`bits` wide, LSB first in its row's stream), y =
// table[code] * scale.
__global__ void decode_table_kernel(const uint8_t* packed, int bits, int64_t rows, int64_t padded_cols, int64_t cols,
                                    const float* table, int64_t group, const float* scales, float* out) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows * cols) return;
  const int64_t r = t / cols, c = t % cols;
  const uint8_t* row = packed + r * (padded_cols * bits / 8);
  const int64_t bit = c * bits;
  unsigned v = row[bit / 8];
  if (bit % 8 + bits > 8) v |= static_cast<unsigned>(row[bit / 8 + 1]) << 8;
  const unsigned code = (v >> (bit % 8)) & ((1u << bits) - 1);
  out[t] = table[code] * scales[r * (padded_cols / group) + c / group];
}

// One thread per 8 codes: unpacked, scaled, and the columns inside the row written.
__global__ void decode_kernel(const uint8_t* packed, int64_t rows, int64_t padded_cols, int64_t cols, int bits,
                              int offset, int64_t group, const float* d, const float* m, float* out) {
  Piece p;
  if (!piece_of_thread(rows, padded_cols, 8, p)) return;
  const int64_t r = p.r, c = p.b * 8;
  const int64_t g = r * (padded_cols / group) + c / group;
  const float dg = d[g], mg = m ? m[g] : 0.0f;
  uint8_t codes[8];
  detail::unpack8(packed + r * (padded_cols * bits / 8) + c / 8 * bits, bits, codes);
  for (int i = 0; i < 8 && c + i < cols; ++i) {
    out[r * cols + c + i] = static_cast<float>(static_cast<int>(codes[i]) - offset) * dg + mg;
  }
}

// One thread per row: its error sums against the decoded values.
__global__ void row_sums_kernel(const float* x, const float* y, int64_t rows, int64_t cols, const float* w,
                                int64_t block, detail::RowSums* out) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  out[r] = detail::row_sums(x + r * cols, y + r * cols, cols, w, block);
}

// The decoded rows x cols values that `launch` writes on the device: copied into `out`,
// or, with `measure`, measured there.
template <typename Launch>
void deliver(const Stream& stream, int64_t rows, int64_t cols, float* out, const Measure* measure, Launch&& launch) {
  const auto n = static_cast<size_t>(rows * cols);
  if (!measure) return fill_on_device(stream, "decode", out, n, launch);
  DeviceArray<float> y(n);
  if (n > 0) {
    launch(y.data());
    check_launch("decode");
  }
  const DeviceArray<float> x = to_device(measure->x, n, stream);
  const DeviceArray<float> w = to_device(measure->weights, measure->weights ? static_cast<size_t>(cols) : 0, stream);
  fill_on_device(stream, "measure", measure->rows, static_cast<size_t>(rows), [&](detail::RowSums* sums) {
    row_sums_kernel<<<blocks_for(rows), kBlock, 0, stream.get()>>>(x.data(), y.data(), rows, cols,
                                                                     measure->weights ? w.data() : nullptr,
                                                                     measure->block, sums);
  });
}

}  // namespace

Groups::Groups(int device, const float* x, const float* weights, int64_t rows, int64_t padded_cols, int64_t group)
    : state_(std::make_unique<State>(device, x, weights, rows, padded_cols, group)) {}

Groups::~Groups() = default;

std::vector<detail::AffineScale> Groups::search(bool symmetric, int nmax, bool fast) {
  const State& s = *state_;
  std::vector<detail::AffineScale> out(static_cast<size_t>(s.groups()));
  fill_on_device(s.stream, "scale search", out.data(), out.size(), [&](detail::AffineScale* found) {
    search_kernel<<<blocks_for(s.groups()), kBlock, 0, s.stream.get()>>>(s.x.data(), s.w.data(), s.rows,
                                                                          s.padded_cols, s.group, symmetric, nmax,
                                                                          fast, found);
  });
  return out;
}

void Groups::encode(const float* inv, const float* mins, int nmax, int bits, uint8_t* packed) {
  const State& s = *state_;
  const auto groups = static_cast<size_t>(s.groups());
  const DeviceArray<float> d_inv = to_device(inv, groups, s.stream);
  const DeviceArray<float> d_mins = to_device(mins, mins ? groups : 0, s.stream);
  fill_on_device(s.stream, "encode", packed, s.packed_bytes(bits), [&](uint8_t* out) {
    encode_kernel<<<blocks_for(s.octets()), kBlock, 0, s.stream.get()>>>(
        s.x.data(), s.rows, s.padded_cols, s.group, d_inv.data(), mins ? d_mins.data() : nullptr, nmax, bits, out);
  });
}

namespace {

// Every group's scale, one thread per group: kernel(x, w, rows, padded_cols, group, fast, out).
template <typename Kernel>
std::vector<float> group_scales(const Groups::State& s, const char* what, Kernel kernel, bool fast) {
  std::vector<float> out(static_cast<size_t>(s.groups()));
  fill_on_device(s.stream, what, out.data(), out.size(), [&](float* found) {
    kernel<<<blocks_for(s.groups()), kBlock, 0, s.stream.get()>>>(s.x.data(), s.w.data(), s.rows, s.padded_cols,
                                                                    s.group, fast, found);
  });
  return out;
}

}  // namespace

std::vector<float> Groups::nf4_scales(bool fast) { return group_scales(*state_, "nf4 scales", nf4_scale_kernel, fast); }

std::vector<float> Groups::iq4nl_scales(bool fast) {
  return group_scales(*state_, "iq4nl scales", iq4nl_scale_kernel, fast);
}

void Groups::encode_table4(const detail::nf4::Levels& levels, const float* scales, uint8_t* packed) {
  const State& s = *state_;
  const DeviceArray<float> d_scales = to_device(scales, static_cast<size_t>(s.groups()), s.stream);
  fill_on_device(s.stream, "encode", packed, s.packed_bytes(4), [&](uint8_t* out) {
    table4_encode_kernel<<<blocks_for(s.octets()), kBlock, 0, s.stream.get()>>>(s.x.data(), s.rows, s.padded_cols,
                                                                                 s.group, levels, d_scales.data(), out);
  });
}

void decode_table(int device, const uint8_t* packed, int bits, int64_t rows, int64_t padded_cols, int64_t cols,
                  const float* table, int64_t group, const float* scales, float* out, const Measure* measure) {
  device::cuda::DeviceScope scope(device);
  const Stream stream;
  const DeviceArray<uint8_t> d_packed =
      to_device(packed, static_cast<size_t>(rows * (padded_cols * bits / 8)), stream);
  const DeviceArray<float> d_table = to_device(table, size_t{1} << bits, stream);
  const DeviceArray<float> d_scales = to_device(scales, static_cast<size_t>(rows * (padded_cols / group)), stream);
  deliver(stream, rows, cols, out, measure, [&](float* y) {
    decode_table_kernel<<<blocks_for(rows * cols), kBlock, 0, stream.get()>>>(
        d_packed.data(), bits, rows, padded_cols, cols, d_table.data(), group, d_scales.data(), y);
  });
}

void decode_affine(int device, const uint8_t* packed, int64_t rows, int64_t padded_cols, int64_t cols, int bits,
                   int offset, int64_t group, const float* d, const float* m, float* out, const Measure* measure) {
  device::cuda::DeviceScope scope(device);
  const Stream stream;
  const auto groups = static_cast<size_t>(rows * (padded_cols / group));
  const DeviceArray<uint8_t> d_packed = to_device(packed, static_cast<size_t>(rows * (padded_cols * bits / 8)), stream);
  const DeviceArray<float> d_d = to_device(d, groups, stream);
  const DeviceArray<float> d_m = to_device(m, m ? groups : 0, stream);
  deliver(stream, rows, cols, out, measure, [&](float* y) {
    decode_kernel<<<blocks_for(rows * (padded_cols / 8)), kBlock, 0, stream.get()>>>(
        d_packed.data(), rows, padded_cols, cols, bits, offset, group, d_d.data(), m ? d_m.data() : nullptr, y);
  });
}

}  // namespace tk::quant::gpu

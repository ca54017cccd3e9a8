// The K-quants' super-blocks on the device: kquant_math.h's reference, one thread per
// super-block, the codes packed there.
#include "tk/quant/cuda/groups_state.h"

namespace tk::quant::gpu {
namespace {

namespace kquant = detail::kquant;

__global__ void kquant_kernel(const float* x, const float* w, int64_t rows, int64_t padded_cols, kquant::Format f,
                              bool fast, uint8_t* packed, float* d, float* dmin, uint8_t* q, uint8_t* qm) {
  Piece p;
  if (!piece_of_thread(rows, padded_cols, kquant::kSuper, p)) return;
  const int64_t g = p.g, r = p.r, s = p.b;
  const float* xs = x + r * padded_cols + s * kquant::kSuper;
  detail::GroupStats st[kquant::kMaxSubs];
  kquant::Choice room;
  const kquant::Choice c = kquant::choose(f, xs, w + s * kquant::kSuper, fast, st, room);
  uint8_t codes[kquant::kSuper];
  kquant::encode(f, xs, c, codes);
  uint8_t* out = packed + r * (padded_cols * f.bits / 8) + s * kquant::kSuper * f.bits / 8;
  for (int k = 0; k < kquant::kSuper / 8; ++k) detail::pack8(codes + 8 * k, f.bits, out + k * f.bits);
  d[g] = c.d;
  dmin[g] = c.dmin;
  for (int i = 0; i < f.subs(); ++i) {
    q[g * f.subs() + i] = static_cast<uint8_t>(c.q[i] + (f.asymmetric ? 0 : f.qlo_abs()));
    qm[g * f.subs() + i] = static_cast<uint8_t>(c.qm[i]);
  }
}

}  // namespace

void Groups::encode_kquant(const detail::kquant::Format& f, bool fast, uint8_t* packed, float* d, float* dmin,
                           uint8_t* q, uint8_t* qm) {
  const State& s = *state_;
  const auto supers = static_cast<size_t>(s.groups());
  DeviceArray<uint8_t> d_packed(s.packed_bytes(f.bits)), d_q(supers * f.subs()), d_qm(supers * f.subs());
  DeviceArray<float> d_dmin(supers);
  fill_on_device(s.stream, "k-quant encode", d, supers, [&](float* d_d) {
    kquant_kernel<<<blocks_for(s.groups()), kBlock, 0, s.stream.get()>>>(s.x.data(), s.w.data(), s.rows,
                                                                          s.padded_cols, f, fast, d_packed.data(), d_d,
                                                                          d_dmin.data(), d_q.data(), d_qm.data());
  });
  d_packed.download(packed, s.stream);
  d_dmin.download(dmin, s.stream);
  d_q.download(q, s.stream);
  d_qm.download(qm, s.stream);
  s.stream.synchronize();
}

}  // namespace tk::quant::gpu

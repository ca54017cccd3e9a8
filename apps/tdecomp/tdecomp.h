// tdecomp: CP, Tucker, Tensor-Train and RESCAL decompositions of the tensors in a file,
// written as ordinary tensors with metadata (lib/tk/decomp/format.h); rank selection;
// reconstruction of dense tensors from any tdecomp output (docs/DECOMP.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/tool.h"

namespace tk::tdecomp {

// Options of cp, tucker, tt, tt-round and rescal.
struct DecompOptions {
  std::string method;             // "cp", "tucker", "tt", "tt-round", "rescal"
  std::string input = "-";
  std::string output = "-";
  std::string format;             // --format; empty: from the extension
  std::string precision = "f64";  // --precision f64|f32: compute precision
  std::string factor_dtype;       // --factor-dtype; empty: F64 for F64 sources, else F32
  std::string budget;             // --budget BYTES (cp, tucker, tt)
  bool explain = false;           // --explain: each tensor's decision on stderr
  // CP and RESCAL
  int rank = 0;                   // --rank
  bool rank_given = false;
  std::string init = "gram";      // --init gram|random
  std::string init_file;          // --init-file: a tdecomp CP output
  int restarts = 1;
  std::optional<double> tol;      // --tol
  int max_iters = 0;              // 0: the method's default
  double max_seconds = 0;
  bool nonneg = false;
  double l2 = 0;                  // --l2 (CP; RESCAL: both ridge terms unless given apart)
  std::optional<double> lambda_a, lambda_r;
  std::string mask;               // --mask FILE
  // Tucker
  std::string ranks;              // --ranks r1,r2,...
  std::string tucker_method = "sthosvd";
  // TT (and the declared shape of a .tns input for cp)
  int64_t max_rank = 0;
  std::string shape;              // --shape d1,d2,...
};

struct ReconstructOptions {
  std::string input = "-";
  std::string output = "-";
  std::string format;
  std::string dtype;              // --dtype; empty: each tensor's original dtype
};

struct RankOptions {
  std::string method;             // "cp" or "rescal"
  std::string input = "-";
  std::string range = "2:12";
  int realisations = 8;
  double noise = 0.03;
  double threshold = 0.75;
  int max_iters = 200;
  double tol = 1e-7;
  std::string svg;                // --svg PATH
  std::string task;               // --task I/N: this process's share of a job array
  std::string partial;            // --partial PATH: write the realisations, do not score
  std::vector<std::string> merge; // --merge PATH...: score the partials of every task
};

int run_decompose(cli::Tool& tool, const DecompOptions& options);
int run_tt_round(cli::Tool& tool, const DecompOptions& options);
int run_reconstruct(cli::Tool& tool, const ReconstructOptions& options);
int run_rank(cli::Tool& tool, const RankOptions& options);

}  // namespace tk::tdecomp

// tdecomp: tensor decompositions, rank selection and reconstruction (docs/DECOMP.md).
#include "cli/report.h"
#include "tdecomp.h"

namespace {

using tk::tdecomp::DecompOptions;

void add_io(tk::cli::Tool& tool, CLI::App* sub, std::string& input, std::string& output, std::string& format) {
  sub->add_option("input", input, "Input file ('-': stdin, the default)")->type_name("IN");
  tool.add_output(*sub, output);
  tool.add_metadata_options(*sub);
  sub->add_option("--format", format, "Output format (default: from OUT's extension)")
      ->type_name("safetensors|hdf5");
}

void add_storage(CLI::App* sub, DecompOptions& o, bool budget) {
  sub->add_option("--precision", o.precision, "Compute precision (default f64)")
      ->type_name("f64|f32")
      ->check(CLI::IsMember({"f64", "f32"}));
  sub->add_option("--factor-dtype", o.factor_dtype,
                  "dtype of the stored factors (default: f64 for f64 tensors, else f32)")
      ->type_name("DT");
  if (budget)
    sub->add_option("--budget", o.budget,
                    "Choose ranks and factor dtype (f32, bf16, f16) for the least error within BYTES per tensor")
        ->type_name("BYTES");
}

void add_explain(CLI::App* sub, DecompOptions& o) {
  sub->add_flag("--explain", o.explain,
                "Print each tensor's decision on stderr. Without -t, tensors the method cannot take (order, shape, "
                "dtype) are skipped and left out of the output");
}

void add_iterations(CLI::App* sub, DecompOptions& o) {
  sub->add_option("--tol", o.tol, "Stop when the fit changes by less (default 1e-8)")->type_name("EPS");
  sub->add_option("--max-iters", o.max_iters, "Iteration limit (default 500)")->type_name("N");
  sub->add_option("--max-seconds", o.max_seconds, "Time limit per tensor")->type_name("S");
  sub->add_flag("--nonneg", o.nonneg, "Nonnegative factors");
}

CLI::App* add_cp(tk::cli::Tool& tool, DecompOptions& o) {
  CLI::App* sub = tool.add_subcommand("cp", "CP-ALS decomposition (dense, masked, nonnegative, or sparse .tns)");
  add_io(tool, sub, o.input, o.output, o.format);
  sub->add_option_function<int>("--rank", [&o](int r) { o.rank = r, o.rank_given = true; }, "Number of components")
      ->type_name("R");
  sub->add_option("--init", o.init, "Initialisation (default gram)")
      ->type_name("gram|random")
      ->check(CLI::IsMember({"gram", "random"}));
  sub->add_option("--init-file", o.init_file, "Start from the factors of a tdecomp CP output")->type_name("FILE");
  sub->add_option("--restarts", o.restarts, "Further runs from random inits; the best fit is kept")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  add_iterations(sub, o);
  sub->add_option("--l2", o.l2, "Ridge regularisation of the factor updates")->type_name("REG");
  sub->add_option("--mask", o.mask, "0/1 tensor of the input's shape: fit only the 1 entries")->type_name("FILE");
  sub->add_option("--shape", o.shape, "Declared shape of a .tns input (default: inferred)")->type_name("D1,D2,...");
  add_storage(sub, o, true);
  add_explain(sub, o);
  return sub;
}

CLI::App* add_tucker(tk::cli::Tool& tool, DecompOptions& o) {
  CLI::App* sub = tool.add_subcommand("tucker", "Tucker decomposition: ST-HOSVD, optionally refined by HOOI");
  add_io(tool, sub, o.input, o.output, o.format);
  sub->add_option("--ranks", o.ranks, "Multilinear ranks, one per mode")->type_name("R1,R2,...");
  sub->add_option("--tol", o.tol, "Choose ranks so that the relative error is at most EPS")->type_name("EPS");
  sub->add_option("--method", o.tucker_method, "Algorithm (default sthosvd)")
      ->type_name("sthosvd|hooi")
      ->check(CLI::IsMember({"sthosvd", "hooi"}));
  sub->add_option("--max-iters", o.max_iters, "HOOI sweeps (default 50)")->type_name("N");
  add_storage(sub, o, true);
  add_explain(sub, o);
  return sub;
}

CLI::App* add_tt(tk::cli::Tool& tool, DecompOptions& o) {
  CLI::App* sub = tool.add_subcommand("tt", "Tensor-Train decomposition (TT-SVD)");
  add_io(tool, sub, o.input, o.output, o.format);
  sub->add_option("--tol", o.tol, "Relative error bound EPS (guaranteed)")->type_name("EPS");
  sub->add_option("--max-rank", o.max_rank, "Cap on every TT rank")->type_name("R");
  sub->add_option("--shape", o.shape, "Reshape (tensorise) each tensor first, e.g. 16,16,16,16")
      ->type_name("D1,D2,...");
  add_storage(sub, o, true);
  add_explain(sub, o);
  return sub;
}

CLI::App* add_tt_round(tk::cli::Tool& tool, DecompOptions& o) {
  CLI::App* sub = tool.add_subcommand("tt-round", "Re-compress the TTs of a tdecomp tt output");
  add_io(tool, sub, o.input, o.output, o.format);
  sub->add_option("--tol", o.tol, "Relative error bound of the rounding")->type_name("EPS");
  sub->add_option("--max-rank", o.max_rank, "Cap on every TT rank")->type_name("R");
  sub->add_option("--factor-dtype", o.factor_dtype, "dtype of the stored cores (default: as stored)")
      ->type_name("DT");
  return sub;
}

CLI::App* add_rescal(tk::cli::Tool& tool, DecompOptions& o) {
  CLI::App* sub = tool.add_subcommand("rescal", "RESCAL of a stack of relations X_k ~ A R_k A^T (n x n x m input)");
  add_io(tool, sub, o.input, o.output, o.format);
  sub->add_option_function<int>("--rank", [&o](int r) { o.rank = r, o.rank_given = true; },
                                "Number of latent components")
      ->type_name("R");
  add_iterations(sub, o);
  sub->add_option("--l2", o.l2, "Ridge regularisation of A and every R_k")->type_name("REG");
  sub->add_option("--lambda-a", o.lambda_a, "Ridge regularisation of A (overrides --l2)")->type_name("REG");
  sub->add_option("--lambda-r", o.lambda_r, "Ridge regularisation of the R_k (overrides --l2)")->type_name("REG");
  sub->add_option("--factor-dtype", o.factor_dtype, "dtype of the stored factors (default: f64 for f64 tensors, else f32)")
      ->type_name("DT");
  add_explain(sub, o);
  return sub;
}

CLI::App* add_rank(tk::cli::Tool& tool, tk::tdecomp::RankOptions& o) {
  CLI::App* sub = tool.add_subcommand("rank", "Choose the rank of a CP or nonnegative RESCAL model by the stability "
                                              "of its components across perturbed realisations");
  sub->add_option("method", o.method, "cp or rescal")->required()->check(CLI::IsMember({"cp", "rescal"}));
  sub->add_option("input", o.input, "Input file ('-': stdin, the default)")->type_name("IN");
  sub->add_option("--range", o.range, "Ranks to try (default 2:12)")->type_name("MIN:MAX");
  sub->add_option("--realisations", o.realisations, "Perturbed decompositions per rank (default 8)")->type_name("N");
  sub->add_option("--noise", o.noise, "Multiplicative noise of the perturbations (default 0.03)")->type_name("EPS");
  sub->add_option("--threshold", o.threshold, "Minimum cluster silhouette of a stable rank (default 0.75)")
      ->type_name("S");
  sub->add_option("--max-iters", o.max_iters, "Iteration limit per realisation (default 200)")->type_name("N");
  sub->add_option("--tol", o.tol, "Convergence tolerance per realisation (default 1e-7)")->type_name("EPS");
  sub->add_option("--svg", o.svg, "Plot error and silhouette against rank into PATH")
      ->type_name("PATH")
      ->check(tk::cli::report_path("SVG"));
  sub->add_option("--task", o.task,
                  "Fit only task I's share of the realisations of N tasks (a job array: "
                  "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT); with --partial")
      ->type_name("I/N");
  sub->add_option("--partial", o.partial, "Write this task's realisations into PATH (JSON) instead of scoring them")
      ->type_name("PATH");
  sub->add_option("--merge", o.merge, "Score the realisations of every task's --partial file, fitting none")
      ->type_name("PATH...")
      ->expected(1, -1);
  return sub;
}

// --device as a subcommand has it: dense CP-ALS, Tucker and TT-SVD run on a GPU, the
// rest on the CPU (an empty `gpu_work`).
void describe_device(CLI::App* sub, const std::string& gpu_work) {
  sub->get_option("--device")->description(tk::cli::device_help(gpu_work));
}

}  // namespace

int main(int argc, char** argv) {
  tk::cli::Tool tool("tdecomp",
                     "Decompose tensors (CP, Tucker, Tensor-Train, RESCAL), choose ranks, and reconstruct");
  tool.set_examples({
      {"tdecomp cp data.safetensors --rank 10 -o cp.safetensors", "CP-ALS"},
      {"tdecomp cp trade.tns --rank 16 -o cp.safetensors", "Sparse CP on FROSTT coordinates"},
      {"tdecomp tucker field.h5 --tol 1e-3 -o tk.h5", "Tucker with a guaranteed relative error"},
      {"tdecomp tucker field.h5 --ranks 64,64,64 --device cuda -o tk.h5", "Tucker on the GPU (CP and TT too)"},
      {"mpirun -np 16 tdecomp cp big.tns --rank 16 -o cp.safetensors",
       "CP and Tucker across MPI ranks"},
      {"tdecomp reconstruct cp.safetensors -o dense.safetensors", "The dense tensors again"},
  });
  DecompOptions decomp;
  tk::tdecomp::ReconstructOptions rec;
  tk::tdecomp::RankOptions rank;
  CLI::App* cp = add_cp(tool, decomp);
  CLI::App* tucker = add_tucker(tool, decomp);
  CLI::App* tt = add_tt(tool, decomp);
  CLI::App* tt_round = add_tt_round(tool, decomp);
  CLI::App* rescal = add_rescal(tool, decomp);
  CLI::App* rank_cmd = add_rank(tool, rank);
  CLI::App* reconstruct = tool.add_subcommand("reconstruct", "Rebuild the dense tensors of a tdecomp output");
  add_io(tool, reconstruct, rec.input, rec.output, rec.format);
  reconstruct->add_option("--dtype", rec.dtype, "dtype of the rebuilt tensors (default: each one's original)")
      ->type_name("DT");
  tool.app().require_subcommand(1);
  // The tool's --device, then each subcommand's own (rank, reconstruct and the others
  // refuse cuda where they run).
  tool.set_gpu_work("dense CP-ALS, Tucker (ST-HOSVD, HOOI) and TT-SVD, through cuBLAS and cuSOLVER");
  describe_device(cp, "dense CP-ALS (not --mask or .tns input), from 2^24 elements under auto");
  describe_device(tucker, "ST-HOSVD and HOOI, from 2^24 elements under auto");
  describe_device(tt, "TT-SVD, from 2^24 elements under auto");
  for (CLI::App* sub : {tt_round, rescal, rank_cmd, reconstruct}) describe_device(sub, "");

  return tool.run(argc, argv, [&] {
    for (CLI::App* sub : {cp, tucker, tt, rescal})
      if (sub->parsed()) {
        decomp.method = sub->get_name();
        return tk::tdecomp::run_decompose(tool, decomp);
      }
    if (tt_round->parsed()) {
      decomp.method = "tt-round";
      return tk::tdecomp::run_tt_round(tool, decomp);
    }
    if (rank_cmd->parsed()) return tk::tdecomp::run_rank(tool, rank);
    return tk::tdecomp::run_reconstruct(tool, rec);
  });
}

//===- DriverOptions.cpp - the spmdc command line -------------------------===//

#include "DriverOptions.h"

#include "spmdc/Runtime/Limits.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>

namespace spmdc {

std::optional<int> parseDriverOptions(int argc, char **argv,
                                      DriverOptions &options) {
  CLI::App app{"spmdc: compiles a single-device training graph into the "
               "per-rank program of an SPMD training step.\n"
               "MLIR's own flags (--mlir-print-ir-after-all, --mlir-timing, "
               "...) are accepted too."};
  app.allow_extras();
  // Checked as strings (CLI11's messages name the choices), then mapped onto
  // the pipeline's enums below.
  std::string target = "cpu", cudaArch = "sm_90", precision = "f32",
              partition = "min-cut", optimizer, fsdpGroup = "layer";
  app.add_option("input", options.input,
                 "graph file (.json, .mlir, .mlirbc, .pt2) or - for stdin")
      ->required();
  app.add_option("-o,--output", options.output, "output file, - for stdout");
  app.add_option("--input-format", options.inputFormat, "input format")
      ->check(CLI::IsMember({"auto", "mlir", "json", "pt2"}));
  app.add_option("--shard-spec", options.shardSpec,
                 "shard spec JSON; absent: one rank, no sharding");
  app.add_option("--target", target, "code generation target")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--cuda-arch", cudaArch, "GPU the PTX is for (--target=cuda)")
      ->check(CLI::IsMember({"sm_80", "sm_90"}));
  app.add_option("--ptx-dir", options.ptxDir,
                 "also write each kernel module's PTX to DIR/NAME.ptx "
                 "(--target=cuda, lower and module stages)");
  app.add_option("--precision", precision,
                 "f32, or bf16: matmuls computed in bf16 (f32 accumulation), "
                 "weights, reductions and the optimizer in f32")
      ->check(CLI::IsMember({"f32", "bf16"}));
  app.add_flag("--gpu-kernels-on-cpu", options.lowering.gpuKernelsOnCpu,
               "--target=cpu: form the kernels the CUDA target would and run "
               "them on the host, to check them without a GPU");
  CLI::Option *overlap = app.add_flag(
      "--overlap,!--no-overlap", options.lowering.overlap,
      "lower and module stages: start each collective as early as its input "
      "exists and wait at its result's first use, so compute overlaps "
      "communication (off by default)");
  app.add_option("--prefetch-depth", options.lowering.prefetchDepth,
                 "with --overlap: how many ZeRO-3 parameter gathers may be "
                 "under way ahead of the one waited for (default 1: one "
                 "group ahead; each more holds one more group's parameters "
                 "in memory; 0: none)")
      ->check(CLI::Range(0, 64))
      ->needs(overlap);
  app.add_flag("--parallel-nests,!--no-parallel-nests",
               options.lowering.parallelNests,
               "--target=cpu: call large loop nests with independent outer "
               "iterations through the runtime, which shares them among a "
               "rank's threads when spmd-run --threads gives it more than "
               "one (on by default)");
  app.add_option("--parallel-nests-min-work",
                 options.lowering.parallelNestsMinWork,
                 "with --parallel-nests: the operations a nest executes at "
                 "least (vector lanes counted) to be shared among threads "
                 "(default 262144)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 50));
  app.add_flag("--aot", options.aot,
               "module stage: also compile the step's host code to native "
               "code, so spmd-run links it instead of compiling it");
  app.add_option("--aot-cpu", options.aotCpu,
                 "the CPU the --aot code is for: an LLVM CPU name "
                 "(x86-64-v3, sapphirerapids, ...) or native (this machine)");
  app.add_option("--aot-opt-level", options.aotOptLevel,
                 "--aot code generation level, as spmd-run's --opt-level")
      ->check(CLI::Range(0, 3));
  app.add_option("--emit", options.emit, "the stage whose output to write")
      ->check(CLI::IsMember({"import", "decompose", "autodiff", "partition",
                             "propagate", "shard", "lower", "module"}));
  app.add_option("--fsdp-group", fsdpGroup,
                 "ZeRO-3's collectives: one per transformer block (layer, "
                 "FSDP2's groups), one per tensor (tensor), or one per "
                 "bucket of consecutive tensors of MB MiB (25, 0.5); on the "
                 "CPU a tensor of 1 MiB or more keeps its own")
      ->check([](const std::string &v) -> std::string {
        return dist::FsdpGroup::parse(v)
                   ? ""
                   : std::string("takes ") + dist::kFsdpGroupExpected +
                         ", got '" + v + "'";
      });
  std::string bucketMiB;
  app.add_option("--bucket-mb", bucketMiB,
                 "gradient collectives (DDP's all-reduces, ZeRO-1/2's "
                 "reduce-scatters and all-gathers) in buckets of N MiB, the "
                 "first of 1 MiB, as DDP; 0: one per tensor (default 25). "
                 "On the CPU a reduce-scatter or all-gather of 1 MiB or more "
                 "keeps its own")
      ->check([](const std::string &v) -> std::string {
        return dist::parseBucketMiB(v)
                   ? ""
                   : "takes a bucket size in MiB (a number, 0 for no "
                     "buckets), got '" +
                         v + "'";
      });
  app.add_option("--partition", partition,
                 "forward/backward partitioning policy")
      ->check(CLI::IsMember({"save-all", "min-cut"}));
  app.add_option("--optimizer", optimizer, "optimizer")
      ->check(CLI::IsMember({"sgd", "adamw"}));
  app.add_option("--lr", options.lr, "learning rate");
  app.add_option("--momentum", options.momentum, "SGD momentum");
  app.add_option("--weight-decay", options.weightDecay, "weight decay");
  app.add_option("--beta1", options.beta1, "AdamW beta1");
  app.add_option("--beta2", options.beta2, "AdamW beta2");
  app.add_option("--eps", options.eps, "AdamW epsilon");
  app.add_option("--clip-grad-norm", options.clipGradNorm,
                 "clip the gradients by their global L2 norm (over all "
                 "shards) to at most X before the update, as "
                 "torch.nn.utils.clip_grad_norm_")
      ->check([](const std::string &v) -> std::string {
        char *end = nullptr;
        double x = std::strtod(v.c_str(), &end);
        return !v.empty() && *end == '\0' && x > 0 && std::isfinite(x)
                   ? ""
                   : "takes a positive finite number (the most the "
                     "gradients' global L2 norm may be), got '" +
                         v + "'";
      });
  app.add_option("--grad-accum", options.gradAccum,
                 "one optimizer step over K micro-batches: the data inputs "
                 "grow K times along their batch (dim 0), the forward and "
                 "backward run once a micro-batch, the gradients are "
                 "averaged and reduced once a step (default 1)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  app.add_option("--report", options.report, "compile report JSON file");
  std::string network;
  app.add_option("--network", network,
                 "with --report: a step-time estimate on a simulated "
                 "cluster, alpha-us=A,gbps=G,flops=F[,membw=B][,ranks=N]: "
                 "A microseconds per message, G Gb/s of link per rank, F "
                 "GFLOP/s per rank, B GB/s of memory bandwidth per rank "
                 "(each op the longer of its flops and its bytes; absent: "
                 "flops alone), N ranks (the mesh's first axis "
                 "rescaled); over the spec's \"network\"")
      ->check([](const std::string &v) -> std::string {
        std::string error;
        return parseNetworkSettings(v, error) ? "" : error;
      });
  app.add_option("--loss", options.loss,
                 "for a torch.export model that returns logits: the loss to "
                 "append, against a new int64 'labels' input")
      ->check(CLI::IsMember({"cross_entropy"}));
  app.add_flag("--verify-each", options.verifyEach,
               "verify the IR after every pass, not only after each group of "
               "stages (slower; for debugging a pass)");
  std::string maxTensorBytes;
  app.add_option("--max-tensor-bytes", maxTensorBytes,
                 "refuse a graph whose inputs or outputs, or an archive "
                 "whose entries, claim more bytes than this (K, M, G, T "
                 "suffixes: powers of 1024; default 16G)")
      ->check([](const std::string &v) -> std::string {
        return rt::parseByteCount(v) ? "" : "--max-tensor-bytes takes a byte "
                                            "count such as 1048576 or 16G, "
                                            "got '" + v + "'";
      });
  app.add_option("--log-level", options.logLevel, "log level (stderr)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &e) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError &e) {
    std::cerr << "spmdc: error: " << e.what() << "\n"
              << "run 'spmdc --help' for usage\n";
    return 2;
  }
  if (!maxTensorBytes.empty())
    rt::setMaxTensorBytes(*rt::parseByteCount(maxTensorBytes));
  options.lowering.target = target == "cuda" ? Target::Cuda : Target::Cpu;
  options.lowering.cudaArch =
      cudaArch == "sm_80" ? CudaArch::Sm80 : CudaArch::Sm90;
  options.lowering.precision =
      precision == "bf16" ? Precision::BF16 : Precision::F32;
  if (!optimizer.empty())
    options.optimizer = optimizer == "sgd" ? tg::OptimizerKind::SGD
                                           : tg::OptimizerKind::AdamW;
  options.fsdpGroup = *dist::FsdpGroup::parse(fsdpGroup);
  if (!network.empty()) {
    std::string error;
    options.network = parseNetworkSettings(network, error);
  }
  if (!bucketMiB.empty())
    options.bucketMiB = *dist::parseBucketMiB(bucketMiB);
  options.partition = partition == "save-all" ? tg::PartitionPolicy::SaveAll
                                              : tg::PartitionPolicy::MinCut;
  options.mlirArgs.push_back(argv[0]);
  for (const std::string &extra : app.remaining()) {
    if (extra.rfind("--mlir-", 0) != 0 && extra.rfind("-mlir-", 0) != 0) {
      std::cerr << "spmdc: error: unknown argument '" << extra << "'\n"
                << "run 'spmdc --help' for usage\n";
      return 2;
    }
    options.mlirArgs.push_back(extra);
  }
  return std::nullopt;
}

} // namespace spmdc

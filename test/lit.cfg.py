# lit configuration of the spmdc tests.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "SPMDC"
# bash, not lit's internal shell: tests check exact exit codes with $?.
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "Fixtures", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.spmdc_obj_root, "test")

config.environment["FILECHECK_OPTS"] = "-enable-var-scope"
# spmd-run's native-code cache: inside the build tree, not the user's home.
config.environment["SPMDC_CACHE_DIR"] = os.path.join(
    config.spmdc_obj_root, "test", "native-cache")
config.substitutions.append(
    ("%expect-exit", os.path.join(config.test_source_root, "Inputs", "expect-exit.sh")))
config.substitutions.append(
    ("%check-sharded", os.path.join(config.test_source_root, "Sharding", "Inputs", "check-sharded.sh")))
config.substitutions.append(
    ("%check-compiled", os.path.join(config.test_source_root, "Module", "Inputs", "check-compiled.sh")))
config.substitutions.append(
    ("%mpirun", os.path.join(config.test_source_root, "Runtime", "Inputs", "mpirun.sh")))
config.substitutions.append(("%spmdc_obj_root", config.spmdc_obj_root))
config.substitutions.append(("%spmdc_src_root", config.spmdc_src_root))
config.substitutions.append(("%examples", os.path.join(config.spmdc_src_root, "docs", "examples")))

# A sanitized build (-DSPMDC_SANITIZE): every tool runs under the options
# CMake chose (reports to files, a distinct exit code).
if config.spmdc_sanitize:
    config.available_features.add("sanitized")
    # This run's reports only (test sanitizer-reports reads them).
    reports = os.path.join(config.spmdc_obj_root, "sanitizer-reports")
    shutil.rmtree(reports, ignore_errors=True)
    os.makedirs(reports, exist_ok=True)
    for assignment in config.spmdc_sanitizer_env.split(";"):
        if assignment:
            name, value = assignment.split("=", 1)
            config.environment[name] = value

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# Scripts under Inputs/ call the tools by name.
llvm_config.with_environment("PATH", config.spmdc_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["spmdc", "spmdc-opt", "spmd-run"], [config.spmdc_tools_dir])
llvm_config.add_tool_substitutions(
    ["FileCheck", "not", "count", "split-file", "mlir-runner"],
    [config.llvm_tools_dir])

# The runtime's MPI tests need mpirun and the MPI test program, which is
# built only where CMake found MPI.
if shutil.which("mpirun") and os.path.exists(
        os.path.join(config.spmdc_tools_dir, "spmdc-collectives-test")):
    config.available_features.add("mpi")

# A private mount namespace with a tmpfs (full-disk tests,
# test/Module/Inputs/full-disk.sh): root, or a user namespace.
def _can_mount_tmpfs():
    import subprocess
    import tempfile
    if not shutil.which("unshare"):
        return False
    with tempfile.TemporaryDirectory() as d:
        flags = "-m" if os.geteuid() == 0 else "-rm"
        try:
            return subprocess.run(
                ["unshare", flags, "mount", "-t", "tmpfs", "-o", "size=64k",
                 "tmpfs", d], capture_output=True, timeout=20).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False
if _can_mount_tmpfs():
    config.available_features.add("tmpfs-mount")

# Hosts made on this machine as network namespaces (test/tools/Inputs/
# two-hosts.sh): root, ip and unshare, and a namespace with a veth pair.
def _can_make_netns():
    import subprocess
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which(
            "unshare"):
        return False
    name = "spmdc-probe-%d" % os.getpid()
    steps = [["ip", "netns", "add", name],
             ["ip", "-n", name, "link", "add", "probea", "type", "veth",
              "peer", "name", "probeb"],
             ["ip", "netns", "exec", name, "unshare", "--uts", "hostname",
              name]]
    try:
        return all(subprocess.run(step, capture_output=True,
                                  timeout=20).returncode == 0
                   for step in steps)
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
if _can_make_netns():
    config.available_features.add("netns")

# The CUDA target. ptxas checks the PTX spmdc emits (CI has the toolkit but
# no GPU); the runtime library is built where CMake found the toolkit and
# NCCL; tests that run kernels need a GPU and are reported UNSUPPORTED
# (skipped, not failed) without one.
cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
ptxas = shutil.which("ptxas") or os.path.join(cuda_home, "bin", "ptxas")
if os.path.exists(ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
if os.path.exists(os.path.join(config.spmdc_obj_root, "lib",
                               "libspmdc_runtime_cuda.so")):
    config.available_features.add("cuda-runtime")
# spmd-run-portable (MLIR, LLVM, OpenBLAS static), what test/gpu/bundle.sh
# packs for a bare GPU machine.
if os.path.exists(os.path.join(config.spmdc_tools_dir, "spmd-run-portable")):
    config.available_features.add("portable-runner")
nvidia_smi = shutil.which("nvidia-smi")
if nvidia_smi:
    import subprocess
    try:
        listed = subprocess.run([nvidia_smi, "-L"], capture_output=True,
                                text=True, timeout=20).stdout
        gpus = listed.count("GPU ")
        if gpus >= 1:
            config.available_features.add("cuda-gpu")
        # NCCL needs a GPU per rank.
        if gpus >= 2:
            config.available_features.add("cuda-gpus-2")
    except (OSError, subprocess.SubprocessError):
        pass
if "cuda-gpu" not in config.available_features:
    lit_config.note("no GPU: the tests that run CUDA kernels are skipped "
                    "(UNSUPPORTED)")

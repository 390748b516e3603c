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

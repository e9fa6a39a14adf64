# lit configuration of the syscluster plugin's tests: each test is a C file
# compiled by clang-19 -O2 -g with the plugin (or hand-written IR run by opt) and a plan made from its own
# `// sc: CALL` markers (make-plan.py); FileCheck checks remarks and IR.
import os
import subprocess

import lit.formats

config.name = "syscluster-llvm"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".c", ".ll"]
config.excludes = ["calibration.json", "plan-fixtures.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(__file__), "..", "build", "test")

llvm_config = os.environ.get("LLVM_CONFIG", "llvm-config-19")
bindir = subprocess.check_output([llvm_config, "--bindir"], text=True).strip()
plugin = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "build", "SysCluster.so"))
if not os.path.exists(plugin):
    lit_config.fatal(f"{plugin} is missing: run make -C llvm first")

config.environment["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
# The host the tests compile for: a calibration with round numbers
# (break-even at ceil((100 us + 4.6 us probes) / 2.5 us) = 42 blocks), never
# the machine's own, so that the tests decide the same everywhere.
config.environment["MULTICALL_CALIBRATION"] = os.path.join(os.path.dirname(__file__), "calibration.json")
config.substitutions.append(
    ("%clang-sc", f"{bindir}/clang -O2 -g -fpass-plugin={plugin} -Xclang -load -Xclang {plugin}"))
config.substitutions.append(("%clangxx", f"{bindir}/clang++"))
config.substitutions.append(("%clang", f"{bindir}/clang"))
cxxflags = subprocess.check_output([llvm_config, "--cxxflags"], text=True).strip()
config.substitutions.append(("%llvm-cxxflags", cxxflags))
libdir = subprocess.check_output([llvm_config, "--libdir"], text=True).strip()
config.substitutions.append(("%llvm-libs", f"-L{libdir} -Wl,-rpath,{libdir} -lLLVM"))
config.substitutions.append(("%opt-sc", f"{bindir}/opt -load-pass-plugin={plugin} -passes=syscluster"))
config.substitutions.append(("%plugin", plugin))
config.substitutions.append(
    ("%remarks", "-Rpass=syscluster -Rpass-missed=syscluster -Rpass-analysis=syscluster"))
config.substitutions.append(
    ("%make-plan", "python3 " + os.path.join(os.path.dirname(__file__), "make-plan.py")))

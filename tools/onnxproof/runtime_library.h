#pragma once
// Choosing the ONNX Runtime library at run time. The engine links libonnxruntime.so.1 (the CPU
// build in .deps/onnxruntime, found through the binary's RUNPATH); ONNXPROOF_ONNXRUNTIME names
// another build's folder (`make setup-gpu`'s .deps/onnxruntime-gpu, with the CUDA and TensorRT
// provider libraries), and the driver starts itself again with that folder first on
// LD_LIBRARY_PATH, which the dynamic loader searches before a RUNPATH. docs/providers.md.

namespace onnxproof::cli {

/// With ONNXPROOF_ONNXRUNTIME set (a folder holding libonnxruntime.so.1, or that file): unless
/// this process already runs with it, prepends the folder (and the folders listed one per line in
/// its `library-path` file: CUDA, cuDNN, TensorRT libraries) to LD_LIBRARY_PATH and executes
/// /proc/self/exe again with the same arguments; never returns then. Returns 0 to go on, or the
/// exit code (3) after printing one line when the folder has no library or the exec fails.
int select_onnxruntime_library(char** argv);

}  // namespace onnxproof::cli

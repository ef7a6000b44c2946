#pragma once
// Choosing the ONNX Runtime library at run time. The engine links libonnxruntime.so.1 (the CPU
// build in .deps/onnxruntime, found through the binary's RUNPATH); ONNXPROOF_ONNXRUNTIME names
// another build's folder (`make setup-gpu`'s .deps/onnxruntime-gpu, with the CUDA and TensorRT
// provider libraries), and the driver starts itself again with that folder first on
// LD_LIBRARY_PATH, which the dynamic loader searches before a RUNPATH. docs/providers.md.

#include <string>

#include "onnxproof/core/error.h"

namespace onnxproof {

/// The variables the choice reads, as the driver found them at start-up (libraries never read the
/// environment themselves); empty: unset.
struct LibraryChoiceEnvironment {
  std::string chosen;        // ONNXPROOF_ONNXRUNTIME
  std::string loaded;        // ONNXPROOF_ONNXRUNTIME_LOADED: the folder this process started with
  bool probe = false;        // ONNXPROOF_ONNXRUNTIME_PROBE: the loader's check, which ends at once
  std::string library_path;  // LD_LIBRARY_PATH
};

inline constexpr const char* k_onnxruntime_variable = "ONNXPROOF_ONNXRUNTIME";
/// Set for the process started again, so it does not start itself a third time.
inline constexpr const char* k_onnxruntime_loaded_variable = "ONNXPROOF_ONNXRUNTIME_LOADED";
/// Set for the probe started before: it ends as soon as the loader has loaded the library.
inline constexpr const char* k_onnxruntime_probe_variable = "ONNXPROOF_ONNXRUNTIME_PROBE";

/// With ONNXPROOF_ONNXRUNTIME set (a folder holding libonnxruntime.so.1, or that file): unless
/// this process already runs with it, prepends the folder (and the folders listed one per line in
/// its `library-path` file: CUDA, cuDNN, TensorRT libraries) to LD_LIBRARY_PATH and executes
/// /proc/self/exe again with the same arguments; never returns then. Returns to go on; an Error
/// (the driver's one line, exit 3) when the folder has no library, the loader refuses it or the
/// exec fails.
Expected<void> select_onnxruntime_library(char** argv, const LibraryChoiceEnvironment& environment);

}  // namespace onnxproof

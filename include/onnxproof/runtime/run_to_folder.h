#pragma once
// `onnxproof run`'s job as a library call: the model on given input files with ONNX Runtime,
// every output written to a folder as output_K.pb (or .npy) with an outputs.json index.

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/tensor/dtype.h"

namespace onnxproof {

struct RunToFolderOptions {
  std::filesystem::path model;
  std::vector<std::pair<std::string, std::filesystem::path>> inputs;  // input name -> .pb or .npy file
  std::string provider = "cpu";
  std::string format = "pb";  // pb | npy
  std::filesystem::path output_dir;
};

struct WrittenOutput {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::filesystem::path file;
};

/// Loads the model through our loader first (it refuses unsafe external data before ONNX
/// Runtime reads it), runs it, writes every output and outputs.json atomically, and removes
/// output files an earlier run listed in the folder's outputs.json that this run did not write
/// (a higher index or the other format), so nothing stale sits beside the new index. Refuses
/// (ErrorCode::usage) an output that would replace an input file, a folder inside one it reads,
/// and a folder holding output_K files no outputs.json lists (a reference data set's: not ours).
Expected<std::vector<WrittenOutput>> run_to_folder(const RunToFolderOptions& options);

}  // namespace onnxproof

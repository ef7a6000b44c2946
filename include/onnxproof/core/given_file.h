// A file the user made (`pipeline --onnx FILE`, prove(onnx=...)), proved as it is: the run's
// model.onnx is its byte-for-byte copy (python/onnxproof/core/given_file.py makes it). The export
// step reads it from export.json, the report names it and ships it.
#pragma once

#include <string>
#include <vector>

namespace onnxproof {

/// One of the file's inputs or outputs and the model's it was bound to.
struct BoundName {
  std::string file;    // its name in the file
  std::string model;   // the model's input, or flat output, it is fed from or compared with
  std::string by;      // how: "--bind", "name", "position", "order", "shape"
  std::string cast;    // "int32 -> int64" where the dtypes differ; empty otherwise
  std::string layout;  // "NHWC -> NCHW" where the file takes the model's axes in another order
};

struct GivenFile {
  std::string path;  // the user's file, absolute
  std::string sha256;
  std::vector<BoundName> inputs;
  std::vector<BoundName> outputs;
  std::string folder{};  // --onnx FOLDER: the generation folder `path` is the step decoder of
};

}  // namespace onnxproof

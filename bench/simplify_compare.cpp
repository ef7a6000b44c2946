// onnxproof's simplifier against ONNX Runtime's own offline optimization (basic level, the
// graph-level rewrites that keep the model portable), on the same model:
//
//   simplify_compare onnxproof MODEL.onnx     time and node counts of simplify_model
//   simplify_compare ort-basic MODEL.onnx     time and node counts of ORT's basic offline optimization
//
// One mode per process so `/usr/bin/time -f %M` gives each one's peak memory (bench/run.sh).
#include <onnxruntime_cxx_api.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "onnxproof/model/model_io.h"
#include "onnxproof/simplify/simplify.h"

using namespace onnxproof;
namespace fs = std::filesystem;

namespace {

int node_count(const onnx::ModelProto& model) {
  int count = 0;
  for_each_graph(model.graph(), [&](const onnx::GraphProto& graph) { count += graph.node_size(); });
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s onnxproof|ort-basic MODEL.onnx\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const fs::path path = argv[2];
  const auto start = std::chrono::steady_clock::now();
  int before = 0;
  int after = 0;
  if (mode == "onnxproof") {
    auto model = load_model(path, LoadOptions{.load_external_data = true});
    if (!model) return 3;
    before = node_count(model->proto);
    auto result = simplify_model(model->proto);
    if (!result) {
      std::fprintf(stderr, "%s\n", result.error().describe().c_str());
      return 3;
    }
    after = node_count(model->proto);
  } else {
    const fs::path optimized = fs::temp_directory_path() / "simplify_compare_ort.onnx";
    Ort::Env env(ORT_LOGGING_LEVEL_FATAL, "bench");
    Ort::SessionOptions options;
    options.SetGraphOptimizationLevel(ORT_ENABLE_BASIC);
    options.SetOptimizedModelFilePath(optimized.c_str());
    // Over 2 GiB the optimized model must keep its weights in external data too.
    options.AddConfigEntry("session.optimized_model_external_initializers_file_name", "simplify_compare_ort.data");
    options.AddConfigEntry("session.optimized_model_external_initializers_min_size_in_bytes", "1024");
    Ort::Session session(env, path.c_str(), options);
    auto original = load_model(path);
    auto result = load_model(optimized);
    if (!original || !result) return 3;
    before = node_count(original->proto);
    after = node_count(result->proto);
    fs::remove(optimized);
    fs::remove(optimized.parent_path() / "simplify_compare_ort.data");
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%-10s %-24s nodes %5d -> %5d  %7.3f s\n", mode.c_str(), path.filename().c_str(), before, after, seconds);
  return 0;
}

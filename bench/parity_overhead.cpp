// The cost of the parity proof over the work it cannot avoid: `run_parity` (reading nothing,
// given the reference in memory: session creation, input checks, running, comparing, argmax)
// against the sum of bare ONNX Runtime Run calls on the same cases with one prepared session.
//
//   parity_overhead MODEL.onnx REFERENCE_DIR [REPETITIONS]
//
// Prints medians over the repetitions and their ratio.
#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "onnxproof/parity/parity.h"

using namespace onnxproof;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Sum of the Run calls alone: the session and the input values are made before the clock starts.
double bare_run_seconds(const char* model, const Reference& reference) {
  Ort::Env env(ORT_LOGGING_LEVEL_FATAL, "bench");
  Ort::SessionOptions options;
  options.SetInterOpNumThreads(1);
  Ort::Session session(env, model, options);
  Ort::AllocatorWithDefaultOptions allocator;
  const std::string input_name = session.GetInputNameAllocated(0, allocator).get();
  const std::string output_name = session.GetOutputNameAllocated(0, allocator).get();
  const char* input_names[] = {input_name.c_str()};
  const char* output_names[] = {output_name.c_str()};
  const auto cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  double total = 0.0;
  for (const auto& c : reference.cases) {
    auto& tensor = const_cast<Tensor&>(c.inputs[0].tensor);
    auto value =
        Ort::Value::CreateTensor(cpu, tensor.mutable_bytes().data(), tensor.bytes().size(), tensor.shape().data(),
                                 tensor.shape().size(), static_cast<ONNXTensorElementDataType>(tensor.dtype()));
    const auto start = Clock::now();
    auto outputs = session.Run(Ort::RunOptions{nullptr}, input_names, &value, 1, output_names, 1);
    total += seconds_since(start);
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.onnx REFERENCE_DIR [REPETITIONS]\n", argv[0]);
    return 2;
  }
  const int repetitions = argc > 3 ? std::atoi(argv[3]) : 5;
  auto start = Clock::now();
  auto reference = read_reference(argv[2]);
  const double read_seconds = seconds_since(start);
  if (!reference) {
    std::fprintf(stderr, "%s\n", reference.error().describe().c_str());
    return 3;
  }
  ParityOptions options;
  options.compare_optimization_off = false;  // one pass, like the bare runs
  std::vector<double> parity_times;
  std::vector<double> bare_times;
  for (int i = 0; i < repetitions; ++i) {
    bare_times.push_back(bare_run_seconds(argv[1], *reference));
    start = Clock::now();
    auto result = run_parity(argv[1], *reference, options);
    parity_times.push_back(seconds_since(start));
    if (!result || !result->passed()) {
      std::fprintf(stderr, "parity did not pass\n");
      return 1;
    }
  }
  const double parity = median(parity_times);
  const double bare = median(bare_times);
  std::printf("cases %zu, repetitions %d\n", reference->cases.size(), repetitions);
  std::printf("read reference (once)      %8.1f ms\n", read_seconds * 1e3);
  std::printf("run_parity (median)        %8.1f ms\n", parity * 1e3);
  std::printf("sum of bare Run (median)   %8.1f ms\n", bare * 1e3);
  std::printf("ratio                      %8.3f\n", parity / bare);
  return 0;
}

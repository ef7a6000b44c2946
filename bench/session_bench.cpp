// The cost of onnxproof's Session::run (input validation, wrapping, copying outputs out) against a
// bare ONNX Runtime Run with preallocated Ort::Values, on a tiny model (where overhead dominates)
// and on a convolution model from ONNX's backend data.
#include <benchmark/benchmark.h>
#include <onnxruntime_cxx_api.h>

#include <string>

#include "onnxproof/runtime/session.h"
#include "onnxproof/tensor/tensor_io.h"

using namespace onnxproof;

namespace {

const std::string k_data = ONNXPROOF_BACKEND_DATA;
const char* const k_models[] = {"node/test_add", "pytorch-converted/test_Conv2d"};

std::string model_path(int index) { return k_data + "/" + k_models[index] + "/model.onnx"; }

void BM_OnnxproofRun(benchmark::State& state) {
  const int index = static_cast<int>(state.range(0));
  auto session = Session::open(model_path(index), SessionOptions{.intra_op_threads = 1});
  if (!session) {
    state.SkipWithError(session.error().describe().c_str());
    return;
  }
  std::vector<NamedTensor> inputs;
  std::vector<Feed> feeds;
  for (std::size_t i = 0; i < session->inputs().size(); ++i) {
    const std::string file = k_data + "/" + k_models[index] + "/test_data_set_0/input_" + std::to_string(i) + ".pb";
    inputs.push_back(*read_tensor_pb(file));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) feeds.push_back({session->inputs()[i].name, &inputs[i].tensor});
  for (auto _ : state) benchmark::DoNotOptimize(session->run(feeds));
  state.SetLabel(k_models[index]);
}

void BM_BareOrtRun(benchmark::State& state) {
  const int index = static_cast<int>(state.range(0));
  Ort::Env env(ORT_LOGGING_LEVEL_FATAL, "bench");
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(1);
  options.SetInterOpNumThreads(1);
  Ort::Session session(env, model_path(index).c_str(), options);
  Ort::AllocatorWithDefaultOptions allocator;
  std::vector<NamedTensor> inputs;
  std::vector<std::string> names;
  std::vector<Ort::Value> values;
  const auto cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  for (std::size_t i = 0; i < session.GetInputCount(); ++i) {
    names.emplace_back(session.GetInputNameAllocated(i, allocator).get());
    const std::string file = k_data + "/" + k_models[index] + "/test_data_set_0/input_" + std::to_string(i) + ".pb";
    inputs.push_back(*read_tensor_pb(file));
  }
  for (auto& input : inputs) {
    auto& tensor = input.tensor;
    values.push_back(Ort::Value::CreateTensor(cpu, tensor.mutable_bytes().data(), tensor.bytes().size(),
                                              tensor.shape().data(), tensor.shape().size(),
                                              static_cast<ONNXTensorElementDataType>(tensor.dtype())));
  }
  std::vector<const char*> input_names;
  for (const auto& name : names) input_names.push_back(name.c_str());
  const std::string output_name = session.GetOutputNameAllocated(0, allocator).get();
  const char* output_names[] = {output_name.c_str()};
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        session.Run(Ort::RunOptions{nullptr}, input_names.data(), values.data(), values.size(), output_names, 1));
  }
  state.SetLabel(k_models[index]);
}

BENCHMARK(BM_OnnxproofRun)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BareOrtRun)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

// Reading and writing tensor files: TensorProto .pb against .npy, at an image batch's size and at
// 64 MiB.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "onnxproof/tensor/tensor_io.h"

namespace fs = std::filesystem;
using namespace onnxproof;

namespace {

Tensor make_tensor(int64_t elements) {
  auto tensor = *Tensor::zeros(DType::float32, {elements});
  float value = 0.0F;
  for (float& v : tensor.mutable_values<float>()) v = (value += 0.25F);
  return tensor;
}

fs::path bench_file(const char* name) { return fs::temp_directory_path() / name; }

void BM_WritePb(benchmark::State& state) {
  const Tensor tensor = make_tensor(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(write_tensor_pb(bench_file("bench.pb"), tensor, "x"));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(tensor.bytes().size()));
}

void BM_ReadPb(benchmark::State& state) {
  (void)write_tensor_pb(bench_file("bench.pb"), make_tensor(state.range(0)), "x");
  for (auto _ : state) benchmark::DoNotOptimize(read_tensor_pb(bench_file("bench.pb")));
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4);
}

void BM_WriteNpy(benchmark::State& state) {
  const Tensor tensor = make_tensor(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(write_npy(bench_file("bench.npy"), tensor));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(tensor.bytes().size()));
}

void BM_ReadNpy(benchmark::State& state) {
  (void)write_npy(bench_file("bench.npy"), make_tensor(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(read_npy(bench_file("bench.npy")));
  state.SetBytesProcessed(state.iterations() * state.range(0) * 4);
}

// 1x3x224x224 (588 KiB) and 16M floats (64 MiB).
constexpr int64_t k_image = 3 * 224 * 224;
constexpr int64_t k_large = 16 * 1024 * 1024;

BENCHMARK(BM_WritePb)->Arg(k_image)->Arg(k_large)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadPb)->Arg(k_image)->Arg(k_large)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WriteNpy)->Arg(k_image)->Arg(k_large)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadNpy)->Arg(k_image)->Arg(k_large)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

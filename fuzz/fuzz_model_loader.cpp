// The model loader on arbitrary bytes: parse, external-data resolution (inside the model's folder
// only), the tensor and graph walkers and the summary. Nothing may crash, hang or read outside.
#include "fuzz_support.h"
#include "onnxproof/check/check_model.h"
#include "onnxproof/model/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxproof;
  (void)parse_model(fuzz::as_text(data, size), "fuzz input");
  const auto path = fuzz::write_input("model.onnx", fuzz::as_text(data, size));
  auto model = load_model(path, LoadOptions{.load_external_data = true});
  if (!model) return 0;
  (void)summarize_model(model->proto);
  for_each_graph(model->proto.graph(), [](const onnx::GraphProto& graph) { (void)outer_names_used(graph); });
  return 0;
}

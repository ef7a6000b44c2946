// The command line's spec parsers and the JSON the front end hands back, on arbitrary text:
// --input, --dynamic, --sweep, --output-tolerance, findings in export.json, reference cases.json,
// a whole export.json.
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "onnxproof/core/finding.h"
#include "onnxproof/export/export_step.h"
#include "onnxproof/parity/parity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxproof;
  if (size == 0) return 0;
  const std::string text(fuzz::as_text(data + 1, size - 1));
  switch (data[0] % 7) {
    case 0:
      (void)parse_input_spec(text);
      break;
    case 1:
      (void)parse_dynamic_axis(text);
      break;
    case 2:
      (void)parse_sweep(text);
      break;
    case 3: {
      ToleranceOptions tolerance;
      if (tolerance.add_output_tolerance(text)) (void)tolerance.validate();
      break;
    }
    case 4: {
      const auto json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!json.is_discarded()) (void)finding_from_json(json, "fuzz");
      break;
    }
    case 5:
      (void)read_cases_manifest(fuzz::write_input("cases.json", text));
      break;
    default:
      fuzz::write_input("export.json", text);
      (void)read_export_manifest(fuzz::scratch_folder());
      (void)frozen_shape_options_beside(fuzz::scratch_folder());
  }
  return 0;
}

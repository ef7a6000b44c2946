#pragma once
// The engine's half of the contract with the Python front end: the configuration it is started
// with (onnxproof.config/1). export.json is read by read_export_manifest (export_step.h).

#include <nlohmann/json.hpp>

#include "onnxproof/export/export_step.h"

namespace onnxproof {

/// The onnxproof.config/1 document for `options` (python/onnxproof/core/contract.py checks it).
nlohmann::json config_json(const ExportOptions& options);

}  // namespace onnxproof

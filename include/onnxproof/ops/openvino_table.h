#pragma once
// The `openvino` target's support table from the installed OpenVINO itself: the model read by its
// ONNX frontend and compiled by its CPU plugin (OpenVINO's C API has no query_model; a node the
// frontend cannot convert fails the read, naming its operator). Used in place of the static table
// (data/op-support/openvino.csv) wherever OpenVINO is installed.

#include <filesystem>
#include <optional>

#include <onnx/onnx_pb.h>

#include "onnxproof/ops/support_table.h"

namespace onnxproof {

/// The table for `model` (the file at `path`) from OpenVINO: every operator the model uses,
/// supported unless the frontend named it unconverted, or the whole model refused with OpenVINO's
/// own message when it read the graph but could not compile it. nullopt where OpenVINO is not
/// installed (the static table then stands).
std::optional<SupportTable> openvino_model_table(const std::filesystem::path& path, const onnx::ModelProto& model);

/// `tables` with the `openvino` target's replaced by openvino_model_table() where it can be made.
void use_installed_openvino(std::vector<SupportTable>& tables, const std::filesystem::path& path,
                            const onnx::ModelProto& model);

}  // namespace onnxproof

#pragma once
// ONNX Runtime sessions. This folder is the only place that touches ONNX Runtime; its exceptions
// are caught here and come back as Errors.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxproof/core/error.h"
#include "onnxproof/tensor/tensor.h"

namespace onnxproof {

/// ONNX Runtime's graph optimization levels.
enum class GraphOptimization { disabled, basic, extended, all };

/// "disabled", "basic", "extended", "all": the names report.json and --optimization use.
std::string_view optimization_name(GraphOptimization level);
/// The level a name stands for; nullopt for any other text.
std::optional<GraphOptimization> parse_optimization(std::string_view name);

struct SessionOptions {
  /// "cpu", "cuda", "tensorrt" (ONNX Runtime's providers by onnxproof's short names), or
  /// "openvino" (OpenVINO's CPU plugin in float32) and "openvino:default" (its default precision).
  std::string provider = "cpu";
  GraphOptimization optimization = GraphOptimization::all;
  /// Intra-op threads; 0 lets ONNX Runtime choose.
  int intra_op_threads = 0;
  /// Refuse to create the session when some nodes would fall back to the CPU provider (a GPU
  /// provider's silent fallback shows up as a session error).
  bool forbid_cpu_fallback = false;
  /// ONNX Runtime graph transformers and rewrite rules not to apply, by name (its session config
  /// optimization.disable_specified_optimizers, ';'-separated); names it does not know are ignored.
  std::vector<std::string> disabled_optimizers{};
  /// TensorRT: the folder its built engines are cached in (trt_engine_cache_enable and
  /// trt_engine_cache_path); empty: no cache, every session builds its engines again.
  std::filesystem::path tensorrt_cache{};
  /// TensorRT: let it build float16 engines (trt_fp16_enable), its per-layer precision choice.
  bool tensorrt_fp16 = false;
  /// ONNX Runtime's pre-packed weight copies (session.disable_prepacking when off): faster
  /// matrix products, a second copy of their weights beside the file's memory-mapped ones.
  bool prepacking = true;
  /// ONNX Runtime's CPU memory arena: activations come back from it rather than the allocator;
  /// off, what a run allocates is given back after it (the arena keeps its largest run's size).
  bool cpu_arena = true;
  /// Write ONNX Runtime's profile (one event per node run, with the provider that ran it) to a
  /// file whose path starts with this prefix; empty: no profiling. end_profiling() returns it.
  std::filesystem::path profile_prefix{};
};

/// Where ONNX Runtime ran one node, from its profile.
struct NodePlacement {
  std::string node;      // the node's name in the graph ONNX Runtime ran (after its fusions)
  std::string op_type;   // "Conv", or a fused kernel's type ("FusedConv")
  std::string provider;  // onnxproof's short name: "cpu", "cuda", "tensorrt"
};

/// The node placements in an ONNX Runtime profile (its JSON text: an array of trace events whose
/// "cat" is "Node" and whose name ends "_kernel_time", with args.op_name and args.provider), one
/// per node in the order first seen. ErrorCode::invalid_input when the text is not such an array.
Expected<std::vector<NodePlacement>> parse_profile_placements(std::string_view profile_json);

/// The same, read from a profile file (end_profiling()'s path).
Expected<std::vector<NodePlacement>> read_profile_placements(const std::filesystem::path& profile);

/// The placements whose provider is not `provider` (a short name): the nodes ONNX Runtime handed
/// to another provider, the CPU usually, when `provider` was asked for.
std::vector<NodePlacement> nodes_off_provider(const std::vector<NodePlacement>& placements,
                                              const std::string& provider);

/// `options` for a proof of `model` that runs each case once: pre-packing and the CPU arena off
/// where the model's weights (its file and a ".data" file beside it) pass 256 MiB, since their
/// copies then cost more memory than their speed saves time (bench/RESULTS.md, issue 47).
SessionOptions lean_for_large_model(const std::filesystem::path& model, SessionOptions options);

/// A model input or output as the session sees it.
struct SessionValue {
  std::string name;
  bool is_tensor = true;             // false: sequence, map or optional
  std::string type;                  // "float32", or "sequence"/"map"/"optional" when not a tensor
  DType dtype = DType::undefined;    // for tensors
  std::vector<int64_t> shape;        // -1 where the dimension is not fixed
  std::vector<std::string> symbols;  // dim_param names, "" where none
};

/// "1x3xbatchx?" style rendering of a SessionValue's dimensions.
std::string describe_dims(const SessionValue& value);

/// A named input tensor; `tensor` must outlive the run call (it is not copied).
struct Feed {
  std::string name;
  const Tensor* tensor = nullptr;
};

class Session {
 public:
  /// Creates a session for the model file. Fails with ErrorCode::not_found for a provider this
  /// ONNX Runtime build lacks (the message lists the available ones), ErrorCode::runtime when ONNX
  /// Runtime refuses the model (its message included).
  static Expected<Session> open(const std::filesystem::path& model, const SessionOptions& options = {});
  /// The same for a serialized model held in memory (no external data): no temporary file.
  static Expected<Session> open_bytes(std::string_view model, const SessionOptions& options = {});

  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  const std::vector<SessionValue>& inputs() const;
  const std::vector<SessionValue>& outputs() const;
  const SessionOptions& options() const;
  /// The precision OpenVINO computes in, read back from the compiled model ("f32", "bf16"); empty
  /// for ONNX Runtime's providers, which compute in the model's own types.
  std::string precision() const;

  /// Checks feeds against inputs(): every input fed once, no unknown names, dtype and rank as
  /// declared, fixed dimensions equal. The error names the input and what was expected.
  Expected<void> validate(const std::vector<Feed>& feeds) const;

  /// Validates, runs, and returns every output in outputs() order. A non-tensor output is an
  /// ErrorCode::unsupported error; a failure inside ONNX Runtime is ErrorCode::runtime.
  Expected<std::vector<Tensor>> run(const std::vector<Feed>& feeds);

  /// Ends profiling (SessionOptions::profile_prefix) and returns the profile file ONNX Runtime
  /// wrote; empty when profiling was off. ErrorCode::runtime when ONNX Runtime cannot end it.
  Expected<std::filesystem::path> end_profiling();

 private:
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  /// Opens from `path` when it is set, else from `bytes`; `what` names the model in errors.
  static Expected<Session> open_from(const std::filesystem::path* path, std::string_view bytes, const std::string& what,
                                     const SessionOptions& options);
  std::unique_ptr<Impl> m_impl;
};

/// Starts ONNX Runtime (once per process: its environment, the C API bound, the deployment's
/// session-config read); fails saying why it cannot start as configured.
Expected<void> start_onnxruntime();

/// The KEY=VALUE entries of the `session-config` file in `folder` (a release folder of the cache,
/// or ONNXPROOF_ONNXRUNTIME's: the options an application embedding that release sets; blank
/// lines and # comments aside); none when there is no such file. ErrorCode::invalid_input naming
/// the file for one that is not a regular file, holds a NUL byte or a line that is not KEY=VALUE.
Expected<std::vector<std::pair<std::string, std::string>>> read_session_config(const std::filesystem::path& folder);

/// Version of the loaded ONNX Runtime library ("1.30.0").
std::string onnxruntime_version();

/// The newest ai.onnx opset the loaded ONNX Runtime accepts (it refuses a model stamped with a
/// newer one), found once by asking it to load a one-node model at each candidate opset.
int onnxruntime_newest_opset();

/// The newest IR version the loaded ONNX Runtime reads (1.30: 13), found the same way.
int onnxruntime_newest_ir_version();

/// "openvino", "openvino:f32", "openvino:default": the providers OpenVINO runs, not ONNX Runtime.
bool is_openvino_provider(std::string_view provider);

/// The OpenVINO release the engine loads (Installation::openvino_dir): "2026.4.1-22982-...";
/// ErrorCode::not_found saying how to install it where it is absent or the loader refuses it.
Expected<std::string> openvino_version();

/// What the installed OpenVINO makes of a model file: read by its ONNX frontend, compiled for the
/// CPU in float32.
struct OpenvinoReading {
  std::string version;
  std::vector<std::string> unconverted;  // "NoSuchOp-17": operators the frontend has no rule for
  std::string refusal;                   // why it could not read or compile it otherwise; empty: it did
};

/// Reads and compiles `model` with OpenVINO. An Error only where OpenVINO itself cannot run (not
/// installed) or the model is no file onnxproof's loader accepts; OpenVINO's refusals are data.
Expected<OpenvinoReading> read_with_openvino(const std::filesystem::path& model);

/// onnxproof names ("cpu", "cuda", ...) of the providers compiled into the loaded ONNX Runtime.
std::vector<std::string> available_providers();

}  // namespace onnxproof

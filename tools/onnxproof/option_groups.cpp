// The option groups several commands share (option_groups.h).
#include "option_groups.h"

namespace onnxproof::cli {

// The model option group, spelled the same by every command that exports (DESIGN.md).
void add_model_options(CLI::App* app, ModelArguments& model, bool adoptable) {
  auto* spec = app->add_option("--model", model.model,
                               "SPEC: file.py:callable, package.module:callable, model.pt, torchvision:NAME, timm:NAME "
                               "or hf:CLASS[:key=value,...] (random weights); TensorFlow: keras:NAME, model.keras, "
                               "saved_model:DIR, or a file.py:callable that imports tensorflow or keras");
  if (adoptable) {
    auto* adopted = app->add_option("--from-export", model.from_export,
                                    "Prove the export in this folder (export.json, model.onnx, reference/ from "
                                    "onnxproof export or onnxproof.prove) instead of exporting; needs --out")
                        ->excludes(spec);
    app->add_option("--onnx", model.onnx,
                    "FILE.onnx or FOLDER (a decoder's generation files): prove your own export against --model as "
                    "it is (never changed, never exported again); inputs bound by name, then position")
        ->needs(spec)
        ->excludes(adopted);
    app->add_option("--bind", model.bind,
                    "FILE_INPUT=MODEL_INPUT: with --onnx, the model input a file input is fed from (repeat)");
  } else {
    spec->required();
  }
  app->add_option("--input", model.inputs,
                  "NAME=DIMS:DTYPE[:LO..HI], e.g. x=1x3x224x224:float32 (repeat per input; torchvision:, timm: and "
                  "hf: models, and TensorFlow models, have default inputs)");
  app->add_option("--dynamic", model.dynamic,
                  "NAME:AXIS=LABEL[:MIN..MAX] names a variable axis of an input, or of an output (checked in the "
                  "export), e.g. x:0=batch or x:0=batch:1..64 (repeat)");
  app->add_option(
      "--opset", model.opset,
      "ONNX opset to export at (default: the exporter's own, within every --target and recent ONNX Runtimes)");
  app->add_option("--exporter", model.exporter,
                  "auto (torch's default, then the other one), torchscript, dynamo, or both (pipeline: "
                  "each proved, side by side in the report); TensorFlow models: auto, tf2onnx, keras (Keras's own "
                  "export) or both")
      ->capture_default_str();
  app->add_option("--sweep", model.sweep, "LABEL=SIZES, the sizes a dynamic axis is proved at, e.g. batch=1,3,8");
  app->add_option("--samples", model.samples, "Generated inputs per shape case")->capture_default_str();
  app->add_option("--generate", model.generate,
                  "N greedy steps from a prompt through PyTorch and ONNX Runtime, feeding the cache back: the "
                  "tokens must be identical (a decoder with a cache: hf:...ForCausalLM:use_cache=true; an "
                  "encoder-decoder: hf:...ForConditionalGeneration:use_cache=true)");
  app->add_flag("--merged-decoder", model.merged_decoder,
                "With --generate on an encoder-decoder: also export the decoder as one file with a "
                "use_cache_branch input (decoder_merged.onnx), both branches proved by the generation");
  app->add_option("--data", model.data, "file.py:callable yielding real input samples (dicts or tuples)");
  app->add_option("--data-dir", model.data_dir, "Folder of real input samples (.npy / .pb)");
  app->add_option("--export-timeout", model.export_timeout,
                  "Stop the export after this many seconds (a forward pass that never returns)")
      ->capture_default_str();
  app->add_option("--python", model.python,
                  "Python interpreter with torch (default: $ONNXPROOF_PYTHON, else the pinned .venv/bin/python); for "
                  "TensorFlow models one with tensorflow, keras and tf2onnx (default: $ONNXPROOF_TF_PYTHON, else "
                  ".venv-tf/bin/python)");
}

// The proof option group: providers and tolerances, spelled the same by parity, golden and pipeline.
void add_proof_options(CLI::App* app, ProofArguments& proof) {
  app->add_option("--provider", proof.providers,
                  "Runtimes to prove on, comma-separated: cpu, cuda, tensorrt (ONNX Runtime); openvino (float32, its "
                  "default precision beside), openvino:f32, openvino:default")
      ->capture_default_str();
  app->add_option("--rtol", proof.rtol, "Relative tolerance for every float output (default per dtype: float32 1e-3)");
  app->add_option("--atol", proof.atol, "Absolute tolerance for every float output (default per dtype: float32 1e-5)");
  app->add_option("--output-tolerance", proof.output_tolerances, "NAME=RTOL,ATOL for one output (repeat)");
  app->add_flag("--no-optimization-check", proof.skip_optimization_check,
                "Do not run the cases that fail once more with ONNX Runtime's graph optimizations disabled");
  app->add_option("--disable-optimizer", proof.disabled_optimizers,
                  "An ONNX Runtime optimizer the deployment disables (session config "
                  "optimization.disable_specified_optimizers), e.g. ConvAddFusion: every session runs without it "
                  "(repeat)");
}

// --precision, for the commands that prove a model file's numbers (parity, pipeline).
void add_precision_option(CLI::App* app, ProofArguments& proof) {
  app->add_option("--precision", proof.precision,
                  "fp32: prove the model as exported; fp16: prove its float16 conversion (ONNX Runtime's converter, "
                  "inputs and outputs kept float32) against the float64 reference with a float16 budget")
      ->check(CLI::IsMember({"fp32", "fp16"}))
      ->capture_default_str();
  app->add_option("--keep-float32", proof.keep_float32,
                  "With --precision fp16: a node the conversion keeps in float32 (repeat; onnxproof repair finds "
                  "the block that breaks in float16)");
}

}  // namespace onnxproof::cli

#!/bin/bash
# `cmake --install` gives a tool that works outside the source tree: the installed binary finds its
# data files, front end and ONNX Runtime under the prefix, run from another folder with no
# onnxproof variable set. Usage: install_tree.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" > /dev/null
cd /
unset ONNXPROOF_DATA ONNXPROOF_PYTHONPATH
version=$("$prefix/bin/onnxproof" --version)
grep -q "^data files  *$prefix/share/onnxproof/data$" <<< "$version" || { echo "data files not from the install:"; echo "$version"; exit 1; }
grep -q "^front end  *$prefix/share/onnxproof/python$" <<< "$version" || { echo "front end not from the install:"; echo "$version"; exit 1; }
test -f "$prefix/share/onnxproof/data/finding_codes.json"
test -f "$prefix/share/onnxproof/python/onnxproof/core/main.py"
test -f "$prefix/share/onnxproof/examples/digits/digits_cnn.py"
# The front end validates against the installed schemas, the ones the engine was generated from.
test -f "$prefix/share/onnxproof/schemas/export.schema.json"
schemas=$(PYTHONPATH="$prefix/share/onnxproof/python" python3 -c "from onnxproof.core import contract; print(contract.schema_dir())")
[[ "$schemas" == "$prefix/share/onnxproof/schemas" ]] || { echo "schemas not from the install: $schemas"; exit 1; }
# (Outputs are captured first: with pipefail, `cmd | grep -q` fails when grep exits before cmd ends.)
libraries=$(ldd "$prefix/bin/onnxproof")
grep -q "libonnxruntime.so.1 => $prefix/.*lib/libonnxruntime.so.1" <<< "$libraries" || { echo "ONNX Runtime not from the install:"; echo "$libraries"; exit 1; }
# A command that reads a support table and runs ONNX Runtime.
probe=$("$prefix/bin/onnxproof" ops probe --op Relu --op Gelu)
grep -q "^probed 2 schemas" <<< "$probe" || { echo "$probe"; exit 1; }
echo "installed tool works from $prefix"

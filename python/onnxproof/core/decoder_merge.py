"""One decoder file for both kinds of step, as Optimum ships them (`decoder_model_merged.onnx`): an
`If` on the boolean input `use_cache_branch` holds the decoder without a cache (the first step: it
computes the cross-attention cache from the encoder's states) and the decoder with one (every later
step: the cross-attention cache comes back in and goes out unchanged).

Both branches read the outer graph's inputs and its initializers; a weight both exports hold is
stored once (initializers are matched by content), so the merged file is about one decoder's size.
The names inside each branch get a prefix of their own: a branch may not reuse a name the outer
graph or the other branch defines.
"""
import hashlib

USE_CACHE_BRANCH = "use_cache_branch"


def _content_key(tensor):
    from onnx import numpy_helper
    array = numpy_helper.to_array(tensor)
    return (tensor.data_type, tuple(tensor.dims), hashlib.sha256(array.tobytes()).hexdigest())


def _branch(graph, name, prefix, outputs, renamed_weights):
    """`graph`'s nodes as an If branch: values it defines prefixed, outer inputs and the shared
    initializers read as they are, its outputs `outputs` ({branch output: value in graph})."""
    from onnx import helper
    defined = {output for node in graph.node for output in node.output if output}

    def local(value):
        if value in renamed_weights:
            return renamed_weights[value]
        if value in defined:
            return prefix + value
        return value  # an outer input (or '' for an omitted optional input)
    nodes = []
    for node in graph.node:
        copy = type(node)()
        copy.CopyFrom(node)
        copy.name = prefix + node.name
        copy.input[:] = [local(value) for value in node.input]
        copy.output[:] = [prefix + value if value else value for value in node.output]
        nodes.append(copy)
    branch_outputs = []
    for output_name, value in outputs.items():
        target = prefix + "output/" + output_name
        nodes.append(helper.make_node("Identity", [local(value)], [target], name=prefix + "output_" + output_name))
        branch_outputs.append(helper.make_empty_tensor_value_info(target))
    return helper.make_graph(nodes, name, [], branch_outputs)


def merge_decoders(without_cache, with_cache, output_names, cross_pass_through):
    """The merged decoder (a ModelProto) of two decoders exported from the same model:
    `without_cache` (inputs a subset of the merged ones, outputs `output_names`) and `with_cache`
    (its outputs a subset; `cross_pass_through` maps each output it lacks to the input it passes
    through, e.g. present.0.encoder.key -> past_key_values.0.encoder.key). The merged inputs are
    every input of either, then `use_cache_branch` (bool, shape [1])."""
    from onnx import TensorProto, helper
    shared, renamed = {}, ({}, {})
    for index, model in enumerate((with_cache, without_cache)):
        for tensor in model.graph.initializer:
            key = _content_key(tensor)
            if key not in shared:
                unique = type(tensor)()
                unique.CopyFrom(tensor)
                unique.name = f"shared_{len(shared)}"
                shared[key] = unique
            renamed[index][tensor.name] = shared[key].name
    inputs, seen = [], set()
    for model in (with_cache, without_cache):
        for value in model.graph.input:
            if value.name not in seen and value.name not in renamed[0] and value.name not in renamed[1]:
                seen.add(value.name)
                inputs.append(value)
    inputs.append(helper.make_tensor_value_info(USE_CACHE_BRANCH, TensorProto.BOOL, [1]))
    produced = {output.name for output in with_cache.graph.output}
    cache_outputs = {name: name if name in produced else cross_pass_through[name] for name in output_names}
    then_branch = _branch(with_cache.graph, "with_cache", "cache/", cache_outputs, renamed[0])
    else_branch = _branch(without_cache.graph, "without_cache", "no_cache/", {name: name for name in output_names},
                          renamed[1])
    by_name = {output.name: output for output in without_cache.graph.output}
    graph = helper.make_graph(
        [helper.make_node("If", [USE_CACHE_BRANCH], list(output_names), name="use_cache_branch_if",
                          then_branch=then_branch, else_branch=else_branch)],
        "merged_decoder", inputs, [by_name[name] for name in output_names], initializer=list(shared.values()))
    domains = {}
    for model in (with_cache, without_cache):
        for entry in model.opset_import:
            domains[entry.domain] = max(domains.get(entry.domain, 0), entry.version)
    merged = helper.make_model(graph, opset_imports=[helper.make_opsetid(domain, version) for domain, version in
                                                     domains.items()],
                               ir_version=max(with_cache.ir_version, without_cache.ir_version),
                               producer_name="onnxproof (merged decoder)")
    functions = {(function.domain, function.name): function for model in (with_cache, without_cache)
                 for function in model.functions}
    merged.functions.extend(functions.values())
    return merged

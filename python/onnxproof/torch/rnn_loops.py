"""RNN decompositions that keep a dynamic sequence length dynamic under torch.export.

torch's default decompositions of aten.lstm, aten.gru, aten.rnn_tanh and aten.rnn_relu unroll the
sequence in Python, which specializes the sequence length to the example's (a correct RNN failed
with FROZEN_DIMENSION 'Eq(seq, 11)'). torch.onnx.export(dynamo=True) swaps in while_loop versions
of LSTM and GRU (torch.onnx's patch_dynamic_shape_rnn_decompositions); the Elman RNNs get one
here, written on the same private helpers of torch._decomp (the layer loop, bidirection, batch_first).
Every part is optional: an older torch without them keeps its own decompositions."""
import contextlib


@contextlib.contextmanager
def dynamic_rnn_decompositions(dynamic_shapes):
    """While a model with dynamic shapes is captured or translated: LSTM and GRU by torch.onnx's
    own while_loop decompositions, Elman RNNs (tanh, relu) by elman_while_loop's."""
    if not dynamic_shapes:
        yield
        return
    import torch
    # Seen: after an LSTM's export in the same process, an Elman RNN's while_loop translated with
    # Python ints among its inputs and failed; clearing torch.compile's caches first avoids it.
    torch._dynamo.reset()
    with contextlib.ExitStack() as stack:
        try:
            from torch.onnx._internal.exporter._capture_strategies import patch_dynamic_shape_rnn_decompositions
            stack.enter_context(patch_dynamic_shape_rnn_decompositions(dynamic_shapes))
        except ImportError:  # an older torch: its unrolled decompositions, as its torch.onnx.export has
            pass
        try:
            import torch
            from torch.export._patches import _register_rnn_while_loop_decomposition
            for op, activation in ((torch.ops.aten.rnn_tanh.input, torch.tanh),
                                   (torch.ops.aten.rnn_relu.input, torch.relu)):
                stack.enter_context(_register_rnn_while_loop_decomposition(op, _elman_impl(activation)))
        except (ImportError, AttributeError):
            pass
        yield


def _elman_impl(activation):
    """aten.rnn_tanh/rnn_relu(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first) -> (output, h_n) with each layer a while_loop over the sequence."""
    def rnn(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        import torch
        from torch._decomp.decompositions import _rnn_helper, gather_params
        layer = _elman_layer(activation)
        output, hidden = _rnn_helper(input, list(hx.unbind(0)), gather_params(params, has_biases, False), has_biases,
                                     num_layers, dropout, train, bidirectional, batch_first, layer)
        return output, torch.stack(hidden, 0)
    return rnn


def _elman_layer(activation):
    """One layer over a (sequence, batch, features) input: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh),
    the input's projection computed for every step at once, the recurrence in a while_loop."""
    def layer(inp, hidden, params, has_biases, reverse=False):
        import torch
        from torch._higher_order_ops.while_loop import while_loop
        from torch.export._patches import _clone_tensors_that_alias
        w_ih, w_hh = params[0], params[1]
        b_ih, b_hh = (params[2], params[3]) if has_biases else (None, None)
        projected = torch.nn.functional.linear(inp, w_ih, b_ih)
        if reverse:
            projected = projected.flip(0)
        w_hh, b_hh = _clone_tensors_that_alias((w_hh, b_hh))  # while_loop takes no aliased weights
        steps = projected.size(0)

        def more(index, outputs, state):
            return index < steps

        def step(index, outputs, state):
            t = index.item()
            torch._check_is_size(t, max=steps - 1)
            state = activation(projected[t] + torch.nn.functional.linear(state, w_hh, b_hh))
            outputs = outputs.clone()
            outputs[t] = state
            return index + 1, outputs, state

        empty = torch.empty(steps, *hidden.shape, dtype=hidden.dtype, device=hidden.device)
        _, outputs, last = while_loop(more, step, [torch.tensor(0, dtype=torch.int64), empty, hidden])
        return (outputs.flip(0) if reverse else outputs), last
    return layer

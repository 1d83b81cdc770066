"""ATen's whole recurrent layers — `aten.lstm.input`, `aten.gru.input` (nn.LSTM, nn.GRU) — unrolled
into Ember's primitives here, instead of by torch's decompositions.

torch's decomposition traces every cell of every step through Python: a 6-layer LSTM over 512 steps
(KernelBench level 3, 35-42) took over 90-120 s on the 2-core VM and did not finish on the device in
170 s. Kept whole (the importer removes converted ops from the decomposition table), the layer is
built here in well under that: per direction, the first layer's input projections as one product
of the whole sequence with the input weights (a GEMM over batch x time), then per step the
recurrent product and the gates; later layers take the previous layer's states step by step. The math is PyTorch's
(docs of nn.LSTM / nn.GRU):

    LSTM: i, f, g, o = split(x W_ih^T + b_ih + h W_hh^T + b_hh);  c' = s(f) c + s(i) tanh(g);
          h' = s(o) tanh(c')
    GRU:  r, z, n from x W_ih^T + b_ih and h W_hh^T + b_hh:  r = s(x_r + h_r), z = s(x_z + h_z),
          n = tanh(x_n + r h_n);  h' = (1 - z) n + z h

A bidirectional layer runs a second direction from the last step back and concatenates the two
directions' states along the features. Dropout between layers in training mode and projections
(proj_size) are refused: their eager results draw random numbers / change the state size.
"""
from __future__ import annotations

from ...ops import movement as M
from .registry import RECORDED_SHAPE_QUIRKS, UnsupportedOpError, aten


def _layer_params(params: list, has_biases: bool, num_layers: int, dirs: int) -> list:
    """[(w_ih, w_hh, b_ih, b_hh)] per layer and direction, in PyTorch's flat order."""
    per = 4 if has_biases else 2
    if len(params) != per * num_layers * dirs:
        raise UnsupportedOpError(f"a recurrent layer with {len(params)} weight tensors (projections, proj_size, "
                                 f"are not supported; {per * num_layers * dirs} expected)")
    out = []
    for i in range(num_layers * dirs):
        p = params[per * i: per * (i + 1)]
        out.append((p[0], p[1], p[2], p[3]) if has_biases else (p[0], p[1], None, None))
    return out


def _input_gates(x, w_ih, b_ih) -> list:
    """Each step's x_t W_ih^T + b_ih. The first layer's input is one tensor [T, B, I]: one product
    for every step at once, sliced per step. A later layer's input is the previous layer's states,
    one tensor per step: one product per step — stacking them into a sequence first made a kernel
    summing T padded pieces, each inlining its step's state (512 steps: seconds of lowering per
    layer, and T times the work per element)."""
    if isinstance(x, list):
        return [x_t @ w_ih.T + b_ih if b_ih is not None else x_t @ w_ih.T for x_t in x]
    T, B, _ = x.shape
    gi = x.reshape(T * B, x.shape[2]) @ w_ih.T
    if b_ih is not None:
        gi = gi + b_ih
    gi = gi.reshape(T, B, w_ih.shape[0])
    return [gi[t] for t in range(T)]


def _hidden_gates(h, w_hh, b_hh):
    gh = h @ w_hh.T
    return gh if b_hh is None else gh + b_hh


def _steps(n: int, reverse: bool):
    return reversed(range(n)) if reverse else range(n)


def _lstm_direction(x, h, c, w, reverse: bool):
    """x: [T, B, I] or T tensors [B, I]; returns (the T states, h_T, c_T)."""
    w_ih, w_hh, b_ih, b_hh = w
    gi = _input_gates(x, w_ih, b_ih)
    H = w_hh.shape[1]
    outs = [None] * len(gi)
    for t in _steps(len(gi), reverse):
        gates = gi[t] + _hidden_gates(h, w_hh, b_hh)
        i, f, g, o = gates.split([H, H, H, H], 1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        outs[t] = h
    return outs, h, c


def _gru_direction(x, h, w, reverse: bool):
    w_ih, w_hh, b_ih, b_hh = w
    gi = _input_gates(x, w_ih, b_ih)
    H = w_hh.shape[1]
    outs = [None] * len(gi)
    for t in _steps(len(gi), reverse):
        xr, xz, xn = gi[t].split([H, H, H], 1)
        hr, hz, hn = _hidden_gates(h, w_hh, b_hh).split([H, H, H], 1)
        r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
        n = (xn + r * hn).tanh()
        h = (1.0 - z) * n + z * h
        outs[t] = h
    return outs, h


def _check(dropout: float, train: bool, x) -> None:
    if train and dropout > 0:
        raise UnsupportedOpError(f"dropout {dropout} between recurrent layers in training mode (random per call)")
    if x.ndim != 3:
        raise UnsupportedOpError(f"a recurrent layer over a {x.ndim}-D input (unbatched input: 3-D expected)")


def _run(x, states: list, params, has_biases, num_layers, dropout, train, bidirectional, batch_first, cell):
    """The stacked layers; `states` per layer and direction (h or (h, c)); returns (output, states).
    Layers pass their states on per step; the sequence output is stacked once, from the last layer."""
    _check(dropout, train, x)
    dirs = 2 if bidirectional else 1
    ws = _layer_params(list(params), has_biases, num_layers, dirs)
    seq = x.permute(1, 0, 2) if batch_first else x  # [T, B, I]; later layers: T tensors [B, H * dirs]
    finals = []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            out, *state = cell(seq, states[k], ws[k], d == 1)
            outs.append(out)
            finals.append(state)
        seq = outs[0] if dirs == 1 else [M.concat([f, b], 1) for f, b in zip(*outs)]
    out = M.stack(seq, 0)
    return (out.permute(1, 0, 2) if batch_first else out), finals


def _fake_lstm_states(ours: tuple, recorded: tuple) -> bool:
    """torch's decomposition of aten.lstm.input away from the CPU's mkldnn path (what fake tensors
    run when a model on CUDA is exported) returns h_n and c_n as [L * D, 1, B, H]: its one-layer
    function squeezes dim 1 of a [1, B, H] state, not dim 0. Eager (cuDNN) returns [L * D, B, H],
    the shape built here; the recorded one is the decomposition's."""
    return len(ours) == 3 and recorded == (ours[0], 1, *ours[1:])


RECORDED_SHAPE_QUIRKS["lstm.input"] = _fake_lstm_states


@aten("lstm.input")
def _lstm(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    h0, c0 = hx
    states = [(h0[k], c0[k]) for k in range(h0.shape[0])]
    out, finals = _run(x, states, params, has_biases, num_layers, dropout, train, bidirectional, batch_first,
                       lambda s, st, w, rev: _lstm_direction(s, st[0], st[1], w, rev))
    return out, M.stack([h for h, _ in finals], 0), M.stack([c for _, c in finals], 0)


@aten("gru.input")
def _gru(x, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
    states = [hx[k] for k in range(hx.shape[0])]
    out, finals = _run(x, states, params, has_biases, num_layers, dropout, train, bidirectional, batch_first,
                       lambda s, st, w, rev: _gru_direction(s, st, w, rev))
    return out, M.stack([h for (h,) in finals], 0)

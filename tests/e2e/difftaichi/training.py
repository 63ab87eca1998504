"""The mass-spring and rigid-body ports' controller set-up and training loop: random initial weights, a
gradient check, then a few steps of the originals' clipped gradient descent that must lower the loss."""
from __future__ import annotations

import math

import numpy as np

import wgkern as ti

from tests.e2e.difftaichi.gradcheck import check_gradients


def _init_controller(weights1, weights2, n_hidden, n_input_states, n_springs, seed, scales):
    """The mass-spring controllers' random initial weights (He-style scaling times `scales`)."""
    rng = np.random.default_rng(seed)
    for i in range(n_hidden):
        for j in range(n_input_states):
            weights1[i, j] = rng.standard_normal() * math.sqrt(2 / (n_hidden + n_input_states)) * scales[0]
    for i in range(n_springs):
        for j in range(n_hidden):
            weights2[i, j] = rng.standard_normal() * math.sqrt(2 / (n_hidden + n_springs)) * scales[1]


def _check_and_train(clear_states, forward, loss, params, real, scale_of, steps: int = 4):
    """Tape gradients of `forward` against finite differences, then a few clipped steps must lower the loss."""
    def run_tape():
        clear_states()
        with ti.Tape(loss):
            forward()

    def loss_value():
        clear_states()
        forward()
        return loss[None]

    check_gradients(run_tape, loss_value, params, real=real)
    losses = []
    for _ in range(steps):
        run_tape()
        losses.append(loss[None])
        _clipped_step(params, scale_of)
    assert losses[-1] < losses[0]


def _clipped_step(weights, scale_of):
    """The difftaichi optimisers' update: every weight moves against its gradient, scaled by the gradients'
    total norm (`scale_of(norm)`); the host loops over field elements as the originals do."""
    total_norm_sqr = 0.0
    for field in weights:
        total_norm_sqr += float((field.grad.to_numpy().astype(np.float64) ** 2).sum())
    scale = scale_of(total_norm_sqr ** 0.5)
    for field in weights:
        if len(field.shape) == 2:
            for i in range(field.shape[0]):
                for j in range(field.shape[1]):
                    field[i, j] -= scale * field.grad[i, j]
        else:
            for i in range(field.shape[0]):
                field[i] -= scale * field.grad[i]

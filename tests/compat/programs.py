"""Small Quadrants and Taichi programs, written as their users write them (only `import quadrants as qd` /
`import taichi as ti`), and how the tests run them: in a fresh interpreter, with this checkout's wgkern first on
the path, reading back the JSON line each program prints."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

# x sin x summed over a field and its gradient sin x + x cos x, through the toolkit's Tape; the arch comes from
# argv[1] and the program says which module its `qd` / `ti` is and where `init` put it.
_PROGRAM = '''
import json
import sys

import numpy as np
import {toolkit} as {alias}
import {toolkit}.math as tm
from {toolkit}.lang import impl

{alias}.init(arch=getattr({alias}, sys.argv[1]))
n = 8
x = {alias}.field({alias}.f32, shape=n, needs_grad=True)
loss = {alias}.field({alias}.f32, shape=(), needs_grad=True)


@{alias}.kernel
def load(values: {alias}.types.ndarray(dtype={alias}.f32, ndim=1)):
    for i in x:
        x[i] = values[i]


@{alias}.kernel
def energy():
    for i in x:
        loss[None] += tm.sin(x[i]) * x[i]


load(np.linspace(0.1, 1.5, n, dtype=np.float32))
with {alias}.ad.Tape(loss=loss):
    energy()
print(json.dumps({{"module": {alias}.__name__, "arch": str(impl.current_cfg().arch), "name": __name__,
                  "argv": sys.argv[1:], "x": x.to_numpy().tolist(), "loss": float(loss[None]),
                  "grad": x.grad.to_numpy().tolist()}}))
'''

PROGRAMS = {"quadrants": _PROGRAM.format(toolkit="quadrants", alias="qd"),
            "taichi": _PROGRAM.format(toolkit="taichi", alias="ti")}


def write_program(folder: Path, toolkit: str) -> Path:
    path = folder / f"{toolkit}_program.py"
    path.write_text(PROGRAMS[toolkit])
    return path


def run_python(args: list[str], cwd: Path, env: dict[str, str] | None = None, python: str = sys.executable,
               with_checkout: bool = True) -> subprocess.CompletedProcess:
    """`python args...` in a fresh interpreter; this checkout's wgkern first on the path unless told otherwise;
    WK_ARCH and WGKERN_PROVIDE removed so that only what the test passes decides."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("WK_ARCH", "WGKERN_PROVIDE", "PYTHONPATH")}
    # entries of the caller's PYTHONPATH that hold no wgkern (where wgpu or llvmlite may have been put) stay
    others = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep)
              if entry and not (Path(entry) / "wgkern").is_dir()]
    paths = [str(REPO)] * with_checkout + others
    if paths:
        full_env["PYTHONPATH"] = os.pathsep.join(paths)
    full_env.update(env or {})
    return subprocess.run([python, *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300)


def last_json(result: subprocess.CompletedProcess) -> dict[str, Any]:
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def check_energy(out: dict[str, Any], arch: str) -> None:
    """The program's loss and gradient against sum(x sin x) and sin x + x cos x in float64.

    Bound: the kernel evaluates each term in f32 with `sin` accurate to an absolute 2^-11 on Vulkan (the
    SPIR-V GLSL.std.450 bound on [-pi, pi]) and to 2 ulp (<= 2^-22 absolute, |sin| <= 1) on the CPU; a term
    x sin x then errs by |x| e_sin plus one rounding (2^-24 relative), and the atomic sum of n terms adds n
    roundings of the running sum. The gradient element sin x + x cos x errs by (1 + |x|) e_sin plus two
    roundings."""
    x = [float(v) for v in out["x"]]
    e_sin = 2.0 ** -11 if arch == "vulkan" else 2.0 ** -22
    expected = sum(v * math.sin(v) for v in x)
    bound = sum(abs(v) * e_sin + abs(v * math.sin(v)) * 2.0 ** -24 for v in x) + len(x) * abs(expected) * 2.0 ** -24
    assert abs(out["loss"] - expected) <= bound, (out["loss"], expected, bound)
    for v, g in zip(x, out["grad"]):
        want = math.sin(v) + v * math.cos(v)
        assert abs(g - want) <= (1 + abs(v)) * e_sin + 2 * abs(want) * 2.0 ** -24, (v, g, want)

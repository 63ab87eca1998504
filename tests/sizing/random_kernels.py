"""Source of random differentiable kernels mixing the loop shapes the sizer handles: 1-D and 2-D parallel loops
(struct-for, ndrange with and without begin/end pairs), bounds read at computed indices, min, locals set in
branches and accumulated in loops, ranges with begin, step and negative step, bounds from outer loop indices.
Kernels must live in a file (the frontend reads their source): `write_module` writes one and imports it."""
from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from types import ModuleType

HEADER = """import wgkern as wk
import wgkern.lang.math as wm
from wgkern.lang import types as T
from tests.passes.autodiff.helpers import FakeField

x = FakeField(T.f32, 6, True, "x")
n = FakeField(T.i32, 6, False, "n")
k = FakeField(T.i32, 6, False, "k")
x2 = FakeField(T.f32, (3, 4), True, "x2")
KERNELS = []
"""


class KernelWriter:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def bound(self, index: str, outer: list[str], local: bool) -> str:
        rng = self.rng
        choices = [str(rng.randint(0, 3)), f"n[{index}]", f"n[({index} + 1) % 6]", f"wk.min(n[{index}], 3)",
                   f"n[k[{index}] % 6]", f"n[{index}] - 1"]
        if outer:
            choices += [rng.choice(outer), f"{rng.choice(outer)} + 1"]
        if local:
            choices += ["m"] * 3
        return rng.choice(choices)

    def loop_range(self, bound: str) -> str:
        r = self.rng.random()
        if r < 0.6:
            return f"range({bound})"
        if r < 0.75:
            return f"range({self.rng.randint(-1, 2)}, {bound})"
        if r < 0.9:
            return f"range(0, {bound}, {self.rng.randint(1, 3)})"
        return f"range({bound}, {self.rng.randint(-2, 0)}, -{self.rng.randint(1, 2)})"

    def kernel(self, number: int) -> list[str]:
        rng = self.rng
        if rng.random() < 0.4:
            head = rng.choice(["for i, j in x2:", "for i, j in wk.ndrange(3, 4):",
                               "for i, j in wk.ndrange((1, 3), (0, 4)):"])
            index, load, store = rng.choice(["i", "j", "(i * 2 + j) % 6"]), "x2[i, j]", "x2[i, j] = v"
        else:
            head, index, load, store = "for i in x:", "i", "x[i]", "x[i] = v"
        lines = [f"def k{number}():", f"    {head}", f"        v = {load}"]
        indent = " " * 8
        local = rng.random() < 0.5
        if local:
            lines.append(f"{indent}m = {self.bound(index, [], False)}")
            if rng.random() < 0.5:
                lines += [f"{indent}if v > 0.5:", f"{indent}    m = m + {rng.randint(-1, 3)}"]
        outer: list[str] = []
        for depth in range(rng.randint(1, 3)):
            lines.append(f"{indent}for q{depth} in {self.loop_range(self.bound(index, outer, local))}:")
            indent += "    "
            outer.append(f"q{depth}")
            if local and rng.random() < 0.3:
                lines.append(f"{indent}m += {rng.randint(0, 2)}")
            lines.append(indent + rng.choice(["v = wm.abs(v)", "v = wk.sin(v) + 0.1", "v = v * 0.9"]))
        return lines + [f"        {store}", f"KERNELS.append(k{number})"]


def write_module(directory: Path, seed: int, count: int) -> ModuleType:
    writer = KernelWriter(seed)
    source = [HEADER] + ["\n".join(writer.kernel(number)) for number in range(count)]
    path = directory / f"random_kernels_{seed}.py"
    path.write_text("\n\n".join(source) + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

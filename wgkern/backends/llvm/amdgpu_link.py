"""Finding ld.lld and linking an AMDGPU object into a code object (`ld.lld -shared`), as ROCm's toolchain does.

ld.lld is looked for, in order: `$WK_LLD` (an ld.lld executable, or a zig executable, which is run as
`zig ld.lld`), ROCm's (`$ROCM_PATH/llvm/bin/ld.lld`, `/opt/rocm/llvm/bin/ld.lld`), `ld.lld` on PATH, and the
one bundled with the `ziglang` package in this Python (`pip install 'wgkern[amdgpu]'`). Without one, linking
raises a CompileError saying how to get it."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from wgkern.errors import CompileError


def _command_of(path: Path) -> list[str]:
    return [str(path), "ld.lld"] if path.name.startswith("zig") else [str(path)]


def linker_candidates() -> list[list[str]]:
    """Commands that may run ld.lld, in the order they are tried (existing files only)."""
    found: list[list[str]] = []
    explicit = os.environ.get("WK_LLD")
    if explicit:
        found.append(_command_of(Path(explicit)))
    roots = [os.environ.get("ROCM_PATH"), "/opt/rocm"]
    found += [[str(Path(root) / "llvm" / "bin" / "ld.lld")] for root in roots if root]
    on_path = shutil.which("ld.lld")
    if on_path:
        found.append([on_path])
    spec = importlib.util.find_spec("ziglang")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            found.append([str(Path(location) / "zig"), "ld.lld"])
    return [command for command in found if Path(command[0]).is_file()]


def find_linker() -> list[str] | None:
    """The command that runs ld.lld here, or None."""
    candidates = linker_candidates()
    return candidates[0] if candidates else None


def link_code_object(obj: bytes) -> bytes:
    """The code object (shared ELF) of one relocatable AMDGPU object."""
    command = find_linker()
    if command is None:
        raise CompileError("the AMDGPU backend links its code objects with ld.lld, and none was found: install "
                           "ROCm, or `pip install 'wgkern[amdgpu]'` (the ziglang package bundles ld.lld), or "
                           "point WK_LLD at an ld.lld (or zig) executable")
    with tempfile.TemporaryDirectory(prefix="wk-amdgpu-") as folder:
        source, target = Path(folder) / "kernels.o", Path(folder) / "kernels.hsaco"
        source.write_bytes(obj)
        done = subprocess.run([*command, "-shared", "--no-undefined", "-o", str(target), str(source)],
                              capture_output=True, text=True)
        if done.returncode:
            raise CompileError(f"ld.lld ({' '.join(command)}) failed to link an AMDGPU code object: "
                               f"{done.stderr.strip() or done.stdout.strip()}")
        return target.read_bytes()

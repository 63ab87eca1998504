"""Every ```python example in README.md and docs/*.md runs as written, each in a fresh interpreter on the CPU
(WK_ARCH=cpu), from an empty folder.

An HTML comment on the line before a block's fence changes how it runs (used sparingly):
`<!-- docs-test: continues -->` runs it after the blocks before it in the same file (it uses their names), and
`<!-- docs-test: needs vulkan -->` runs it where a Vulkan adapter exists (its code picks that arch itself)."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->")
MARKS = {"continues", "needs vulkan"}


def python_blocks(path: Path) -> list[tuple[int, str, set[str]]]:
    """(line of the fence, code, marks) for each ```python block of a Markdown file."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            marks = set()
            previous = lines[i - 1].strip() if i else ""
            for mark in MARKER.findall(previous):
                assert mark in MARKS, f"{path.name}:{i}: unknown docs-test mark {mark!r} (known: {sorted(MARKS)})"
                marks.add(mark)
            i += 1
            body = []
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            blocks.append((start + 1, "\n".join(body) + "\n", marks))
        i += 1
    return blocks


def _cases() -> list:
    cases = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        chain = ""
        for line, code, marks in python_blocks(path):
            program = (chain if "continues" in marks else "") + code
            chain = program
            cases.append(pytest.param(program, marks, id=f"{path.relative_to(ROOT)}:{line}"))
    return cases


def test_the_docs_have_python_examples():
    assert len(_cases()) >= 5


def test_ci_runs_the_readme_test_command():
    """.ci/run runs the test command the README gives (the README's second ```bash block), word for word."""
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", readme, re.S)
    assert len(commands) >= 2 and "pytest" in commands[1], commands
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    # a line of .ci/run is the command, possibly followed by `|| status=1` (it records a failure and goes on)
    assert any(line.split(" || ")[0].strip() == commands[1].strip() for line in ci), \
        f"README's test command {commands[1]!r} is not a line of .ci/run"


@pytest.mark.parametrize("program, marks", _cases())
def test_python_example_runs_as_written(program, marks, tmp_path):
    for extra in ("ray",):       # an example of an optional extra needs that package (CI installs it)
        if re.search(rf"^import {extra}\b", program, re.M) and importlib.util.find_spec(extra) is None:
            from tests.conftest import _IN_CI
            (pytest.fail if _IN_CI else pytest.skip)(f"the example needs {extra}: pip install 'wgkern[{extra}]'")
    if "needs vulkan" in marks:
        from tests.conftest import _probe
        ok, why = _probe("vulkan")
        if not ok:
            pytest.skip(f"the example needs Vulkan: {why}")
    script = tmp_path / "example.py"
    script.write_text(program)
    env = {**os.environ, "WK_ARCH": "cpu", "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=env)
    from tests.conftest import skip_if_profile_lacks_a_feature
    skip_if_profile_lacks_a_feature(done)
    assert done.returncode == 0, f"the example failed:\n{program}\n{done.stderr[-3000:]}"
    assert os.listdir(tmp_path) == ["example.py"], "the example wrote files into the current directory"

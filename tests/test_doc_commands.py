"""Every line of every ```bash block in README.md and docs/*.md is a command that works as written (comments
stripped, backslash continuations joined, `&&` chains split, leading `NAME=value` assignments taken as the
environment):

- `python -m wgkern ...` parses with wgkern's own command line (`wgkern.__main__.parse_args`), and the commands
  that take seconds run, in an empty folder on the CPU (`runs_in_seconds` says which);
- `pip install ...` installs this project, with extras pyproject.toml declares, or a package it declares;
- `python -m pytest ...` is accepted by pytest (its options parsed, its `-p` plugins loaded, nothing collected),
  and each `-p` plugin comes with a package pyproject.toml declares;
- any other program (`ray`, ...) is installed by a package pyproject.toml declares.

A failure names the file and line, the command and what is wrong with it."""
from __future__ import annotations

import ast
import contextlib
import importlib.metadata
import importlib.util
import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:          # Python 3.10: pytest depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SEPARATORS = {"&&", "||", ";", "|"}
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class Command:
    where: str                       # file:line of the command's first line
    text: str                        # the line as written (continuations joined)
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.where}: " + " ".join([f"{k}={v}" for k, v in self.env.items()] + self.argv)


def bash_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of each line of the file's ```bash blocks, a line ending in a backslash joined with
    the next (numbered by its first)."""
    found, inside, pending = [], False, None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip().startswith("```"):
            assert not (inside and pending), f"{path.name}:{pending[0]}: a continuation runs past the block's end"
            inside = line.strip() == "```bash" if not inside else False
            continue
        if not inside:
            continue
        start, text = pending if pending else (number, "")
        text += line.lstrip() if pending else line
        if line.rstrip().endswith("\\"):
            pending = (start, text.rstrip()[:-1].rstrip() + " ")
            continue
        pending = None
        found.append((start, text.strip()))
    return found


def commands_of(where: str, text: str) -> list[Command]:
    """The commands of one line: comments stripped, split at `&&`, `||`, `;` and `|`."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        return [Command(where, text, ["(unparsable)", str(exc)])]
    commands, current = [], []
    for token in tokens + [";"]:
        if token in SEPARATORS:
            if current:
                env = {}
                while current and ASSIGNMENT.match(current[0]):
                    name, _, value = current.pop(0).partition("=")
                    env[name] = value
                commands.append(Command(where, text, current, env))
            current = []
        else:
            current.append(token)
    return commands


def doc_commands() -> list[Command]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, text in bash_lines(path):
            found += commands_of(f"{path.relative_to(ROOT)}:{number}", text)
    return found


# ---- what pyproject.toml declares -------------------------------------------------------------------------------
def declared() -> dict[str, list[str]]:
    """Each package pyproject.toml declares (canonical name) -> where: 'dependencies' or the extras naming it."""
    where: dict[str, list[str]] = {canonicalize_name(PYPROJECT["name"]): ["the project itself"]}
    groups = {"dependencies": PYPROJECT.get("dependencies", []), **PYPROJECT.get("optional-dependencies", {})}
    for group, requirements in groups.items():
        for requirement in requirements:
            where.setdefault(canonicalize_name(Requirement(requirement).name), []).append(group)
    return where


def undeclared(distributions: list[str], what: str) -> str | None:
    """None where one of `distributions` (the installed packages providing `what`) is declared, else why not."""
    if not distributions:
        return f"{what} is not installed here, so no package pyproject.toml declares provides it"
    known = declared()
    if any(canonicalize_name(name) in known for name in distributions):
        return None
    return f"{what} comes with {', '.join(sorted(set(distributions)))}, which pyproject.toml does not declare"


def module_problem(module: str, what: str) -> str | None:
    top = module.split(".")[0]
    if top == PYPROJECT["name"]:
        return None
    return undeclared(importlib.metadata.packages_distributions().get(top, []), what)


# ---- the checks, one per kind of command -------------------------------------------------------------------------
def wgkern_problem(arguments: list[str]) -> str | None:
    """None where wgkern's command line accepts `arguments`, else its usage error."""
    from wgkern.__main__ import parse_args
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            parse_args(arguments)
    except SystemExit as exc:
        if exc.code:
            return "wgkern's command line rejects it: " + errors.getvalue().strip().splitlines()[-1]
    return None


def pip_problem(arguments: list[str]) -> str | None:
    if arguments[:1] != ["install"]:
        return f"`pip {' '.join(arguments[:1])}`: only `pip install` is checked"
    requirements = [a for a in arguments[1:] if a not in ("-e", "--editable", "-U", "--upgrade")]
    extras_declared = set(PYPROJECT.get("optional-dependencies", {}))
    for requirement in requirements:
        if requirement.startswith("-"):
            return f"pip option {requirement} is not one this test knows (-e, --editable, -U, --upgrade)"
        local = re.fullmatch(r"\.(?:\[(.*)\])?", requirement)
        try:
            parsed = None if local else Requirement(requirement)
        except InvalidRequirement as exc:
            return f"{requirement!r} is not a requirement pip reads: {exc}"
        if local or canonicalize_name(parsed.name) == canonicalize_name(PYPROJECT["name"]):
            extras = [e.strip() for e in local.group(1).split(",")] if local and local.group(1) else \
                sorted(parsed.extras) if parsed else []
            unknown = [e for e in extras if e not in extras_declared]
            if unknown:
                return f"extra {unknown[0]!r} is not in pyproject.toml (its extras: {', '.join(extras_declared)})"
        elif canonicalize_name(parsed.name) not in declared():
            return f"{parsed.name} is not a package pyproject.toml declares"
    return None if requirements else "`pip install` names nothing to install"


# pytest run as written with a plugin that ends the run once the options are parsed and the plugins loaded
# (pytest_cmdline_main runs after both, before anything is collected), so the paths may belong to another project.
_PYTEST_PARSE_ONLY = """import sys, pytest
class ParsedOnly:
    @pytest.hookimpl(tryfirst=True)
    def pytest_cmdline_main(self, config):
        return 0
sys.exit(pytest.main(sys.argv[1:], plugins=[ParsedOnly()]))"""


def pytest_problem(arguments: list[str], env: dict[str, str], folder: Path) -> str | None:
    for at, argument in enumerate(arguments):
        plugin = arguments[at + 1] if argument == "-p" and at + 1 < len(arguments) else \
            argument[2:] if argument.startswith("-p") and len(argument) > 2 else None
        if plugin and not plugin.startswith("no:") and importlib.util.find_spec(f"_pytest.{plugin}") is None:
            problem = module_problem(plugin, f"pytest plugin {plugin!r}")
            if problem:
                return problem
    done = subprocess.run([sys.executable, "-c", _PYTEST_PARSE_ONLY, *arguments], cwd=folder, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env})
    if done.returncode:
        return f"pytest rejects it (status {done.returncode}): " + (done.stderr or done.stdout).strip()[-800:]
    return None


def problem_of(command: Command, folder: Path) -> str | None:
    """None where `command` works as written, else what is wrong with it."""
    program, *arguments = command.argv or [""]
    if program in ("python", "python3"):
        if arguments[:1] != ["-m"] or len(arguments) < 2:
            return "`python` runs a module here (`python -m NAME ...`); a script or -c cannot be checked"
        module, arguments = arguments[1], arguments[2:]
        if module == "wgkern":
            return wgkern_problem(arguments)
        if module == "pytest":
            return pytest_problem(arguments, command.env, folder)
        if module == "pip":
            return pip_problem(arguments)
        return module_problem(module, f"module {module!r}")
    if program in ("pip", "pip3"):
        return pip_problem(arguments)
    if program.startswith("(") or not re.fullmatch(r"[\w.-]+", program):
        return f"{program!r} is not a program name: write the command as it is typed, options in prose or a table"
    scripts = importlib.metadata.entry_points(group="console_scripts", name=program)
    providers = [script.dist.name for script in scripts if script.dist]
    groups = declared().get(canonicalize_name(program))
    if not providers and groups and os.environ.get("CI") != "true":
        # a declared package of that name, not installed in this environment (CI installs the test extra)
        pytest.skip(f"the program {program!r} comes with the package {program!r} ({', '.join(groups)} in "
                    f"pyproject.toml), which is not installed here: pip install -e '.[test]'")
    return undeclared(providers, f"the program {program!r}")


# ---- which commands run ------------------------------------------------------------------------------------------
def demo_requires(name: str | None) -> tuple[str, ...]:
    """A demo's REQUIRES (modules beyond the core install), read from its file without importing it."""
    from wgkern.__main__ import _demo_files
    demos = _demo_files()
    tree = ast.parse(demos[name or "aim"].read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "REQUIRES" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def runs_in_seconds(args) -> bool:
    """Whether a documented wgkern command is run as well as parsed: those that take seconds. Measured on a
    loaded 2-core VM: `info` 2 s, the main demo (aim) 5 s, `fuzz` about 1 s a seed and arch. Parsed only:
    `bench` (15 s for the smallest documented run, minutes for a whole one; tests/runtime/test_cli.py runs it),
    `demo --all`, a demo that needs more than the core install (sweep: Ray, on a cluster), fuzz runs past 5 seeds."""
    if args.command == "info":
        return True
    if args.command == "demo":
        return not args.all and (args.list or not demo_requires(args.name))
    if args.command == "fuzz":
        return args.seeds * (1 if args.arch == "cpu" else 3) <= 5
    return False


def _cheap_wgkern_commands() -> list:
    from wgkern.__main__ import parse_args
    by_text: dict[tuple, list[str]] = {}
    for command in doc_commands():
        program = command.argv[:3]
        if program[1:] == ["-m", "wgkern"] and program[0] in ("python", "python3") and \
                wgkern_problem(command.argv[3:]) is None and runs_in_seconds(parse_args(command.argv[3:])):
            by_text.setdefault((tuple(command.argv[3:]), tuple(sorted(command.env.items()))), []).append(command.where)
    return [pytest.param(list(argv), dict(env), id=" ".join(argv) + " @ " + ", ".join(where))
            for (argv, env), where in by_text.items()]


# ---- the tests ---------------------------------------------------------------------------------------------------
def test_the_docs_have_commands_of_each_kind():
    programs = {" ".join(c.argv[:3]) if c.argv[:1] == ["python"] else c.argv[0] for c in doc_commands()}
    assert {"python -m wgkern", "python -m pytest", "pip", "ray"} <= programs, programs


@pytest.mark.parametrize("command", doc_commands(), ids=str)
def test_documented_command_works_as_written(command, tmp_path):
    problem = problem_of(command, tmp_path)
    assert problem is None, f"{command.where}: `{command.text}`\n  {problem}"


@pytest.mark.parametrize("arguments, env", _cheap_wgkern_commands())
def test_documented_wgkern_command_runs(arguments, env, tmp_path):
    """Run as written, on the CPU (WK_ARCH=cpu), from an empty folder, without a display (a demo writes its PNG);
    what it writes into the folder must lie in ./wgkern-out/, the demos' documented output folder."""
    environment = {**os.environ, **env, "WK_ARCH": "cpu",
                   "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "WK_DEMO_DIR"):
        environment.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "wgkern", *arguments], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=environment)
    assert done.returncode == 0, f"python -m wgkern {' '.join(arguments)} failed:\n{done.stdout[-2000:]}\n" \
                                 f"{done.stderr[-3000:]}"
    written = [p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()]
    assert all(p.parts[0] == "wgkern-out" for p in written), written
    if arguments[:1] == ["demo"] and "--list" not in arguments:
        assert any(p.suffix == ".png" for p in written), (written, done.stdout[-2000:])


# ---- the checks fail where a command is wrong, naming why ------------------------------------------------------
@pytest.mark.parametrize("line, why", [
    ("python -m wgkern bench --only nope", "unknown benchmark"),
    ("python -m wgkern demo nosuchdemo", "invalid choice: 'nosuchdemo'"),
    ("python -m wgkern bench --plot out/ --reps 3", "must be at least 5"),
    ("python -m wgkern bench --from-json cpu.json", "needs --plot"),
    ("python -m wgkern fuzz --seeds 200 [--start 0] [--arch cpu|vulkan]", "unrecognized arguments: \\[--start"),
    ("pip install -e '.[nosuch]'", "extra 'nosuch' is not in pyproject.toml"),
    ("pip install 'wgkern[nosuch]'", "extra 'nosuch' is not in pyproject.toml"),
    ("pip install requests", "requests is not a package pyproject.toml declares"),
    ("pip uninstall wgkern", "only `pip install` is checked"),
    ("python -m pytest --no-such-option", "pytest rejects it .*--no-such-option"),
    ("python -m pytest -p no_such_plugin_module", "pytest plugin 'no_such_plugin_module' is not installed"),
    ("python -m no_such_module", "module 'no_such_module' is not installed"),
    ("no-such-program --flag", "the program 'no-such-program' is not installed"),
    ("python example.py", "runs a module here"),
])
def test_a_wrong_command_fails_naming_why(line, why, tmp_path):
    problems = [problem_of(command, tmp_path) for command in commands_of("doc.md:1", line)]
    assert any(problems), line
    assert re.search(why, " ".join(filter(None, problems)), re.S), problems


def test_lines_are_joined_split_and_stripped_as_a_shell_reads_them(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("text\n```bash\nA=1 B=2 python -m pytest -q \\\n    tests/x.py   # why\n"
                   "pip install -e . && python -m wgkern info\n```\n```python\nprint(1)\n```\n")
    lines = bash_lines(doc)
    assert lines == [(3, "A=1 B=2 python -m pytest -q tests/x.py   # why"),
                     (5, "pip install -e . && python -m wgkern info")]
    first, = commands_of("doc.md:3", lines[0][1])
    assert first.env == {"A": "1", "B": "2"} and first.argv == ["python", "-m", "pytest", "-q", "tests/x.py"]
    assert [c.argv for c in commands_of("doc.md:5", lines[1][1])] == \
        [["pip", "install", "-e", "."], ["python", "-m", "wgkern", "info"]]

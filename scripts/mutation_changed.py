"""Mutation testing (mutmut 3) of the functions a change touched, failing below 100%.

Usage: scripts/mutation-changed.sh [BASE [PATH ...]]   (BASE defaults to HEAD~1; the
working tree, committed or not, is compared against it; PATHs limit the run to those
files). Environment: MUTATION_TESTS, the pytest paths to run against each mutant
(default tests/unit); MUTATION_KEEP=1 keeps the run's folder to inspect survivors.

mutmut 3 mutates whole functions, so "the lines changed" means every function or method
under src/ with a changed line. Lines marked ``# pragma: no mutate`` are left alone:
that is code only PostgreSQL can test, listed in ADR 0005 and covered by the integration
contract tests instead. The run happens in a temporary copy of the tree, so it never
leaves ``mutants/`` or a config behind.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTMUT = ROOT / ".venv" / "bin" / "mutmut"
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)
DETECTED = frozenset({"killed", "timeout"})
_SEPARATOR = "ǁ"  # how mutmut 3 names a method: x<SEP>Class<SEP>method


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout


def changed_lines(base: str) -> dict[Path, set[int]]:
    """Lines added or changed since ``base``, per Python file under src/."""
    changed: dict[Path, set[int]] = {}
    names = git("diff", "--name-only", "--diff-filter=AM", base, "--", "src").split()
    untracked = git("ls-files", "--others", "--exclude-standard", "--", "src").split()
    for name in names:
        if not name.endswith(".py"):
            continue
        lines: set[int] = set()
        for match in _HUNK.finditer(git("diff", "-U0", base, "--", name)):
            start, count = int(match.group(1)), int(match.group(2) or "1")
            lines.update(range(start, start + count))
        if lines:
            changed[Path(name)] = lines
    for name in untracked:
        if name.endswith(".py"):
            text = (ROOT / name).read_text("utf-8")
            changed[Path(name)] = set(range(1, text.count("\n") + 2))
    return changed


def touched_functions(path: Path, lines: set[int]) -> list[str]:
    """mutmut's names for the functions of ``path`` that contain a changed line."""
    tree = ast.parse((ROOT / path).read_text("utf-8"))
    module = ".".join(path.with_suffix("").parts[1:])  # src/a/b.py -> a.b
    found: list[str] = []

    def visit(body: list[ast.stmt], owner: str | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and owner is None:
                visit(node.body, node.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                span = set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
                if span & lines:
                    mangled = (
                        f"x_{node.name}"
                        if owner is None
                        else f"x{_SEPARATOR}{owner}{_SEPARATOR}{node.name}"
                    )
                    found.append(f"{module}.{mangled}__mutmut_*")

    visit(tree.body, None)
    return found


# Tests that read the source tree rather than run it (its ADR index, its query names,
# its import layering, the set-up script, lock and service files) see mutmut's
# rewritten copy, not the code, and cannot kill a mutant: they are left out of a
# mutation run.
READS_THE_TREE = (
    "tests/unit/test_adr_index.py",
    "tests/unit/test_query_names.py",
    "tests/unit/test_layering.py",
    "tests/unit/test_setup_script.py",
    "tests/unit/test_lock_files.py",
    "tests/unit/test_service_files.py",
)
PYTEST_ARGS = ["-p", "no:cacheprovider", "-q", *(f"--ignore={t}" for t in READS_THE_TREE)]


def main(argv: list[str]) -> int:
    base = argv[1] if len(argv) > 1 else "HEAD~1"
    changed = changed_lines(base)
    only = {Path(p) for p in argv[2:]}
    if only:
        changed = {p: lines for p, lines in changed.items() if p in only}
    patterns = {p: touched_functions(p, lines) for p, lines in changed.items()}
    patterns = {p: names for p, names in patterns.items() if names}
    if not patterns:
        print(f"mutation: no function under src/ changed since {base}; nothing to mutate")
        return 0
    tests = os.environ.get("MUTATION_TESTS", "tests/unit").split()
    work = Path(tempfile.mkdtemp(prefix="safelight-mutation-"))
    try:
        files = git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
        for name in filter(None, files):
            source = ROOT / name
            if source.is_file():
                (work / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, work / name)
        # mutmut reads [tool.mutmut] from the copy's pyproject.toml (TOML lists are
        # unambiguous, unlike setup.cfg's).
        with (work / "pyproject.toml").open("a", encoding="utf-8") as config:
            config.write(
                "\n[tool.mutmut]\n"
                'source_paths = ["src"]\n'
                f"only_mutate = {json.dumps([str(p) for p in patterns])}\n"
                f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
                f"pytest_add_cli_args = {json.dumps(PYTEST_ARGS)}\n"
                "use_git_change_detection = false\n"
            )
        names = [n for group in patterns.values() for n in group]
        print(f"mutation: {len(names)} changed function(s) in {len(patterns)} file(s) since {base}")
        env = {**os.environ, "TERM": "dumb"}
        run = subprocess.run(
            [str(MUTMUT), "run", *names],
            cwd=work,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if run.returncode != 0:
            print(run.stderr[-4000:], file=sys.stderr)
            return 2
        results = subprocess.run(
            [str(MUTMUT), "results", "--all", "true"],
            cwd=work,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        statuses: dict[str, str] = {}
        for line in results.splitlines():
            name, _, status = line.strip().rpartition(": ")
            # mutmut lists every mutant of the files it mutated; keep the selected ones.
            if name and any(fnmatch.fnmatchcase(name, pattern) for pattern in names):
                statuses[name] = status
        # A mutant that made the tests hang was detected, as mutation tools count it.
        killed = sum(1 for s in statuses.values() if s in DETECTED)
        total = len(statuses)
        for name, status in sorted(statuses.items()):
            if status not in DETECTED:
                print(f"  {status:>10}  {name}   (mutmut show {name})")
        percent = 100.0 if total == 0 else 100.0 * killed / total
        print(f"mutation: {killed}/{total} mutants killed ({percent:.1f}%)")
        return 0 if killed == total else 1
    finally:
        if os.environ.get("MUTATION_KEEP"):
            print(f"mutation: the run is kept in {work} (mutmut show NAME there)")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""scripts/setup in a scratch copy of the repository, on a PATH of stand-ins: ``id``,
``sudo``, ``apt-get``, ``python3`` and the venv's python log what they were asked and do
what the test says, so nothing reaches the network, the real apt or the real .venv.
The real tools the script needs (bash, cksum, ...) are linked in one by one: a new tool
in the script fails here until it is listed."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REAL_TOOLS = ("bash", "cat", "cksum", "dirname", "env", "rm", "sed", "tail", "touch")
NO_RIGHTS = "installing it needs root or sudo without a password"


def _stub(path: Path, body: str) -> None:
    path.write_text(f"#!{shutil.which('bash')}\n{body}")
    path.chmod(0o755)


def _which(name: str) -> str:
    found = shutil.which(name)
    assert found is not None, f"{name} is needed to run this test"
    return found


@dataclass
class Scratch:
    repo: Path
    bin: Path
    log: Path

    def run(
        self, *args: str, quiet: bool = False, faces: bool = False, **fake: str
    ) -> subprocess.CompletedProcess[str]:
        """scripts/setup ARGS; ``fake`` sets the stand-ins' behaviour (uid="0": FAKE_UID=0);
        ``faces`` runs it with SAFELIGHT_FACES=1."""
        self.log.write_text("")
        env = {"PATH": str(self.bin), "HOME": str(self.repo.parent), "FAKE_LOG": str(self.log)}
        env |= {f"FAKE_{key.upper()}": value for key, value in fake.items()}
        if quiet:
            env["SAFELIGHT_SETUP_QUIET"] = "1"
        if faces:
            env["SAFELIGHT_FACES"] = "1"
        return subprocess.run(
            [str(self.repo / "scripts" / "setup"), *args],
            cwd=self.repo.parent,  # the script finds its repository by its own path
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()

    def pip_calls(self) -> list[str]:
        return [c.removeprefix("venv-python ") for c in self.calls() if c.startswith("venv-")]

    def apt_calls(self) -> list[str]:
        return [c for c in self.calls() if c.startswith("apt-get")]

    def give_ffmpeg(self) -> None:
        for tool in ("ffmpeg", "ffprobe"):
            shutil.copy2(self.repo.parent / "tool", self.bin / tool)

    def give_exiftool(self) -> None:
        shutil.copy2(self.repo.parent / "tool", self.bin / "exiftool")

    def give_chromium(self) -> None:
        shutil.copy2(self.repo.parent / "tool", self.bin / "chromium")


@pytest.fixture
def scratch(tmp_path: Path) -> Scratch:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "setup", repo / "scripts" / "setup")
    (repo / "requirements").mkdir()
    (repo / "requirements" / "runtime.lock").write_text("click==8 --hash=sha256:00\n")
    (repo / "requirements" / "faces.lock").write_text("click==8 --hash=sha256:00\ndlib-bin==20\n")
    (repo / "requirements" / "dev.lock").write_text("click==8 --hash=sha256:00\npytest==9\n")
    (repo / "pyproject.toml").write_text('[project]\nname = "safelight"\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in REAL_TOOLS:
        (bin_dir / tool).symlink_to(_which(tool))
    mkdir, cp = _which("mkdir"), _which("cp")
    _stub(tmp_path / "tool", "exit 0\n")  # what apt-get "installs" as ffmpeg and ffprobe
    venv_python = tmp_path / "venv-python"
    _stub(venv_python, 'echo "venv-python $*" >>"$FAKE_LOG"; echo pip says; exit "${FAKE_PIP:-0}"')
    _stub(
        bin_dir / "python3",
        'echo "python3 $*" >>"$FAKE_LOG"\n'
        'if [ "$1" = -c ]; then exit "${FAKE_OLD_PYTHON:-0}"; fi\n'
        f'if [ "$1 $2" = "-m venv" ]; then {mkdir} -p "$3/bin" && '
        f'{cp} {venv_python} "$3/bin/python"; exit; fi\n'
        "exit 1\n",
    )
    _stub(bin_dir / "id", 'if [ "$1" = -u ]; then echo "${FAKE_UID:-1000}"; else exit 1; fi\n')
    _stub(
        bin_dir / "apt-get",
        'echo "apt-get $* (DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-})" >>"$FAKE_LOG"\n'
        'if [ -n "${FAKE_APT_FAILS:-}" ]; then echo "E: no network" >&2; exit 100; fi\n'
        'case "$*" in *" ffmpeg") for t in ffmpeg ffprobe; do'
        f' {cp} {tmp_path / "tool"} "{bin_dir}/$t"; done ;;\n'
        f'  *" libimage-exiftool-perl") {cp} {tmp_path / "tool"} "{bin_dir}/exiftool" ;;\n'
        f'  *" chromium") {cp} {tmp_path / "tool"} "{bin_dir}/chromium" ;;\n'
        "esac\n",
    )
    return Scratch(repo, bin_dir, tmp_path / "calls.log")


def add_sudo(scratch: Scratch) -> None:
    """A sudo that runs ``-n COMMAND`` when FAKE_SUDO=nopasswd, else wants a password."""
    _stub(
        scratch.bin / "sudo",
        'echo "sudo $*" >>"$FAKE_LOG"\n'
        '[ "$1" = -n ] || exit 1\n'
        "shift\n"
        'if [ "${FAKE_SUDO:-}" != nopasswd ]; then echo "sudo: a password is required" >&2;'
        " exit 1; fi\n"
        '"$@"\n',  # not exec: `true` is a shell builtin, not on this PATH
    )


def stamp(scratch: Scratch) -> Path:
    return scratch.repo / ".venv" / ".ffmpeg-attempted"


# --- ffmpeg --------------------------------------------------------------------------


def test_without_root_or_sudo_it_warns_once_in_one_line_and_goes_on(scratch: Scratch) -> None:
    first = scratch.run()

    assert first.returncode == 0, first.stderr
    warnings = [line for line in first.stderr.splitlines() if "ffmpeg" in line]
    assert len(warnings) == 1, first.stderr
    assert warnings[0].startswith("setup: warning: ffmpeg is not installed and " + NO_RIGHTS)
    assert "videos get a recorded error" in warnings[0]
    assert scratch.apt_calls() == []
    assert stamp(scratch).is_file()
    assert scratch.pip_calls(), "the Python packages are installed all the same"

    second = scratch.run()

    assert second.returncode == 0, second.stderr
    assert second.stderr == ""
    assert scratch.calls() == [], "a second call asks nothing of anyone"


def test_a_sudo_that_wants_a_password_is_not_asked_to_install(scratch: Scratch) -> None:
    add_sudo(scratch)

    result = scratch.run(quiet=True)

    assert result.returncode == 0, result.stderr
    assert NO_RIGHTS in result.stderr and len(result.stderr.splitlines()) == 1
    assert "sudo -n true" in scratch.calls()
    assert scratch.apt_calls() == []


def test_a_passwordless_sudo_installs_ffmpeg_through_apt_get(scratch: Scratch) -> None:
    add_sudo(scratch)

    result = scratch.run(sudo="nopasswd")

    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr
    assert "sudo -n true" in scratch.calls()
    assert scratch.apt_calls() == [
        "apt-get update -qq (DEBIAN_FRONTEND=)",
        "apt-get install -y -qq --no-install-recommends ffmpeg (DEBIAN_FRONTEND=noninteractive)",
    ]
    assert (scratch.bin / "ffmpeg").exists() and stamp(scratch).is_file()


def test_as_root_a_failed_apt_get_warns_once_and_is_not_tried_again(scratch: Scratch) -> None:
    first = scratch.run(uid="0", apt_fails="1")

    assert first.returncode == 0, first.stderr
    [warning] = [line for line in first.stderr.splitlines() if "warning" in line]
    assert "apt-get could not install it (log: .venv/ffmpeg.log)" in warning
    assert scratch.apt_calls() == ["apt-get update -qq (DEBIAN_FRONTEND=)"]
    assert "no network" in (scratch.repo / ".venv" / "ffmpeg.log").read_text()

    second = scratch.run(uid="0", apt_fails="1")

    assert second.returncode == 0 and "warning" not in second.stderr
    assert scratch.apt_calls() == []


def test_removing_the_stamp_tries_again(scratch: Scratch) -> None:
    scratch.run(uid="0", apt_fails="1")
    stamp(scratch).unlink()

    scratch.run(uid="0")

    assert len(scratch.apt_calls()) == 2
    assert (scratch.bin / "ffprobe").exists()


def test_with_ffmpeg_installed_no_package_manager_is_asked(scratch: Scratch) -> None:
    scratch.give_ffmpeg()

    result = scratch.run(uid="0")

    assert result.returncode == 0 and "ffmpeg" not in result.stderr
    assert scratch.apt_calls() == []
    assert not stamp(scratch).exists()


def test_without_a_known_package_manager_it_says_so_once(scratch: Scratch) -> None:
    (scratch.bin / "apt-get").unlink()

    result = scratch.run(uid="0")

    assert result.returncode == 0
    assert "no known package manager (apt-get, dnf, brew) was found" in result.stderr
    assert len([line for line in result.stderr.splitlines() if "warning" in line]) == 1


# --- ExifTool (the tests' oracle, --dev only) -----------------------------------------------

EXIFTOOL_INSTALL = (
    "apt-get install -y -qq --no-install-recommends libimage-exiftool-perl "
    "(DEBIAN_FRONTEND=noninteractive)"
)


def exiftool_stamp(scratch: Scratch) -> Path:
    return scratch.repo / ".venv" / ".exiftool-attempted"


def test_dev_mode_installs_exiftool_through_apt_get_once(scratch: Scratch) -> None:
    scratch.give_ffmpeg()
    scratch.give_chromium()

    result = scratch.run("--dev", uid="0")

    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr
    assert scratch.apt_calls() == ["apt-get update -qq (DEBIAN_FRONTEND=)", EXIFTOOL_INSTALL]
    assert (scratch.bin / "exiftool").exists() and exiftool_stamp(scratch).is_file()
    assert scratch.run("--dev", uid="0").returncode == 0
    assert scratch.apt_calls() == []


def test_runtime_mode_never_asks_for_exiftool(scratch: Scratch) -> None:
    scratch.give_ffmpeg()

    result = scratch.run(uid="0")

    assert result.returncode == 0 and "ExifTool" not in result.stderr
    assert scratch.apt_calls() == []
    assert not exiftool_stamp(scratch).exists()


def test_without_rights_dev_mode_warns_once_that_the_oracle_tests_skip(scratch: Scratch) -> None:
    scratch.give_ffmpeg()
    scratch.give_chromium()

    first = scratch.run("--dev")

    assert first.returncode == 0, first.stderr
    [warning] = [line for line in first.stderr.splitlines() if "warning" in line]
    assert warning.startswith("setup: warning: ExifTool is not installed and " + NO_RIGHTS)
    assert "rm .venv/.exiftool-attempted to retry" in warning
    assert scratch.apt_calls() == [] and exiftool_stamp(scratch).is_file()
    second = scratch.run("--dev")
    assert "warning" not in second.stderr


def test_a_failed_exiftool_install_is_logged_and_not_tried_again(scratch: Scratch) -> None:
    scratch.give_ffmpeg()
    scratch.give_chromium()

    first = scratch.run("--dev", uid="0", apt_fails="1")

    [warning] = [line for line in first.stderr.splitlines() if "warning" in line]
    assert "apt-get could not install it (log: .venv/exiftool.log)" in warning
    assert "no network" in (scratch.repo / ".venv" / "exiftool.log").read_text()
    assert scratch.run("--dev", uid="0", apt_fails="1").stderr.count("warning") == 0
    assert scratch.apt_calls() == []


def test_with_exiftool_installed_dev_mode_asks_no_package_manager(scratch: Scratch) -> None:
    scratch.give_ffmpeg()
    scratch.give_chromium()
    scratch.give_exiftool()

    result = scratch.run("--dev", uid="0")

    assert result.returncode == 0 and "ExifTool" not in result.stderr
    assert scratch.apt_calls() == []
    assert not exiftool_stamp(scratch).exists()


# --- Chromium (the browser tests' browser, --dev only) ------------------------------------

CHROMIUM_INSTALL = (
    "apt-get install -y -qq --no-install-recommends chromium (DEBIAN_FRONTEND=noninteractive)"
)


def chromium_stamp(scratch: Scratch) -> Path:
    return scratch.repo / ".venv" / ".chromium-attempted"


def test_dev_mode_installs_chromium_through_apt_get_once(scratch: Scratch) -> None:
    scratch.give_ffmpeg()
    scratch.give_exiftool()

    result = scratch.run("--dev", uid="0")

    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr
    assert scratch.apt_calls() == ["apt-get update -qq (DEBIAN_FRONTEND=)", CHROMIUM_INSTALL]
    assert (scratch.bin / "chromium").exists() and chromium_stamp(scratch).is_file()
    assert scratch.run("--dev", uid="0").returncode == 0
    assert scratch.apt_calls() == []


def test_one_apt_get_update_serves_every_tool_of_a_set_up(scratch: Scratch) -> None:
    result = scratch.run("--dev", uid="0")

    assert result.returncode == 0, result.stderr
    assert scratch.apt_calls() == [
        "apt-get update -qq (DEBIAN_FRONTEND=)",
        "apt-get install -y -qq --no-install-recommends ffmpeg (DEBIAN_FRONTEND=noninteractive)",
        EXIFTOOL_INSTALL,
        CHROMIUM_INSTALL,
    ]


def test_runtime_mode_never_asks_for_chromium(scratch: Scratch) -> None:
    scratch.give_ffmpeg()

    result = scratch.run(uid="0")

    assert result.returncode == 0 and "Chromium" not in result.stderr
    assert scratch.apt_calls() == []
    assert not chromium_stamp(scratch).exists()


def test_without_rights_dev_mode_warns_once_that_the_browser_tests_skip(
    scratch: Scratch,
) -> None:
    scratch.give_ffmpeg()
    scratch.give_exiftool()

    first = scratch.run("--dev")

    assert first.returncode == 0, first.stderr
    [warning] = [line for line in first.stderr.splitlines() if "warning" in line]
    assert warning.startswith("setup: warning: Chromium is not installed and " + NO_RIGHTS)
    assert "the browser tests skip" in warning
    assert "rm .venv/.chromium-attempted to retry" in warning
    assert scratch.apt_calls() == [] and chromium_stamp(scratch).is_file()
    assert "warning" not in scratch.run("--dev").stderr


def test_a_failed_chromium_install_is_logged_and_not_tried_again(scratch: Scratch) -> None:
    scratch.give_ffmpeg()
    scratch.give_exiftool()

    first = scratch.run("--dev", uid="0", apt_fails="1")

    [warning] = [line for line in first.stderr.splitlines() if "warning" in line]
    assert "apt-get could not install it (log: .venv/chromium.log)" in warning
    assert "no network" in (scratch.repo / ".venv" / "chromium.log").read_text()
    assert scratch.run("--dev", uid="0", apt_fails="1").stderr.count("warning") == 0
    assert scratch.apt_calls() == []


def test_homebrew_has_no_chromium_command_and_says_so(scratch: Scratch) -> None:
    scratch.give_ffmpeg()
    scratch.give_exiftool()
    (scratch.bin / "apt-get").unlink()
    _stub(scratch.bin / "brew", 'echo "brew $*" >>"$FAKE_LOG"\n')

    result = scratch.run("--dev")

    [warning] = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warning.startswith("setup: warning: Chromium is not installed and brew has no")
    assert not [c for c in scratch.calls() if c.startswith("brew")]


@pytest.mark.parametrize("command", ["chromium", "chromium-browser"])
def test_with_chromium_installed_dev_mode_asks_no_package_manager(
    scratch: Scratch, command: str
) -> None:
    scratch.give_ffmpeg()
    scratch.give_exiftool()
    shutil.copy2(scratch.repo.parent / "tool", scratch.bin / command)

    result = scratch.run("--dev", uid="0")

    assert result.returncode == 0 and "Chromium" not in result.stderr
    assert scratch.apt_calls() == []
    assert not chromium_stamp(scratch).exists()


# --- the Python packages ---------------------------------------------------------------

PIP = "-m pip --disable-pip-version-check install -q"
RUNTIME = [f"{PIP} --require-hashes -r requirements/runtime.lock"]
FACES = [f"{PIP} --require-hashes -r requirements/faces.lock"]
DEV = [f"{PIP} --require-hashes -r requirements/dev.lock"]
EDITABLE = [f"{PIP} --no-deps --no-build-isolation -e ."]


def test_runtime_mode_installs_the_runtime_lock_with_hashes_and_no_dev_tools(
    scratch: Scratch,
) -> None:
    scratch.give_ffmpeg()

    result = scratch.run()

    assert result.returncode == 0, result.stderr
    assert "python3 -m venv .venv" in scratch.calls()
    assert scratch.pip_calls() == RUNTIME + EDITABLE
    assert "dev.lock" not in result.stderr


def test_dev_mode_installs_the_dev_lock_and_serves_runtime_mode_after_it(
    scratch: Scratch,
) -> None:
    scratch.give_ffmpeg()

    assert scratch.run("--dev").returncode == 0
    assert scratch.pip_calls() == DEV + EDITABLE

    assert scratch.run().returncode == 0
    assert scratch.pip_calls() == [], "a dev install holds the runtime pins"
    assert scratch.run("--dev").returncode == 0
    assert scratch.pip_calls() == []


def test_faces_mode_installs_the_faces_lock_and_serves_runtime_mode_after_it(
    scratch: Scratch,
) -> None:
    scratch.give_ffmpeg()
    scratch.run()

    assert scratch.run(faces=True).returncode == 0
    assert scratch.pip_calls() == FACES + EDITABLE, "a runtime install is not a faces one"
    assert scratch.run().returncode == 0
    assert scratch.pip_calls() == [], "a faces install holds the runtime pins"
    assert scratch.run(faces=True).returncode == 0
    assert scratch.pip_calls() == []
    scratch.run("--dev")
    assert scratch.pip_calls() == DEV + EDITABLE


def test_a_dev_install_holds_the_faces_pins(scratch: Scratch) -> None:
    scratch.give_ffmpeg()
    scratch.run("--dev")

    assert scratch.run(faces=True).returncode == 0
    assert scratch.pip_calls() == []


def test_a_runtime_install_is_not_a_dev_one(scratch: Scratch) -> None:
    scratch.give_ffmpeg()
    scratch.run()

    scratch.run("--dev")

    assert scratch.pip_calls() == DEV + EDITABLE


@pytest.mark.parametrize(
    ("changed", "reinstalls"),
    [
        ("requirements/runtime.lock", {"": RUNTIME, "--dev": DEV}),
        ("requirements/faces.lock", {"": [], "--dev": DEV}),
        ("requirements/dev.lock", {"": [], "--dev": DEV}),
        ("pyproject.toml", {"": RUNTIME, "--dev": DEV}),
    ],
)
def test_a_changed_lock_or_pyproject_makes_the_stamps_stale(
    scratch: Scratch, changed: str, reinstalls: dict[str, list[str]]
) -> None:
    scratch.give_ffmpeg()
    scratch.run("--dev")
    with (scratch.repo / changed).open("a") as file:
        file.write("# changed\n")

    for mode, expected in reinstalls.items():
        scratch.run(*filter(None, [mode]))
        assert scratch.pip_calls() == (expected + EDITABLE if expected else []), mode


def test_a_failed_pip_install_exits_1_with_the_log_and_is_tried_again(scratch: Scratch) -> None:
    scratch.give_ffmpeg()

    failed = scratch.run(pip="1")

    assert failed.returncode == 1
    assert "pip says" in failed.stderr
    assert "installing the Python packages failed; the whole log is .venv/setup.log" in (
        failed.stderr
    )
    assert not (scratch.repo / ".venv" / ".setup-runtime").exists()
    scratch.run()
    assert scratch.pip_calls() == RUNTIME + EDITABLE


def test_an_existing_venv_is_kept_and_no_python_is_looked_for(scratch: Scratch) -> None:
    scratch.give_ffmpeg()
    scratch.run()
    (scratch.repo / ".venv" / ".setup-runtime").unlink()

    scratch.run()

    assert not [c for c in scratch.calls() if c.startswith("python3")]
    assert scratch.pip_calls() == RUNTIME + EDITABLE


def test_without_python_3_11_it_fails_in_one_line(scratch: Scratch) -> None:
    result = scratch.run(old_python="1")

    assert result.returncode == 1
    assert result.stderr == "setup: safelight needs Python 3.11 or newer\n"
    assert not (scratch.repo / ".venv").exists()


def test_an_unknown_option_is_a_usage_error(scratch: Scratch) -> None:
    result = scratch.run("--devv")

    assert result.returncode == 2
    assert result.stderr == "setup: unknown option '--devv' (see 'scripts/setup --help')\n"
    assert scratch.calls() == []


def test_the_entry_points_ask_for_the_mode_they_need() -> None:
    """./safelight is for users (runtime only); the test and CI scripts need the tools."""

    def setup_lines(path: str) -> list[str]:
        text = (ROOT / path).read_text()
        return [line.strip() for line in text.splitlines() if "scripts/setup" in line]

    assert any(line.endswith('/scripts/setup"') for line in setup_lines("safelight"))
    assert not [line for line in setup_lines("safelight") if "--dev" in line]
    for path in ("scripts/test", ".ci/run", "scripts/mutation-changed.sh", "scripts/lock"):
        assert any("scripts/setup --dev" in line for line in setup_lines(path)), path
    assert os.access(ROOT / "scripts" / "setup", os.X_OK)


def test_scripts_test_lets_setup_say_what_it_installs() -> None:
    """A fresh checkout's first `scripts/test` installs for a minute: setup says so
    (its quiet mode would leave the terminal silent meanwhile; issue #31, item 6)."""
    text = (ROOT / "scripts" / "test").read_text()
    assert "SAFELIGHT_SETUP_QUIET" not in text

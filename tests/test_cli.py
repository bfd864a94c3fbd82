"""The `promop` command line: help, and one line (exit 2) for every user mistake, never a traceback."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runner import promop

from promop.cli import main
from promop.errors import UserError

ROOT = Path(__file__).resolve().parents[1]


def test_help_lists_commands(capsys):
    try:
        main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    assert "usage: promop" in out


def test_a_command_imports_only_its_own_module():
    """`promop render` must not pay for importing every other command's flags (the operator's pull in
    the renderer, schema validation and CEL): each user command, and each test that runs one, was a
    second or two slower. The full --help still lists every command (test_help_lists_commands)."""
    code = ("import sys\nfrom promop.cli import main\ntry:\n    main(['render', '--help'])\n"
            "except SystemExit:\n    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith('promop.commands.')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "['promop.commands.render']"


def test_help_names_every_command(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for name in ("demo", "run", "render", "recommender", "adapter"):
        assert name in out


def test_a_mistyped_command_lists_the_real_ones(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["rnder"])
    assert exc.value.code == 2
    assert "invalid choice: 'rnder'" in capsys.readouterr().err


def test_no_command_is_usage_error():
    proc = subprocess.run([sys.executable, "-m", "promop"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "usage: promop" in proc.stderr


def test_a_user_error_from_any_command_is_one_line_and_exit_2(capsys, monkeypatch):
    def broken(args):
        raise UserError("--thing x: is wrong,\n  on two lines; pass y")
    monkeypatch.setattr("promop.commands.manifests.run", broken)
    assert main(["manifests"]) == 2
    assert capsys.readouterr().err == "promop manifests: --thing x: is wrong, on two lines; pass y\n"


@pytest.fixture
def files(tmp_path):
    """Broken inputs a user may pass."""
    (tmp_path / "not-yaml.kc").write_text("apiVersion: v1\nclusters: [\n")
    (tmp_path / "text.kc").write_text("just some text\n")
    (tmp_path / "empty.kc").write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    (tmp_path / "ok.kc").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: k, user: u}}]\n")
    (tmp_path / "a-file").write_text("x")
    bad = tmp_path / "bad-examples"
    bad.mkdir()
    (bad / "x.yaml").write_text("kind: [\n")
    odd = tmp_path / "odd-examples"
    odd.mkdir()
    (odd / "x.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\n")
    (tmp_path / "no-crds").mkdir()
    return tmp_path


def busy_port() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s


CASES = [
    # (command line, where "{d}" is the files fixture's folder, what the one line must contain)
    ("run --kubeconfig /nonexistent", "--kubeconfig /nonexistent: no such file"),
    ("run --kubeconfig {d}", "is a directory"),
    ("run --kubeconfig {d}/not-yaml.kc", "is not valid YAML"),
    ("run --kubeconfig {d}/text.kc", "is not a kubeconfig"),
    ("run --kubeconfig {d}/empty.kc", "not a usable kubeconfig"),
    ("run --kubeconfig {d}/ok.kc --context nope", "--context nope: not in"),
    ("run --namespaces a --deny-namespaces b", "mutually exclusive"),
    ("run --workers 0", "--workers must be at least 1"),
    ("run --kube-api-qps 0", "--kube-api-qps must be above 0"),
    ("run --kube-api-burst 0", "--kube-api-burst must be at least 1"),
    ("run --web.listen-address 8080", "has no port"),
    ("run --kubeconfig {d}/ok.kc --web.listen-address 127.0.0.1:{busy}", "cannot listen"),
    ("demo --kubeconfig /nonexistent", "--kubeconfig /nonexistent: no such file"),
    ("demo --kubeconfig {d}/not-yaml.kc", "is not valid YAML"),
    ("demo --crds {d}/a-file", "--crds"),
    ("demo --examples /nonexistent", "--examples /nonexistent: not a directory"),
    ("demo --output-dir {d}/a-file", "--output-dir"),
    ("demo --timeout 0", "--timeout 0: must be above 0"),
    ("demo --context x", "--context needs --kubeconfig"),
    ("demo --crds {d}/no-crds --once", "no CustomResourceDefinition"),
    ("demo --examples {d}/bad-examples --once", "not valid YAML"),
    ("demo --examples {d}/odd-examples --once", "cannot apply kind 'Pod'"),
    ("demo --web.listen-address 127.0.0.1:{busy} --once", "cannot listen"),
    ("manifests --component nope", "--component nope: unknown"),
    ("manifests --namespace Not_Valid", "not a valid namespace name"),
    ("manifests --image ''", "not an image reference"),
    ("manifests --output-dir {d}/a-file", "--output-dir"),
]


def _one_line_exit_2(proc, command: str, expected: str) -> None:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"promop {command}: "), lines[0]
    assert expected in lines[0], lines[0]


def _args(line: str, files: Path, port: int) -> list[str]:
    import shlex

    return shlex.split(line.format(d=files, busy=port))


@pytest.mark.parametrize("line,expected", CASES, ids=[c[0] for c in CASES])
def test_user_mistakes_end_in_one_line_and_exit_2(files, line, expected):
    """In-process (tests/cli_runner.py); test_python_m_promop_says_the_same runs a real process."""
    sock = busy_port()
    try:
        args = _args(line, files, sock.getsockname()[1])
        proc = promop(*args, cwd=ROOT)
    finally:
        sock.close()
    _one_line_exit_2(proc, args[0], expected)


# one per command: the `python -m promop` entry point ends a user mistake in one line, exit 2, as a
# real process, and prints what the in-process run prints (render and explain: tests/test_cli_runner.py)
END_TO_END = [case for case in CASES
              if case[0] in ("run --workers 0", "demo --timeout 0", "manifests --component nope")]


@pytest.mark.parametrize("line,expected", END_TO_END, ids=[c[0] for c in END_TO_END])
def test_python_m_promop_says_the_same(files, line, expected):
    args = _args(line, files, 0)
    proc = subprocess.run([sys.executable, "-m", "promop", *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    _one_line_exit_2(proc, args[0], expected)
    mine = promop(*args, cwd=ROOT)
    assert (mine.returncode, mine.stdout, mine.stderr) == (proc.returncode, proc.stdout, proc.stderr)

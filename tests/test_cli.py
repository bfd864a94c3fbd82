import subprocess
import sys

from promop.cli import main


def test_help_lists_commands(capsys):
    try:
        main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0
    out = capsys.readouterr().out
    assert "usage: promop" in out


def test_no_command_is_usage_error():
    proc = subprocess.run([sys.executable, "-m", "promop"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "usage: promop" in proc.stderr

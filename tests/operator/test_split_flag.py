"""--config-secret-max-bytes: parsed, bounded by a Secret's 1 MiB, and handed to the renderer."""

from __future__ import annotations

import argparse

import pytest

from promop.operator import options


def parse(*argv: str) -> options.Options:
    parser = argparse.ArgumentParser()
    options.add_flags(parser)
    return options.from_args(parser.parse_args(list(argv)))


def test_default_is_900_kib_and_reaches_the_render_options():
    assert parse().render_options().config_secret_max_bytes == 900 * 1024
    assert parse("--config-secret-max-bytes=4096").render_options().config_secret_max_bytes == 4096
    assert parse("--config-secret-max-bytes=1048576").config_secret_max_bytes == 1048576


@pytest.mark.parametrize("value", ["0", "-1", "1048577", "1Mi", "9e5"])
def test_values_a_secret_cannot_hold_are_refused(value, capsys):
    with pytest.raises(SystemExit) as exc:
        parse(f"--config-secret-max-bytes={value}")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--config-secret-max-bytes" in err and len(err.strip().splitlines()[-1]) < 200

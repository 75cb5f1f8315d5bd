"""Ray is an extra: without --backend ray, nothing kernelband runs imports it (issue 8)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    from click.testing import CliRunner

    import kernelband.cli
    from kernelband.cli import main

    runner = CliRunner()
    for args in (["--help"], ["replay", "--help"], ["live", "--help"]):
        result = runner.invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
    # what a local replay and a local live run import (compiling numba is not needed for that)
    import kbsim.replay.sweep, kernelband.cli.replay, live.runner.runner  # noqa: E401,F401
    print(sorted(m for m in sys.modules if m == "ray" or m.startswith("ray.")))
""")


def test_local_commands_never_import_ray():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_ray_options_are_refused_without_the_ray_backend():
    from click.testing import CliRunner

    from kernelband.cli import main

    result = CliRunner().invoke(main, ["replay", "--synthetic", "default", "--policy", "greedy",
                                       "--address", "auto"])
    assert result.exit_code == 1
    assert "--address needs --backend ray" in result.output
    result = CliRunner().invoke(main, ["live", "--out", "x", "--device", "cpu", "--actors", "2"])
    assert result.exit_code == 2
    assert "--address and --actors need --backend ray" in result.output

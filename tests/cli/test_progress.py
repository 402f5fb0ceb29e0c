"""slow_notice speaks only for slow steps; the commands' default configs resolve from any folder."""
import subprocess
import sys
import threading

from spaceship_sim.progress import slow_notice


def test_slow_step_is_announced_then_timed():
    lines, heard = [], threading.Event()

    def notify(line):
        lines.append(line)
        heard.set()

    with slow_notice("compiling kernels", notify, after=0.0):
        assert heard.wait(30), "the notice comes while the step is still running"
    assert lines[0] == "compiling kernels ..." and lines[1].startswith("compiling kernels: done in ")
    assert len(lines) == 2


def test_quick_step_says_nothing():
    lines = []
    with slow_notice("loading kernels", lines.append, after=60.0):
        pass
    with slow_notice("quiet", None, after=0.0):
        pass
    assert lines == []


def test_run_without_config_uses_the_shipped_default_from_any_folder(tmp_path):
    r = subprocess.run([sys.executable, "-m", "spaceship_sim.cli.main", "run", "--frames", "2", "--warmup", "0",
                        "--out", "o", "--no-progress"], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "o" / "summary.json").exists()

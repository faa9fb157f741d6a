"""`meson install` puts the shoal package where Debian's python3 finds it, and the installed package
imports and runs (staged with DESTDIR, so nothing outside a temporary directory is touched)."""
import glob
import os
import subprocess
import sys

import pytest

from conftest import BUILD, PYTHON


@pytest.mark.skipif(sys.prefix != sys.base_prefix, reason="meson install targets Debian's python3, not a virtual "
                    "environment (pip install . into one is checked by scripts/pip-install-check.sh)")
def test_the_installed_package_is_on_debians_path_and_runs(tmp_path):
    stage = str(tmp_path / "stage")
    env = dict(os.environ, DESTDIR=stage)
    subprocess.run(["meson", "install", "-C", BUILD, "--no-rebuild", "--quiet"], env=env, check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    inits = glob.glob(stage + "/**/shoal/__init__.py", recursive=True)
    assert len(inits) == 1, inits
    package_dir = os.path.dirname(os.path.dirname(inits[0]))  # .../dist-packages, under the stage
    installed_dir = package_dir[len(stage):]
    sys_path = subprocess.run([PYTHON, "-c", "import sys; print('\\n'.join(sys.path))"], check=True,
                              stdout=subprocess.PIPE).stdout.decode().split()
    assert installed_dir in sys_path, (installed_dir, sys_path)
    libs = glob.glob(stage + "/**/libshoal.so.0", recursive=True)
    assert libs, "libshoal.so was not installed"
    code = ("import shoal, shoal.torch; s = shoal.Session.start(insecure=True, name='inst', bind='127.0.0.1:0', "
            "control_path='none', cluster='inst%d', job='inst%d', log_spec='error'); "
            "print(s.wait_for_view(0, 30).world_size); s.leave()" % (os.getpid(), os.getpid()))
    run_env = dict(os.environ, PYTHONPATH=package_dir, LD_LIBRARY_PATH=os.path.dirname(libs[0]))
    out = subprocess.run([PYTHON, "-c", code], env=run_env, cwd=str(tmp_path), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=60)
    assert out.returncode == 0 and out.stdout.decode().strip() == "1", out.stderr.decode()
    imported = subprocess.run([PYTHON, "-c", "import shoal; print(shoal.__file__)"], env=run_env,
                              cwd=str(tmp_path), stdout=subprocess.PIPE, check=True).stdout.decode()
    assert imported.startswith(stage), imported  # the staged copy, not the build tree's

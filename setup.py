"""setuptools side of pyproject.toml: the version from CMakeLists.txt's project(), and a build_py
step that builds libravlt.so.0 with CMake and puts it inside the package.

    pip install --no-build-isolation .                  # builds in build-python/ (Release)
    RAVLT_CMAKE_BUILD_DIR=build pip install ...         # reuse a configured build tree
    CMAKE_ARGS="-DCMAKE_C_COMPILER=clang" pip install . # extra CMake options

The wheel is tagged py3-none-<platform>: the package is pure Python over ctypes (any Python 3),
the library is for one platform.
"""
import os
import re
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(ROOT, 'CMakeLists.txt'), encoding='utf-8') as f:
        m = re.search(r'project\(\s*ravlt\s+VERSION\s+([0-9][0-9.]*)', f.read())
    if not m:
        raise RuntimeError('CMakeLists.txt: no project(ravlt VERSION x.y.z)')
    return m.group(1)


def run(cmd):
    print('ravlt setup.py:', ' '.join(cmd), flush=True)
    subprocess.run(cmd, check=True)


class BuildPyWithLibrary(build_py):
    """build_py, then libravlt.so.0 (CMake target ravlt_shared) into build_lib/ravlt/."""

    def run(self):
        super().run()
        if shutil.which('cmake') is None:
            raise RuntimeError('ravlt: cmake is needed to build libravlt (scripts/install-deps.sh installs it)')
        bdir = os.environ.get('RAVLT_CMAKE_BUILD_DIR')
        if bdir:
            bdir = os.path.abspath(bdir)
        else:
            bdir = os.path.join(os.path.abspath(self.get_finalized_command('build').build_temp), 'cmake')
            cfg = ['cmake', '-S', ROOT, '-B', bdir, '-DCMAKE_BUILD_TYPE=Release', '-DRAVLT_TESTS=OFF']
            cfg += os.environ.get('CMAKE_ARGS', '').split()
            run(cfg)
        jobs = os.environ.get('CMAKE_BUILD_PARALLEL_LEVEL') or str(os.cpu_count() or 1)
        run(['cmake', '--build', bdir, '--target', 'ravlt_shared', '-j', jobs])
        src = os.path.join(bdir, 'libravlt.so.0')
        if not os.path.exists(src):
            raise RuntimeError('ravlt: the CMake build made no %s' % src)
        dst = os.path.join(self.build_lib, 'ravlt', 'libravlt.so.0')
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)  # the versioned file behind the symlink
        os.chmod(dst, 0o755)


cmdclass = {'build_py': BuildPyWithLibrary}
try:
    from wheel.bdist_wheel import bdist_wheel

    class PlatformWheel(bdist_wheel):
        """A platform wheel (it holds a .so), for any Python 3 (no C extension)."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            return ('py3', 'none') + tuple(super().get_tag()[2:])

    cmdclass['bdist_wheel'] = PlatformWheel
except ImportError:  # no wheel package: pip install still works (no wheel to tag)
    pass

setup(version=version(), cmdclass=cmdclass, options={'build': {'build_base': 'build-python'}})

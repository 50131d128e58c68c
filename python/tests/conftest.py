"""Paths for the Python tests: env RAVLT_TEST_FIXTURES (default tests/fixtures of this checkout),
RAVLT_BIN (the CLI, default build/ravlt), set by tests/cli/test_python.sh."""
import os

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
FIXTURES = os.environ.get('RAVLT_TEST_FIXTURES') or os.path.join(ROOT, 'tests', 'fixtures')
BIN = os.environ.get('RAVLT_BIN') or os.path.join(ROOT, 'build', 'ravlt')


@pytest.fixture
def fixtures():
    return FIXTURES


def fx(*parts):
    return os.path.join(FIXTURES, *parts)


# tests/cli/test_python_pip.sh runs these tests against an installed wheel: the package and its
# library must then come from there, not from the source tree
_EXPECT = os.environ.get('RAVLT_EXPECT_PACKAGE_DIR')
if _EXPECT:
    import ravlt
    _here = os.path.realpath(os.path.dirname(ravlt.__file__))
    assert _here == os.path.realpath(_EXPECT), 'ravlt imported from %s, not %s' % (_here, _EXPECT)
    assert os.path.dirname(os.path.realpath(ravlt._lib.path)) == _here, 'libravlt from ' + ravlt._lib.path

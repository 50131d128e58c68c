"""Paths for the Python tests: env RAVLT_FIXTURES (default tests/fixtures of this checkout),
RAVLT_BIN (the CLI, default build/ravlt), set by tests/test_python.sh."""
import os

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
FIXTURES = os.environ.get('RAVLT_FIXTURES') or os.path.join(ROOT, 'tests', 'fixtures')
BIN = os.environ.get('RAVLT_BIN') or os.path.join(ROOT, 'build', 'ravlt')


@pytest.fixture
def fixtures():
    return FIXTURES


def fx(*parts):
    return os.path.join(FIXTURES, *parts)

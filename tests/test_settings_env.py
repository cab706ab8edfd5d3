from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from mnote.env import env_bool, env_int, env_list, env_path


def test_it_reads_booleans_and_refuses_anything_else():
    assert env_bool("X", False, {"X": "yes"}) is True
    assert env_bool("X", True, {"X": "0"}) is False
    assert env_bool("X", True, {}) is True
    with pytest.raises(ImproperlyConfigured, match="X='maybe' is not a boolean"):
        env_bool("X", False, {"X": "maybe"})


def test_it_refuses_a_non_integer_or_too_small_number():
    assert env_int("N", 200, {}) == 200
    assert env_int("N", 200, {"N": "50"}) == 50
    with pytest.raises(ImproperlyConfigured, match="not an integer"):
        env_int("N", 200, {"N": "lots"})
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("N", 200, {"N": "0"}, minimum=1)


def test_it_splits_lists_on_commas():
    assert env_list("H", ["a"], {"H": "x.example, y.example ,"}) == ["x.example", "y.example"]
    assert env_list("H", ["a"], {}) == ["a"]


def test_it_refuses_a_relative_path():
    assert env_path("P", Path("/d"), {}) == Path("/d")
    with pytest.raises(ImproperlyConfigured, match="must be an absolute path"):
        env_path("P", Path("/d"), {"P": "relative/dir"})

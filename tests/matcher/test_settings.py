"""Settings are read once from the environment, validated, and overridable."""

from __future__ import annotations

import pytest

from matcher.errors import SettingsError
from matcher.settings import MatchPolicy, Settings


def test_defaults_without_environment() -> None:
    s = Settings.from_env({})
    assert s == Settings()
    assert s.redis_url == "redis://127.0.0.1:6379/0" and s.policy == MatchPolicy()


def test_environment_values_are_parsed() -> None:
    s = Settings.from_env(
        {
            "FPTRACK_MONGO_URI": "mongodb://db:27017",
            "FPTRACK_REDIS_URL": "redis://cache:6379/2",
            "FPTRACK_SIMHASH_PERMUTED": "true",
            "FPTRACK_WINDOW_MAX_DF": "50",
            "FPTRACK_POLICY_MIN_WORK_SHARE": "0.3",
            "FPTRACK_NEAR_TWIN_SHARE": "0.9",
            "UNRELATED": "x",
        }
    )
    assert s.mongo_uri == "mongodb://db:27017" and s.redis_url == "redis://cache:6379/2"
    assert s.simhash_permuted is True and s.window_max_df == 50
    assert s.policy.min_work_share == 0.3 and s.near_twin_share == 0.9


def test_overrides_win() -> None:
    s = Settings.from_env({"FPTRACK_REDIS_PREFIX": "a"}, redis_prefix="b")
    assert s.redis_prefix == "b"


@pytest.mark.parametrize(
    "env",
    [
        {"FPTRACK_WINDOW_MAX_DF": "many"},
        {"FPTRACK_SIMHASH_PERMUTED": "perhaps"},
        {"FPTRACK_POLICY_MIN_WORK_SHARE": "1.5"},
        {"FPTRACK_REDIS_PREFIX": "a b"},
        {"FPTRACK_WINDOW_BUCKET_BITS": "40"},
        {"FPTRACK_CRAWL_LEASE": "1"},
        {"FPTRACK_CRAWL_LEASE": "7000"},
        {"FPTRACK_NEAR_TWIN_SHARE": "0.3"},
        {"FPTRACK_NEAR_TWIN_SHARE": "1.2"},
        {"FPTRACK_METRICS_ALLOW": "10.0.0.0/8, localhost"},
        {"FPTRACK_METRICS_CACHE_SECONDS": "-1"},
    ],
)
def test_bad_values_give_a_clear_error(env: dict[str, str]) -> None:
    with pytest.raises(SettingsError):
        Settings.from_env(env)


def test_metrics_settings() -> None:
    """The admin's ``/metrics``: no address trusted without a token, figures kept 15 s."""
    assert Settings.from_env({}).metrics_networks == ()
    assert Settings.from_env({}).metrics_cache_seconds == 15.0
    s = Settings.from_env(
        {"FPTRACK_METRICS_ALLOW": "10.1.2.3/8,::1", "FPTRACK_METRICS_CACHE_SECONDS": "0"}
    )
    assert [str(n) for n in s.metrics_networks] == ["10.0.0.0/8", "::1/128"]
    assert s.metrics_cache_seconds == 0
    with pytest.raises(SettingsError, match="metrics_allow: 'localhost' is not an IP"):
        Settings.from_env({"FPTRACK_METRICS_ALLOW": "localhost"})

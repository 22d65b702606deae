import pytest

from hpcsched.core.durations import format_duration, parse_duration


@pytest.mark.parametrize("text,seconds", [
    (90, 90.0), (1.5, 1.5), ("90", 90.0), ("90s", 90.0), ("30m", 1800.0), ("2h", 7200.0),
    ("1h30m", 5400.0), ("1d", 86400.0), ("01:02:03", 3723.0), ("05:00", 300.0), ("1-00:00:10", 86410.0),
    ("0.5h", 1800.0),
])
def test_parse_duration_accepts(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "ten", "5x", "-3", -1, True, None, "1:2:3:4", [1], "m5"])
def test_parse_duration_rejects_with_the_value(bad):
    with pytest.raises(ValueError) as info:
        parse_duration(bad)
    assert "not a duration" in str(info.value)


def test_format_duration():
    assert format_duration(42) == "42s"
    assert format_duration(185) == "3m05s"
    assert format_duration(7260) == "2h01m"

"""rooflinecli.nvml: the clock summary a run record gets, and no NVML on this machine."""

from rooflinecli import nvml


def test_summary_of_readings() -> None:
    s = nvml.Samples(clocks_mhz=[1980, 1440, 1500, 1560], power_mw=[690000, 700000], reasons=0x4)
    assert s.summary() == {
        "sm_clock_mhz": 1620,
        "sm_clock_mhz_min": 1440,
        "sm_clock_mhz_max": 1980,
        "clock_samples": 4,
        "clock_limited_by": "power cap",
        "power_w": 695.0,
    }


def test_too_few_readings_say_nothing() -> None:
    assert nvml.Samples(clocks_mhz=[1980, 1980]).summary() == {}


def test_reasons_text_names_every_bit_but_idle() -> None:
    assert nvml.reasons_text(0x1) == ""
    assert nvml.reasons_text(0x4 | 0x20) == "power cap, software thermal"
    assert nvml.reasons_text(0) == ""


def test_no_nvml_is_none_not_an_error(monkeypatch) -> None:
    def missing(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(nvml.ctypes, "CDLL", missing)
    monkeypatch.setattr(nvml, "_opened", {})
    assert nvml.open_device("0000:19:00.0") is None


def test_sampling_stops_when_done() -> None:
    class Fake(nvml.Device):
        def __init__(self) -> None:
            self.calls = 0

        def read(self, into: nvml.Samples) -> None:
            self.calls += 1
            into.clocks_mhz.append(1500 + self.calls)

    fake = Fake()
    got = fake.sample_until(lambda: fake.calls >= 5, period_s=0.0)
    assert got.clocks_mhz == [1501, 1502, 1503, 1504, 1505]

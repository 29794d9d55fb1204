"""rooflinecli.gpu.nvml: the clock summary a run record gets, and no NVML on this machine."""

from rooflinecli.gpu import nvml


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
    import pynvml

    def missing() -> None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", missing)
    monkeypatch.setattr(nvml, "_opened", {})
    assert nvml.open_device("0000:19:00.0") is None


def test_readings_through_the_binding() -> None:
    """Device.read takes the clock, the power and the reasons from nvidia-ml-py's calls, and
    skips a reading the GPU does not give (NVMLError) instead of failing."""
    import pynvml

    class FakeNvml:
        NVML_CLOCK_SM = pynvml.NVML_CLOCK_SM
        NVMLError = pynvml.NVMLError

        def nvmlDeviceGetClockInfo(self, handle: object, kind: int) -> int:
            assert kind == pynvml.NVML_CLOCK_SM
            return 1755

        def nvmlDeviceGetPowerUsage(self, handle: object) -> int:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

        def nvmlDeviceGetCurrentClocksEventReasons(self, handle: object) -> int:
            return 0x4

    got = nvml.Samples()
    nvml.Device(FakeNvml(), object()).read(got)
    assert got.clocks_mhz == [1755] and got.power_mw == [] and got.reasons == 0x4


def test_sampling_reads_until_the_block_ends() -> None:
    import threading

    class Fake(nvml.Device):
        def __init__(self) -> None:
            self.calls = 0
            self.five = threading.Event()

        def read(self, into: nvml.Samples) -> None:
            self.calls += 1
            into.clocks_mhz.append(1500 + self.calls)
            if self.calls == 5:
                self.five.set()

    fake = Fake()
    with fake.sampling(period_s=0.0) as got:
        assert fake.five.wait(10)
    calls = fake.calls
    assert got.clocks_mhz[:5] == [1501, 1502, 1503, 1504, 1505]
    assert len(got.clocks_mhz) == calls  # the thread has stopped: nothing is added afterwards
    assert fake.calls == calls

"""``timing.cuda_events`` with the stream hold, on a simulated GPU (no GPU needed):
a call of many kernels fills the driver's launch queue behind a held stream, the hold
times out, and the region is re-timed in shorter regions instead of the hold being
dropped; a call that waits on the device drops the hold."""
import sys
import types

import pytest

from tecc.runtime import timing

QUEUE = 1000  # launches the simulated driver queues behind a held stream
KERNEL_MS = 0.001  # GPU time of one launch, back to back
HOST_MS = 0.005  # host time of one launch: what a sample measures when nothing is held


class FakeGPU:
    def __init__(self, launches_per_call, waits_on_device=False):
        self.clock = 0.0  # the GPU's clock (ms)
        self.per_call = launches_per_call
        self.waits = waits_on_device
        self.held = False
        self.queued = 0
        self.expired = False
        self.holds = 0
        self.calls = 0

    def fn(self):
        self.calls += 1
        if self.held and not self.expired:
            self.queued += self.per_call
            if self.queued > QUEUE or self.waits:
                # the host waits until the hold gives up; the GPU then runs while the
                # host enqueues the rest: the sample is the host's launch path
                self.expired = True
                self.clock += self.per_call * HOST_MS
            else:
                self.clock += self.per_call * KERNEL_MS
        else:
            self.clock += self.per_call * HOST_MS

    # the _StreamHold interface
    def hold(self, stream):
        self.held, self.queued, self.expired = True, 0, False
        self.holds += 1

    def release(self):
        self.held = False

    def timed_out(self):
        return self.expired


@pytest.fixture
def fake_cupy(monkeypatch):
    def install(gpu):
        class Event:
            t = 0.0

            def record(self, stream=None):
                self.t = gpu.clock

            def synchronize(self):
                pass

        cuda = types.SimpleNamespace(Event=Event, get_elapsed_time=lambda a, b: b.t - a.t)
        monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))
        monkeypatch.setattr(timing, "_HOLD", [gpu])
        return timing.cuda_events(gpu.fn)

    return install


def test_a_model_that_fills_the_launch_queue_is_timed_in_shorter_held_regions(fake_cupy):
    gpu = FakeGPU(launches_per_call=22)  # 64 calls: 1408 launches, more than the queue
    run_n = fake_cupy(gpu)
    seconds = run_n(200)
    assert seconds == pytest.approx(200 * 22 * KERNEL_MS / 1e3)  # GPU time, not the host's
    assert gpu.calls == 200 + 64  # the first region, re-timed
    # later runs keep the shorter region (16 calls: 352 launches) and the hold
    holds = gpu.holds
    assert run_n(32) == pytest.approx(32 * 22 * KERNEL_MS / 1e3) and gpu.holds == holds + 2


def test_a_call_that_waits_on_the_device_drops_the_hold(fake_cupy):
    gpu = FakeGPU(launches_per_call=1, waits_on_device=True)
    run_n = fake_cupy(gpu)
    run_n(100)
    holds = gpu.holds  # 64, 16, 4 and 1 call: each timed out
    assert holds == 4
    run_n(100)
    assert gpu.holds == holds  # nothing held any more


def test_a_kernel_a_call_keeps_regions_of_hold_calls(fake_cupy):
    gpu = FakeGPU(launches_per_call=1)
    run_n = fake_cupy(gpu)
    assert run_n(130) == pytest.approx(130 * KERNEL_MS / 1e3)
    assert gpu.holds == 3 and gpu.calls == 130  # 64 + 64 + 2, nothing re-timed

import pytest

from ansible_collections.overcommit.control.plugins.module_utils.common import retry


class Fault(Exception):
    pass


class Fatal(Exception):
    pass


class FakeTime(object):
    """An injected clock that only moves when slept on (plus an optional cost per call)."""

    def __init__(self):
        self.now = 100.0
        self.sleeps = []

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self):
        return self.now


def flaky(failures, exc=Fault, cost=0.0, clock=None):
    calls = []

    def call(value):
        calls.append(value)
        if clock is not None:
            clock.now += cost
        if len(calls) <= failures:
            raise exc("fault %d" % len(calls))
        return value * 2

    return call, calls


def decorate(fake, log=None, random=lambda: 1.0, **kwargs):
    options = dict(retries=5, delay=1.0, max_delay=6.0, total_seconds=100.0,
                   is_transient=lambda exc: "fault" if isinstance(exc, Fault) else None)
    options.update(kwargs)
    return retry.jittered_backoff(log=log, sleep=fake.sleep, clock=fake.clock, random=random, **options)


def test_transient_faults_are_retried_and_the_result_returned():
    fake, log = FakeTime(), retry.RetryLog()
    call, calls = flaky(3)
    assert decorate(fake, log)(call)(21) == 42
    assert calls == [21] * 4
    # random() = 1: the top of each jitter window, doubling up to max_delay.
    assert fake.sleeps == [1.0, 2.0, 4.0]
    assert log.report() == {"attempts": 3, "waited_seconds": 7.0, "errors": ["fault"]}


def test_it_stops_after_the_retries_and_raises_the_last_fault_saying_how_long():
    fake = FakeTime()
    call, calls = flaky(99)
    with pytest.raises(Fault, match="fault 6") as raised:
        decorate(fake, retries=5)(call)(1)
    assert len(calls) == 6 and len(fake.sleeps) == 5
    assert fake.sleeps == [1.0, 2.0, 4.0, 6.0, 6.0]
    assert raised.value.retry_tries == 6 and raised.value.retry_seconds == pytest.approx(19.0)
    assert retry.retry_note(raised.value) == "; tried 6 times over 19.0 s"


def test_full_jitter_stays_within_zero_and_the_capped_exponential():
    for value in (0.0, 0.25, 0.999):
        fake = FakeTime()
        call, _calls = flaky(5)
        decorate(fake, random=lambda: value, retries=5)(call)(1)
        caps = [1.0, 2.0, 4.0, 6.0, 6.0]
        assert fake.sleeps == [pytest.approx(value * cap) for cap in caps]
        assert all(0 <= pause <= cap for pause, cap in zip(fake.sleeps, caps))


def test_the_total_time_bounds_the_retries_before_the_count_does():
    fake = FakeTime()
    call, calls = flaky(99, cost=0.5, clock=fake)
    with pytest.raises(Fault) as raised:
        decorate(fake, retries=50, total_seconds=10.0)(call)(1)
    # 0.5 + 1 + 0.5 + 2 + 0.5 + 4 = 8.5 s; then 0.5 s more and a 6 s sleep would end past 10 s.
    assert fake.sleeps == [1.0, 2.0, 4.0]
    assert len(calls) == 4
    assert fake.now - 100.0 <= 10.0
    assert raised.value.retry_seconds == pytest.approx(9.0)


def test_retry_after_is_honoured_but_not_past_the_total_time():
    fake, log = FakeTime(), retry.RetryLog()
    answers = iter([retry.Transient("HTTP 429", retry_after=3.0), retry.Transient("HTTP 429", retry_after=0.0)])
    call, _calls = flaky(2)
    decorate(fake, log, random=lambda: 0.5, is_transient=lambda exc: next(answers))(call)(1)
    # At least what the server asked for; the jittered wait when it asked for less.
    assert fake.sleeps == [3.0, 1.0]
    assert log.report()["errors"] == ["HTTP 429"]

    fake = FakeTime()
    call, calls = flaky(99)
    with pytest.raises(Fault):
        decorate(fake, total_seconds=10.0, is_transient=lambda exc: retry.Transient("HTTP 429", 60.0))(call)(1)
    assert fake.sleeps == [] and len(calls) == 1


def test_a_fault_that_is_not_transient_is_raised_at_once():
    fake, log = FakeTime(), retry.RetryLog()
    call, calls = flaky(1, exc=Fatal)
    with pytest.raises(Fatal) as raised:
        decorate(fake, log)(call)(1)
    assert len(calls) == 1 and fake.sleeps == [] and log.report() is None
    assert retry.retry_note(raised.value) == ""


def test_no_retries_means_one_try():
    fake = FakeTime()
    call, calls = flaky(1)
    with pytest.raises(Fault) as raised:
        decorate(fake, retries=0)(call)(1)
    assert len(calls) == 1 and fake.sleeps == [] and retry.retry_note(raised.value) == ""


def test_the_log_adds_up_calls_and_keeps_the_faults_met_in_order():
    fake, log = FakeTime(), retry.RetryLog()
    labels = iter(["HTTP 503", "HTTP 503", "connection dropped", "HTTP 429"])
    decorated = decorate(fake, log, random=lambda: 0.5, is_transient=lambda exc: next(labels))
    call, _calls = flaky(3)
    decorated(call)(1)
    other, _calls = flaky(1)
    decorated(other)(1)
    assert log.report() == {"attempts": 4, "waited_seconds": 0.5 + 1.0 + 2.0 + 0.5,
                            "errors": ["HTTP 503", "connection dropped", "HTTP 429"]}


def test_the_log_keeps_a_bounded_number_of_faults():
    log = retry.RetryLog()
    for index in range(30):
        log.record("fault %d" % index, 0.1)
    report = log.report()
    assert report["attempts"] == 30 and len(report["errors"]) == retry.ERRORS_KEPT
    assert report["errors"][-1] == "fault 29"


def test_true_is_a_transient_fault_named_by_its_type():
    fake, log = FakeTime(), retry.RetryLog()
    call, _calls = flaky(1)
    decorate(fake, log, is_transient=lambda exc: True)(call)(1)
    assert log.report()["errors"] == ["Fault"]


def test_the_decorated_function_keeps_its_name():
    fake = FakeTime()

    @decorate(fake)
    def read_nodes():
        """Reads the nodes."""

    assert read_nodes.__name__ == "read_nodes" and read_nodes.__doc__ == "Reads the nodes."

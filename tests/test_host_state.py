"""measure/host_state.py: what the harness keeps alike around timed samples on the host."""

import gc

from tensorforge_measure.measure.host_state import TEARDOWN_CUPTI, cupti_teardown_default, gc_paused


def test_cupti_is_torn_down_after_profiling_unless_the_user_said_otherwise():
    env: dict = {}
    assert cupti_teardown_default("13.0", env) == "1" and env == {TEARDOWN_CUPTI: "1"}
    env = {TEARDOWN_CUPTI: "0"}  # the user's choice stands
    assert cupti_teardown_default("13.0", env) == "0"
    env = {}
    assert cupti_teardown_default("12.4", env) is None and env == {}  # teardown crashed with graphs before 12.6
    assert cupti_teardown_default("12.6", {}) == "1"
    assert cupti_teardown_default(None, {}) is None


def test_the_collector_is_off_inside_and_as_it_was_after():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a caller's own setting is kept
    finally:
        gc.enable()

"""Re-entrancy: public calls on the same object from inside a call, on both cores.

Python code can run in the middle of a compiled method: a profile hook, a GC callback
or a finalizer during an allocation, a signal handler, another thread. Here such code
calls the public API of the object whose method is running. Each call may raise, never
crash; where the outcome is deterministic, both cores give the same one.
"""

from __future__ import annotations

import copy
import gc
import pickle
import random
import signal
import sys
import threading
from array import array
from contextlib import contextmanager

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import IMPLEMENTATIONS, load, require_gc_hooks, require_gc_inside_compiled_calls
from diverge_codec._rules import Rule, State
from diverge_codec.errors import DecodeError, LocalProtocolError, RemoteProtocolError, SequenceError, StreamError

# The one message of each refusal, word for word, on both cores.
NOT_READY = "{} is not initialised: its __init__ did not run to the end"
INIT_TWICE = "{}.__init__ runs once: make a new checker instead of re-initialising one"
READER_INIT_TWICE = "RecordReader.__init__ runs once: make a new reader instead of re-initialising one"
READER_NOT_READY = "RecordReader is not initialised: its __init__ did not run to the end"
BUSY = ("RecordReader is in use: feed and close cannot run inside a feed or close of the same reader "
        "(from a callback, a hook or another thread)")
REFUSED_RESIZE = pytest.mark.filterwarnings(
    r"ignore:Exception ignored[\s\S]*BufferError. Existing exports of data. object cannot be re-sized"
    ":pytest.PytestUnraisableExceptionWarning"
)
"""Expected where a GC callback resizes a bytearray the pure core holds a view of: the resize
is refused (BufferError) inside the callback, where Python can only report it as unraisable.
Only that report is silenced, and only in the tests that provoke it."""
# What a call fired at an object mid-call may raise: a documented refusal, never anything else.
ALLOWED = (SequenceError, DecodeError, StreamError, RuntimeError, TypeError, ValueError)


@contextmanager
def gc_callback(callback, threshold=1):
    """Run callback(phase, info) at every collection, collecting as often as allocations allow."""
    require_gc_hooks()
    old = gc.get_threshold()
    gc.collect()
    gc.freeze()  # what lived before is in no collection and no gc.get_objects(): each costs what the test made,
    # not the whole run's heap (the same collections at the same allocations; 4-10 s a test in a quick-subset run)
    gc.callbacks.append(callback)
    gc.set_threshold(threshold)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(callback)
        gc.unfreeze()


@contextmanager
def profile_hook(hook):
    """Run hook() at every call and return of a Python function, and every call of a builtin from Python."""
    sys.setprofile(lambda frame, event, arg: hook(event))
    try:
        yield
    finally:
        sys.setprofile(None)


def fire(calls, log):
    """Make each call; note what it raised. Anything outside ALLOWED fails the test where it is read."""
    for call in calls:
        try:
            call()
        except ALLOWED as error:
            log.append(error)
        except BaseException as error:  # noqa: BLE001 - recorded, and the test fails on it
            log.append(AssertionError(f"{type(error).__name__}: {error}"))


def assert_only_allowed(log):
    bad = [error for error in log if isinstance(error, AssertionError)]
    assert not bad, bad[:3]
    for error in log:
        if isinstance(error, RemoteProtocolError):  # a rule read past the table would be a random object
            assert type(error.rule) is Rule, type(error.rule)


# --- sequence checkers ---------------------------------------------------------------------------

CHECKERS = ["ToolsBeginChecker", "McpNotificationsChecker"]


def checker_calls(impl, checker):
    """Every public call of a checker, with frames and payloads of its channel."""
    tb, mn = load("tools_begin", impl), load("mcp_notifications", impl)
    if "ToolsBegin" in type(checker).__name__:
        frames = [tb.Begun({"k": "rotating"}), tb.ACTIVE, tb.Inactive({"k": 1}), tb.Error(tb.ProviderError("x"))]
        payloads = [b"\x02", b"\x00{}", b"\x03{}"]
    else:
        frames = [mn.Notification({"method": "m"}), mn.Error(mn.ErrorData(1, "x"))]
        payloads = [b'\x00{"method":"m"}', b"\x01{}"]
    calls = [lambda frame=frame: checker.frame(frame) for frame in frames]
    calls += [lambda payload=payload: checker.payload(payload) for payload in payloads]
    calls += [checker.finish, lambda: repr(checker), lambda: checker.state, lambda: checker.unreadable]
    return calls


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("name", CHECKERS)
def test_a_second_init_is_refused_and_changes_nothing(impl, name):
    cls = getattr(load("sequence", impl), name)
    checker = cls()
    checker.frame(checker_frames(impl, name)[0])
    before = (checker.state, checker.frames, repr(checker))
    with pytest.raises(RuntimeError) as caught:
        checker.__init__()
    assert str(caught.value) == INIT_TWICE.format(name)
    assert (checker.state, checker.frames, repr(checker)) == before


def checker_frames(impl, name):
    """A valid sequence of the channel."""
    if name == "ToolsBeginChecker":
        tb = load("tools_begin", impl)
        return [tb.Begun({"k": "rotating"}), tb.ACTIVE, tb.Inactive({"k": 1})]
    mn = load("mcp_notifications", impl)
    return [mn.Notification({"method": "m"}), mn.Notification({"method": "n"})]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("name", CHECKERS)
def test_a_checker_not_initialised_says_so(impl, name):
    cls = getattr(load("sequence", impl), name)
    checker = cls.__new__(cls)
    for call in checker_calls(impl, checker)[:-3]:  # frame, payload and finish
        with pytest.raises(RuntimeError) as caught:
            call()
        assert str(caught.value) == NOT_READY.format(name)
    assert repr(checker) == f"<{name} not initialised>"
    assert (checker.state, checker.frames, checker.finished, checker.violation) == (None, 0, False, None)
    checker.__init__()  # __init__ never ran: it may run now
    for frame in checker_frames(impl, name):
        checker.frame(frame)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("name", CHECKERS)
def test_calls_from_a_profile_hook_during_init_meet_a_checker_that_is_not_ready(impl, name):
    # The known instance: a frame fed while __init__ filled the table read past the rules tuple.
    cls = getattr(load("sequence", impl), name)
    checker = cls.__new__(cls)
    calls = checker_calls(impl, checker)[:-3]
    log = []
    inside = [False]

    def hook(event):
        if event == "call" and not inside[0]:
            inside[0] = True
            fire(calls, log)
            inside[0] = False

    with profile_hook(hook):
        checker.__init__()
        inside[0] = True  # __init__ has returned: what runs now is the context manager's exit
    assert log, "the hook never ran inside __init__"
    assert {(type(error), str(error)) for error in log} == {(RuntimeError, NOT_READY.format(name))}
    for frame in checker_frames(impl, name):
        checker.frame(frame)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("name", CHECKERS)
def test_an_interrupted_init_leaves_a_checker_that_refuses(impl, name):
    cls = getattr(load("sequence", impl), name)
    for stop in range(1, 200):
        checker = cls.__new__(cls)
        count, done = [0], [False]

        def hook(event):
            count[0] += 1
            if count[0] == stop and not done[0]:
                raise KeyboardInterrupt  # as a signal handler's exception would arrive

        # The collector is off: a collection would run other code's GC callbacks (hypothesis
        # has one) under the hook, where the hook's exception is swallowed as unraisable
        # instead of interrupting __init__. GC callbacks mid-call have tests of their own.
        gc.disable()
        try:
            with profile_hook(hook):
                checker.__init__()
                done[0] = True
        except KeyboardInterrupt:
            pass
        else:
            break  # __init__ ran through: every interruption point has been tried
        finally:
            gc.enable()
        if repr(checker) != f"<{name} not initialised>":  # interrupted on its way out: it is whole
            for frame in checker_frames(impl, name):
                checker.frame(frame)
            continue
        for call in checker_calls(impl, checker)[:-3]:
            with pytest.raises(RuntimeError) as caught:
                call()
            assert str(caught.value) == NOT_READY.format(name)
        try:
            checker.__init__()
        except RuntimeError as error:  # the interrupted __init__ had begun: it does not run again
            assert str(error) == INIT_TWICE.format(name)
        else:
            for frame in checker_frames(impl, name):
                checker.frame(frame)
    else:
        pytest.fail("__init__ never ran through")
    assert stop > 1


def storm(impl, name, install):
    """Feed a checker valid sequences while ``install`` fires public calls at it from elsewhere."""
    cls = getattr(load("sequence", impl), name)
    log = []
    for _ in range(8):
        checker = cls()
        calls = checker_calls(impl, checker)
        rng = random.Random(len(log))
        with install(lambda: fire([rng.choice(calls)], log)):
            for frame in checker_frames(impl, name):
                try:
                    checker.frame(frame)
                except ALLOWED as error:
                    log.append(error)
            try:
                checker.finish()
            except ALLOWED as error:
                log.append(error)
        assert checker.state is None or type(checker.state) is State
        assert checker.frames >= 0
        assert checker.violation is None or type(checker.violation.rule) is Rule
        repr(checker)
    assert_only_allowed(log)
    return log


def from_profile(call):
    inside = [False]

    def hook(event):
        if event in ("call", "c_call") and not inside[0]:
            inside[0] = True
            call()
            inside[0] = False

    return profile_hook(hook)


def from_gc(call):
    return gc_callback(lambda phase, info: call() if phase == "start" else None)


def from_finalizers(call):
    """Objects in reference cycles, each making the call when the GC frees it mid-call."""

    class CallsWhenCollected:
        def __del__(self):
            call()
            seed()

    def seed():
        cycle = CallsWhenCollected()
        cycle.itself = cycle

    @contextmanager
    def installed():
        require_gc_hooks()
        old = gc.get_threshold()
        gc.set_threshold(1)
        seed()
        try:
            yield
        finally:
            gc.set_threshold(*old)
            CallsWhenCollected.__del__ = lambda self: None
            gc.collect()

    return installed()


def from_signals(call):
    """SIGALRM 0.2 ms after each handler returns. Not a periodic timer: where a handler takes longer
    than the period (under qemu's arm64 emulation), the signals starve the call under test while
    each handler adds its refusals to the log, which grew to 18 GB and never finished."""
    armed = [True]

    def handler(signum, frame):
        call()
        if armed[0]:
            signal.setitimer(signal.ITIMER_REAL, 0.0002)

    @contextmanager
    def installed():
        previous = signal.signal(signal.SIGALRM, handler)
        signal.setitimer(signal.ITIMER_REAL, 0.0002)
        try:
            yield
        finally:
            armed[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0, 0)
            signal.signal(signal.SIGALRM, previous)

    return installed()


SOURCES = [from_profile, from_gc, from_finalizers]
if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
    SOURCES.append(from_signals)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("name", CHECKERS)
@pytest.mark.parametrize("source", SOURCES, ids=lambda source: source.__name__)
def test_calls_fired_at_a_checker_mid_call_raise_at_most(impl, name, source):
    storm(impl, name, source)


def from_threads(make_calls, threads=4, rounds=300):
    """Each of ``threads`` threads fires ``rounds`` random calls of its own ``make_calls()`` at one
    shared object, switching as often as CPython allows: the log of what each call raised, per thread."""
    logs = [[] for _ in range(threads)]

    def work(log, seed):
        rng = random.Random(seed)
        calls = make_calls()
        for _ in range(rounds):
            fire([rng.choice(calls)], log)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        started = [threading.Thread(target=work, args=(log, seed)) for seed, log in enumerate(logs)]
        for thread in started:
            thread.start()
        for thread in started:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    return logs


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("name", CHECKERS)
def test_threads_sharing_a_checker_raise_at_most(impl, name):
    cls = getattr(load("sequence", impl), name)
    checker = cls()
    for log in from_threads(lambda: checker_calls(impl, checker)):
        assert_only_allowed(log)
    assert checker.violation is None or type(checker.violation.rule) is Rule


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("name", CHECKERS)
def test_a_checker_is_not_pickled_or_copied(impl, name):
    checker = getattr(load("sequence", impl), name)()
    message = f"{name} cannot be pickled or copied: make a new checker and feed it the frames"
    for attempt in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError) as caught:
            attempt(checker)
        assert str(caught.value) == message


class Key(str):
    """A name whose comparison empties the dict it is a key of: the dict's borrowed key dies mid-lookup."""

    victim: dict = {}

    def __hash__(self):
        return str.__hash__(self)

    def __eq__(self, other):
        Key.victim.clear()
        return str.__eq__(self, other)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_an_inactive_whose_keys_empty_its_dict_is_read_safely(impl):
    # Duck-typed frames: the checker reads tag and values. The compiled name check held
    # borrowed keys across a lookup that runs a key's __eq__.
    checker = load("sequence", impl).ToolsBeginChecker()
    tb = load("tools_begin", impl)
    checker.frame(tb.Begun({"k": "rotating"}))
    checker.frame(tb.ACTIVE)

    class Inactive:
        tag = 3

        def __init__(self):
            self.values = {Key("k"): 1}
            Key.victim = self.values

    frame = Inactive()
    try:
        checker.frame(frame)
    except ALLOWED:
        pass
    assert checker.frames >= 2


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_inactive_names_changed_by_a_gc_callback_mid_check_are_checked_safely(impl):
    """The compiled checker copies an Inactive's key objects into a tuple it allocates, then keeps
    them: a GC callback at any allocation (that tuple's where it is not a free list's, the
    checker's, the Begun's) empties the frames' own dicts, grows them, or puts a name in them
    whose comparison empties them. The check raises at most what a hostile frame may cause (a
    rule broken, or Python's own RuntimeError where a name's __eq__ empties the dict the words
    of a refusal are counted from), and never crashes."""
    require_gc_hooks()
    seq, tb = load("sequence", impl), load("tools_begin", impl)
    frames = [tb.Inactive({"".join(["al", "pha"]): i, "".join(["be", "ta"]): i}) for i in range(60)]
    turn = []

    def meddle(phase, info):
        if phase != "start":
            return
        turn.append(None)
        for frame in frames:
            for held in gc.get_referents(frame):
                if type(held) is dict and held:
                    choice = len(turn) % 3
                    if choice == 0:
                        held.clear()
                    elif choice == 1:
                        held["gamma"] = 0
                    else:
                        Key.victim = held
                        held[Key("alpha")] = 0

    outcomes = []
    thresholds = gc.get_threshold()
    gc.callbacks.append(meddle)
    gc.set_threshold(1, 1, 1)
    try:
        for frame in frames:
            checker = seq.ToolsBeginChecker(tb)
            checker.frame(tb.Begun({"alpha": "rotating", "beta": "rotating"}))
            checker.frame(tb.ACTIVE)
            try:
                checker.frame(frame)
            except ALLOWED as error:
                outcomes.append(type(error).__name__ if type(error) is not RuntimeError else str(error))
            else:
                outcomes.append(None)
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(meddle)
    assert turn and len(outcomes) == len(frames)
    assert set(outcomes) <= {None, "RemoteProtocolError", "LocalProtocolError", "dictionary changed size during iteration"}


# --- RecordReader ---------------------------------------------------------------------------------


def records(values):
    return [bytes(value) for value in values]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_reader_init_runs_once(impl):
    reader = load("stream", impl).RecordReader(max_record=10)
    reader.feed(b"\x00\x00")
    with pytest.raises(RuntimeError) as caught:
        reader.__init__()
    assert str(caught.value) == READER_INIT_TWICE
    assert (reader.max_record, reader.pending) == (10, 2)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_reader_not_initialised_says_so(impl):
    cls = load("stream", impl).RecordReader
    reader = cls.__new__(cls)
    for call in (lambda: reader.feed(b"\x00\x00\x00\x01a"), reader.close):
        with pytest.raises(RuntimeError) as caught:
            call()
        assert str(caught.value) == READER_NOT_READY
    assert (repr(reader), reader.pending, reader.records, reader.closed) == ("<RecordReader not initialised>", 0, 0, False)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("threshold", range(1, 9))
@pytest.mark.parametrize("nth", range(1, 4))
def test_a_reset_from_a_gc_callback_mid_feed_is_refused(impl, threshold, nth):
    # The known instance: the compiled feed checked its local buffer's length, then read
    # the length prefix from self._buffer, which a reset had replaced by an empty one.
    require_gc_inside_compiled_calls(impl)
    reader = load("stream", impl).RecordReader()
    assert reader.feed(b"\x00\x00") == []
    log, count = [], [0]

    def callback(phase, info):
        if phase == "start":
            count[0] += 1
            if count[0] == nth:  # a reset, and a byte in the new buffer: a read of 4 would overrun it
                fire([reader.__init__, lambda: reader.feed(b"\x00")], log)

    with gc_callback(callback, threshold):
        out = reader.feed(b"\x00\x05abcde\x00\x00\x00\x01z")
    assert records(out) == [b"abcde", b"z"] and reader.records == 2 and reader.pending == 0
    assert [str(error) for error in log] in ([], [READER_INIT_TWICE, BUSY])


def reader_calls(reader):
    """Calls that change nothing when they run between two feeds, and are refused inside one."""
    return [lambda: reader.feed(b""), reader.__init__, lambda: repr(reader), lambda: reader.pending]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("source", SOURCES, ids=lambda source: source.__name__)
def test_calls_fired_at_a_reader_mid_feed_leave_the_stream_whole(impl, source):
    stream = load("stream", impl)
    payloads = [bytes([n]) * n for n in range(40)]
    data = b"".join(stream.record(p) for p in payloads)
    for cut in (1, 7, len(data)):
        reader = stream.RecordReader()
        log = []
        with source(lambda: fire(reader_calls(reader), log)):
            got = []
            for start in range(0, len(data), cut):
                chunk = data[start:start + cut]
                got += records(reader.feed(chunk if cut % 2 else bytearray(chunk)))
            reader.close()
        assert got == payloads and reader.records == len(payloads)
        assert_only_allowed(log)
        # Every call refused was refused in the same words on both cores.
        assert {str(error) for error in log} <= {BUSY, READER_INIT_TWICE, "feed after close: the stream has ended"}


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("source", [from_gc, from_finalizers], ids=lambda source: source.__name__)
def test_a_feed_or_close_inside_a_feed_is_refused(impl, source):
    # Chunks of whole records: a feed between two feeds, of a whole record, changes nothing there.
    # A third of them 2 KiB long: views, which the GC tracks, so collections run inside the compiled
    # feed (a shorter record is a bytes copy, and the GC never runs for those).
    require_gc_inside_compiled_calls(impl)
    stream = load("stream", impl)
    payloads = [bytes([n % 256]) * (n % 7 if n % 3 else 2048) for n in range(300)]
    chunk = b"".join(stream.record(p) for p in payloads)
    reader = stream.RecordReader()
    log, armed = [], [False]

    def call():
        if armed[0]:
            fire([lambda: reader.feed(b"\x00\x00\x00\x01x"), reader.close], log)
            armed[0] = False  # once a feed: a close that lands between two feeds ends the stream

    with source(call):
        for _ in range(20):
            armed[0] = True
            try:
                out = reader.feed(chunk)
            except ValueError as error:  # the pure feed sets its guard a few bytecodes in
                assert impl == "py" and str(error) == "feed after close: the stream has ended"
                break
            assert records(out) == payloads
    assert_only_allowed(log)
    assert BUSY in {str(error) for error in log}
    assert {str(error) for error in log} <= {BUSY, "feed after close: the stream has ended"}


@REFUSED_RESIZE
@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_reader_buffer_changed_from_a_gc_callback_is_read_safely(impl):
    # The buffer is reachable (gc.get_referents): code that grows or shrinks it mid-feed must
    # meet checked reads, never a stale length.
    stream = load("stream", impl)
    payloads = [bytes(n) for n in range(30)]
    data = b"".join(stream.record(payload) for payload in payloads)
    plain = stream.RecordReader(max_record=1000)
    assert [record for start in range(0, len(data), 5) for record in records(plain.feed(data[start:start + 5]))] == payloads
    for change in (lambda b: b.extend(b"\xff" * 9), lambda b: b.clear(), lambda b: b.__delitem__(slice(0, 2))):
        reader = stream.RecordReader(max_record=1000)
        buffers = [b for b in gc.get_referents(reader) if type(b) is bytearray]
        buffers += [v for d in gc.get_referents(reader) if type(d) is dict for v in d.values() if type(v) is bytearray]
        if impl == "c":  # its buffer is not a referent the GC reports: nothing can reach it
            assert buffers == []
            return
        assert buffers
        changes = []

        def changing(phase, info):
            if phase == "start":
                changes.append([change(b) for b in buffers])

        read = []  # each feed's records, where no change came before it or during it
        with gc_callback(changing, 3):
            for start in range(0, len(data), 5):
                try:
                    out = records(reader.feed(data[start:start + 5]))
                except (StreamError, RuntimeError):
                    continue
                if not changes:
                    read += out
        assert changes and read == payloads[:len(read)]  # the buffer was changed; until then, the stream was read


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_threads_sharing_a_reader_raise_at_most(impl):
    reader = load("stream", impl).RecordReader()
    for log in from_threads(lambda: reader_calls(reader)[:3]):
        assert_only_allowed(log)
    assert reader.pending >= 0


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_reader_fields_are_read_only(impl):
    reader = load("stream", impl).RecordReader(max_record=5)
    for name, value in (("max_record", 10**12), ("records", "many"), ("closed", "yes")):
        with pytest.raises(AttributeError):
            setattr(reader, name, value)
    assert (reader.max_record, reader.records, reader.closed) == (5, 0, False)
    reader.close()
    assert reader.closed is True


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_reader_is_not_pickled_or_copied(impl):
    reader = load("stream", impl).RecordReader()
    for attempt in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError) as caught:
            attempt(reader)
        assert str(caught.value) == "RecordReader cannot be pickled or copied: make a new reader"


CHUNK_KINDS = {
    "bytes": bytes,
    "bytearray": bytearray,
    "memoryview": lambda data: memoryview(bytearray(data)),
    "array": lambda data: array("B", data),
}


@given(
    payloads=st.lists(st.binary(max_size=12), max_size=6),
    cuts=st.lists(st.integers(0, 100), max_size=5),
    kinds=st.lists(st.sampled_from(sorted(CHUNK_KINDS)), min_size=1, max_size=6),
)
def test_records_have_one_documented_type_on_both_cores(payloads, cuts, kinds):
    # bytes, except a record whole inside a fed bytes chunk: a read-only view into it.
    data = b"".join(load("stream", "py").record(p) for p in payloads)
    edges = sorted({0, len(data), *[c % (len(data) + 1) for c in cuts]})
    outcomes = []
    for impl in IMPLEMENTATIONS:
        reader = load("stream", impl).RecordReader()
        got = []
        for index, (start, end) in enumerate(zip(edges, edges[1:])):
            kind = kinds[index % len(kinds)]
            chunk = CHUNK_KINDS[kind](data[start:end])
            for value in reader.feed(chunk):
                if type(value) is memoryview:
                    assert kind == "bytes" and value.obj is chunk and value.readonly
                else:
                    assert type(value) is bytes
                got.append((type(value).__name__, bytes(value)))
            if kind != "bytes" and type(chunk) is not array:
                chunk[:] = b"\xee" * len(chunk)  # the caller reuses its buffer: records stay as read
        assert [value for _, value in got] == payloads
        outcomes.append(got)
    assert outcomes[0] == outcomes[1]


# --- decode paths ---------------------------------------------------------------------------------

DECODES = [
    ("tools_begin", b"\x03" + b'{"s":' + b'{"t":[' + b",".join(b'{"a":%d}' % n for n in range(300)) + b"]}}"),
    ("mcp_notifications", b'\x00{"method":"m","params":{"items":[' + b",".join(b"[%d]" % n for n in range(300)) + b"]}}"),
    ("mcp_notifications", b'\x00{"method":"m","params":{"x":"\\ud800"}}' + b" " * 20000),  # refused: lone surrogate
    ("tools_begin", b'\x00{"secrets":{"k":"fixed"}}' + b" " * 20000),
]


def outcome(codec, payload):
    try:
        return codec.decode(payload)
    except DecodeError as error:
        return type(error).__name__, str(error)


@REFUSED_RESIZE
@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("channel, payload", DECODES)
def test_a_bytearray_resized_from_a_gc_callback_mid_decode(impl, channel, payload):
    # A decode reads a bytearray's bytes while the parser allocates; code the GC runs then may
    # resize the bytearray and free the memory under a pointer into it.
    codec = load(channel, impl)
    expected = outcome(codec, bytes(payload))
    for nth in (1, 2, 5, 20):
        buffer = bytearray(payload)
        count = [0]

        def callback(phase, info):
            count[0] += 1
            if count[0] == nth:
                buffer[:] = b"\x02" + b"\x00" * 3  # shrinks it: its old memory is freed
                buffer.extend(b"\xff" * 70000)  # and grows it elsewhere

        with gc_callback(callback):
            got = outcome(codec, buffer)
        # The pure core copies the bytearray in Python: a callback that runs before the copy
        # changes what is decoded, never how safely.
        assert got == expected or (impl == "py" and got == outcome(codec, b"\x02\x00\x00\x00"))


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("channel, payload", DECODES)
def test_no_view_of_a_payload_that_does_not_hold_it_can_be_found_mid_decode(impl, channel, payload):
    # A view without an owner that some code finds (gc.get_objects) while it points at a
    # payload can be kept, or re-viewed, past the payload's life.
    codec = load(channel, impl)
    found, scans = [], [0]

    def callback(phase, info):
        scans[0] += 1
        if phase == "start" and scans[0] % 7 == 0 and scans[0] < 200:  # gc.get_objects is slow: a few looks
            found.extend(size for view in gc.get_objects() if type(view) is memoryview and (size := unowned(view)))

    def unowned(view):
        try:
            return view.nbytes if view.obj is None else 0
        except ValueError:  # released: it points at nothing (its nbytes raised, which ended the scan)
            return 0

    with gc_callback(callback, 2):
        for _ in range(3):
            outcome(codec, payload)
            outcome(codec, bytearray(payload))
    assert found == []


@pytest.mark.parametrize("channel, payload", DECODES)
def test_a_decode_inside_a_decode_gives_the_same_frames_on_both_cores(channel, payload):
    require_gc_inside_compiled_calls("c")
    results = []
    for impl in IMPLEMENTATIONS:
        codec = load(channel, impl)
        inner = []
        log = []

        def call():
            inner.append(outcome(codec, bytearray(payload)))

        with from_finalizers(lambda: fire([call], log)):
            outer = [outcome(codec, bytearray(payload)) for _ in range(10)]
        assert_only_allowed(log)
        assert inner and all(result == outer[0] for result in inner + outer)
        results.append(repr(outer[0]))
    assert results[0] == results[1]


@pytest.mark.parametrize("module, name", [("sequence", name) for name in CHECKERS] + [("stream", "RecordReader")])
def test_no_state_can_be_written_into_a_compiled_object(module, name):
    # Cython's automatic pickling gave these __setstate_cython__, which stores any row, table
    # or buffer it is handed: a checker's row set past its table read out of bounds.
    cls = getattr(load(module, "c"), name)
    assert not hasattr(cls, "__setstate_cython__") and not hasattr(cls, "__reduce_cython__")
    obj = cls()
    with pytest.raises(TypeError):
        obj.__reduce_ex__(2)

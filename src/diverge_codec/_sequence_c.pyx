# cython: language_level=3, binding=False
"""The sequence checkers, compiled: the twin of ``_sequence_py.py``.

A checker's table (``_rules.py``) becomes a C array of row x tag -> code: a code of 0
or more is the next row, below 0 the rule the frame breaks. A step reads the frame's
tag, one array entry and, for Inactive, the names; everything else is the slow path,
which raises exactly what the pure twin raises.

Memory safety under re-entrancy: the table is built in a local array and committed
with no Python code between the first and the last store, and ``__init__`` runs once
(a second call raises), so a frame fed from a GC callback, a profile hook, a
finalizer or another thread meets either a whole table or a checker that says it is
not ready. Tuple indexing keeps its bounds checks.
"""

cimport cython
from cpython.dict cimport PyDict_Next
from cpython.long cimport PyLong_AsLongAndOverflow, PyLong_Check
from cpython.object cimport PyObject
from cpython.set cimport PySet_Contains
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE, PyTuple_New


cdef extern from "Python.h":
    Py_ssize_t PyDict_GET_SIZE(object)
    void _tuple_set "PyTuple_SET_ITEM"(object, Py_ssize_t, PyObject*)  # steals the reference

from diverge_codec._tools_begin_c cimport Begun as _Begun, Inactive as _Inactive

from diverge_codec._model import ACTIVE, McpNotificationsTag, Mode, ToolsBeginTag
from diverge_codec._rules import (
    MCP_NOTIFICATIONS_FINISH, MCP_NOTIFICATIONS_RULES, MCP_NOTIFICATIONS_RULES_LATE_ERROR, TOOLS_BEGIN_FINISH,
    TOOLS_BEGIN_RULES, Rule, State, rotating_mismatch,
)
from diverge_codec.errors import LocalProtocolError, RemoteProtocolError

__all__ = ["McpNotificationsChecker", "ToolsBeginChecker"]

cdef enum:
    MAX_ROWS = 8
    MAX_TAGS = 4
    SLOW = -1000  # no entry: a broken checker, or no frame of this channel

cdef enum:
    BEGUN = 0
    ACTIVE_TAG = 2
    INACTIVE = 3
    NOTIFICATION = 0

cdef tuple _RULES = tuple(Rule)
cdef object _ROTATING = Mode.ROTATING
cdef object _ACTIVE = ACTIVE
cdef object _ENDED_WITH_ERROR = State.ENDED_WITH_ERROR
cdef object _UNREADABLE = State.UNREADABLE


cdef inline bint _same_names(object values, frozenset rotating) except -1:
    """Whether an Inactive's values are keyed by exactly the rotating names (equal sizes, none outside)."""
    cdef Py_ssize_t position = 0
    cdef PyObject* key
    cdef PyObject* value
    cdef object held
    if len(values) != len(rotating):
        return False
    if type(values) is not dict:
        return rotating.issuperset(values)
    while PyDict_Next(values, &position, &key, &value):
        held = <object>key  # owned: the lookup may run a key's __eq__, which may empty the dict
        if not PySet_Contains(rotating, held):
            return False
    return True


cdef inline bint _same_key_objects(dict values, tuple names):
    """Whether values' keys are, in order, the very objects in names: pointer compares, no Python code."""
    cdef Py_ssize_t position = 0
    cdef Py_ssize_t index = 0
    cdef Py_ssize_t count = PyTuple_GET_SIZE(names)
    cdef PyObject* key
    cdef PyObject* value
    if PyDict_GET_SIZE(values) != count:
        return False
    while PyDict_Next(values, &position, &key, &value):
        if index >= count or key != PyTuple_GET_ITEM(names, index):
            return False
        index += 1
    return True


cdef str _NOT_READY = "{} is not initialised: its __init__ did not run to the end"
cdef str _INIT_TWICE = "{}.__init__ runs once: make a new checker instead of re-initialising one"
cdef str _NO_PICKLE = "{} cannot be pickled or copied: make a new checker and feed it the frames"


cdef class _Checker:
    """The part both channels share: a compiled table, a row, a state, a count, and the finish."""

    cdef int _table[MAX_ROWS * MAX_TAGS]
    cdef int _ntags
    cdef int _row
    cdef int _after_finish_row
    cdef int _broken_row
    cdef tuple _row_states
    cdef dict _tag_of  # tag (any equal key) -> tag index, as the pure twin's dict rows look it up
    cdef dict _finish
    cdef dict _variants
    cdef str _channel
    cdef readonly object codec
    """The codec module ``payload`` decodes with."""
    cdef readonly object state
    cdef readonly bint finished
    cdef readonly Py_ssize_t frames
    """How many frames have been read, which is also the index of the next."""
    cdef readonly object violation
    cdef bint _claimed  # __init__ has begun: it never runs again
    cdef bint _ready  # __init__ has run to the end: the table and every field are whole

    cdef int _claim(self) except -1:
        """Refuse a second __init__; called first, before any Python code can run."""
        if self._claimed:
            raise RuntimeError(_INIT_TWICE.format(type(self).__name__))
        self._claimed = True
        return 0

    cdef int _not_ready(self) except -1:
        raise RuntimeError(_NOT_READY.format(type(self).__name__))

    cdef int _setup(self, rules, finish, codec, str channel, dict variants) except -1:
        """Build the table in a local array, then commit it and every field with no Python code between."""
        cdef int table[MAX_ROWS * MAX_TAGS]
        cdef list states = list(rules)
        if _ENDED_WITH_ERROR not in states:
            states.append(_ENDED_WITH_ERROR)
        cdef int ntags = len(variants), rows = len(states) + 2, row, tag, code
        if rows > MAX_ROWS or ntags > MAX_TAGS:
            raise ValueError("sequence table too large for the compiled checker")
        cdef int after_finish_row = rows - 2, broken_row = rows - 1
        cdef dict tag_of = {tag: tag for tag in range(ntags)}
        cdef Py_ssize_t nrules = len(_RULES)
        for row in range(MAX_ROWS * MAX_TAGS):
            table[row] = SLOW
        for row, state in enumerate(states):
            for tag in range(ntags):
                outcome = rules.get(state, {}).get(tag, Rule.NOTHING_AFTER_ERROR)
                code = states.index(outcome) if isinstance(outcome, State) else -1 - _RULES.index(outcome)
                if not -nrules <= code < len(states):
                    raise ValueError("sequence table names a row or rule that does not exist")
                table[row * MAX_TAGS + tag] = code
        for tag in range(ntags):
            table[after_finish_row * MAX_TAGS + tag] = -1 - _RULES.index(Rule.NOTHING_AFTER_FINISH)
        cdef tuple row_states = tuple(states)
        first = states[0]
        # The commit: C stores, and stores of objects over None (this runs once), so nothing runs between.
        self._table = table
        self._ntags, self._channel, self._variants, self.codec, self._finish = ntags, channel, variants, codec, finish
        self._tag_of, self._row_states = tag_of, row_states
        self._after_finish_row, self._broken_row = after_finish_row, broken_row
        self._row = 0
        self.state = first
        self.finished = False
        self.frames = 0
        self.violation = None
        return 0

    def __reduce__(self):
        raise TypeError(_NO_PICKLE.format(type(self).__name__))

    def __repr__(self):
        if not self._ready:
            return f"<{type(self).__name__} not initialised>"
        return f"<{type(self).__name__} state={self.state.name} frames={self.frames} finished={self.finished}>"

    cdef int _usable(self) except -1:
        if not self._ready:
            self._not_ready()
        if self.violation is not None:
            raise LocalProtocolError(f"{self._channel} checker already reported a violation: {self.violation}")
        return 0

    cdef object _break(self, rule, index, str variant, str detail=""):
        self.violation = RemoteProtocolError(self._channel, rule, index, variant, detail)
        self._row = self._broken_row
        return self.violation

    cdef inline int _code(self, object tag, int* index) except? -2000:
        """The table's code for this frame's tag, and the tag's index; raises for no frame of this channel."""
        cdef long value
        cdef int overflow = 0
        if PyLong_Check(tag):
            value = PyLong_AsLongAndOverflow(tag, &overflow)
            if not overflow and 0 <= value < self._ntags:
                index[0] = <int>value
                return self._table[self._row * MAX_TAGS + value]
        found = self._tag_of.get(tag)  # a float 1.0 finds tag 1, as in the pure twin's dict rows
        if found is not None:
            index[0] = <int>found
            return self._table[self._row * MAX_TAGS + <int>found]
        self._usable()
        raise TypeError(f"not a {self._channel} response frame (tag {tag!r})")

    cdef int _advance(self, int code, int tag) except -1:
        """Move to the row ``code`` names, or raise the rule it names, counting the frame either way."""
        cdef Py_ssize_t index = self.frames
        if code == SLOW:  # only a broken checker's row has no entry, and _usable raises for it
            self._usable()
            raise RuntimeError(f"{self._channel} checker has no entry for this frame")
        self.frames = index + 1
        if code < 0:
            raise self._break(_RULES[-1 - code], index, self._variants[tag])  # bounds-checked
        self._row = code
        with cython.boundscheck(False), cython.wraparound(False):
            # proven: _setup stored only codes below len(states), the length of _row_states, in
            # the same commit, and nothing changes either after it
            self.state = self._row_states[code]
        return 0

    cdef int _allowed(self, object frame, int* tag) except? -2000:
        """The table's code for a frame the rules allow here; raises for one they do not."""
        if not self._ready:
            self._not_ready()
        cdef int code = self._code(frame.tag, tag)
        if code < 0:
            self._advance(code, tag[0])  # raises: the frame breaks a rule
        return code

    def payload(self, payload):
        """Decode one payload with the channel's codec, check it, and return the frame."""
        if not self._ready:
            self._not_ready()
        frame = self.codec.decode(payload)
        self.frame(frame)
        return frame

    def frame(self, frame):  # pragma: no cover - each channel defines it
        raise NotImplementedError

    def finish(self):
        """The channel finished. Returns the final state; raises if the finish broke a rule."""
        self._usable()
        if self.finished:
            raise self._break(Rule.NOTHING_AFTER_FINISH, None, "finish")
        outcome = self._finish[self.state]
        if isinstance(outcome, Rule):
            raise self._break(outcome, None, "finish")
        self.state, self.finished, self._row = outcome, True, self._after_finish_row
        return outcome

    @property
    def unreadable(self):
        """The finish came with nothing before it: the server could not read the request."""
        return self.state is _UNREADABLE


@cython.final
cdef class ToolsBeginChecker(_Checker):
    """ToolsBeginChecker(codec=None)
--

Checks a tools-begin response sequence: Begun, then periods of Active and Inactive; or an Error.

    ``declaration`` is what Begun declared (None before it), ``periods`` the number
    of periods closed by an Inactive.
    """

    cdef readonly object declaration
    cdef readonly frozenset rotating
    cdef readonly Py_ssize_t periods
    cdef tuple _rotating_keys  # the key objects of the last Inactive found to match rotating; None after a Begun
    channel = "tools-begin"

    def __init__(self, codec=None):
        self._claim()
        variants = {ToolsBeginTag.BEGUN: "Begun", ToolsBeginTag.ERROR: "Error",
                    ToolsBeginTag.ACTIVE: "Active", ToolsBeginTag.INACTIVE: "Inactive"}
        if codec is None:  # imported here: the package imports this module while it picks a core
            from diverge_codec import tools_begin as codec
        cdef frozenset rotating = frozenset()
        self._setup(TOOLS_BEGIN_RULES, TOOLS_BEGIN_FINISH, codec, "tools-begin", variants)
        self.declaration = None
        self.rotating = rotating
        self.periods = 0
        self._ready = True

    def frame(self, frame):
        """Check one frame; raises RemoteProtocolError at once if it breaks a rule."""
        cdef int tag
        cdef int code
        cdef object kind = type(frame)
        cdef dict held
        if self._ready:  # the compiled core's frames, where the rules allow them: their fields, no call
            if frame is _ACTIVE:
                code = self._table[self._row * MAX_TAGS + ACTIVE_TAG]
                if code >= 0:
                    self._advance(code, ACTIVE_TAG)
                    return
            elif kind is _Inactive:
                held = (<_Inactive>frame)._values
                code = self._table[self._row * MAX_TAGS + INACTIVE]
                if held is not None and code >= 0 and (
                        (self._rotating_keys is not None and _same_key_objects(held, self._rotating_keys))
                        or self._learn_rotating_keys(held)):
                    self.periods += 1
                    self._advance(code, INACTIVE)
                    return
            elif kind is _Begun:
                held = (<_Begun>frame)._secrets
                code = self._table[self._row * MAX_TAGS + BEGUN]
                if held is not None and code >= 0:
                    self.declaration = held.copy()
                    self.rotating = frozenset([name for name, mode in held.items() if mode is _ROTATING])
                    self._rotating_keys = None
                    self._advance(code, BEGUN)
                    return
        code = self._allowed(frame, &tag)  # any other frame, and every refusal: the general path
        if tag == INACTIVE:
            values, rotating = frame.values, self.rotating
            if not _same_names(values, rotating):
                index = self.frames
                self.frames += 1
                raise self._break(Rule.INACTIVE_CARRIES_ROTATING, index, "Inactive", rotating_mismatch(rotating, values))
            self.periods += 1
        elif tag == BEGUN:
            secrets = frame.secrets
            self.declaration = dict(secrets)
            self.rotating = frozenset([name for name, mode in secrets.items() if mode is _ROTATING])
            self._rotating_keys = None
        self._advance(code, tag)

    cdef bint _learn_rotating_keys(self, dict values) except -1:
        """Whether values is keyed by exactly the rotating names; if so, its key objects are kept, so
        that the next Inactive keyed by the same objects (a decoder's key cache hands them out
        again) is told by pointer compares. The keys are copied into a tuple made first (its
        allocation may run a GC callback that changes values: then the count differs and the
        frame is checked the general way) and filled with no Python code running; the checks
        then read the tuple, which nothing else holds."""
        cdef Py_ssize_t count = PyDict_GET_SIZE(values)
        cdef tuple names = PyTuple_New(count)
        cdef Py_ssize_t position = 0
        cdef Py_ssize_t index = 0
        cdef PyObject* key
        cdef PyObject* value
        while PyDict_Next(values, &position, &key, &value):
            if index >= count:
                return False
            Py_INCREF(<object>key)
            _tuple_set(names, index, key)
            index += 1
        cdef frozenset rotating = self.rotating
        if index != count or count != len(rotating):
            return False
        for name in names:  # distinct (a dict's keys): equal sizes and all inside means equal sets
            if not PySet_Contains(rotating, name):
                return False
        if rotating is not self.rotating:  # a Begun fed from the lookups' __eq__ changed them
            return False
        self._rotating_keys = names
        return True


@cython.final
cdef class McpNotificationsChecker(_Checker):
    """McpNotificationsChecker(codec=None, *, allow_error_after_notifications=False)
--

Checks an mcp-notifications sequence: notifications in order, or one Error first, then the finish.

    The page puts the Error before any notification; the Rust doc comment speaks of
    an Error ending a stream that stopped. ``allow_error_after_notifications=True``
    accepts that too, as the last frame.
    """

    cdef readonly Py_ssize_t notifications
    channel = "mcp-notifications"

    def __init__(self, codec=None, *, allow_error_after_notifications=False):
        self._claim()
        rules = MCP_NOTIFICATIONS_RULES_LATE_ERROR if allow_error_after_notifications else MCP_NOTIFICATIONS_RULES
        variants = {McpNotificationsTag.NOTIFICATION: "Notification", McpNotificationsTag.ERROR: "Error"}
        if codec is None:
            from diverge_codec import mcp_notifications as codec
        self._setup(rules, MCP_NOTIFICATIONS_FINISH, codec, "mcp-notifications", variants)
        self.notifications = 0
        self._ready = True

    def frame(self, frame):
        """Check one frame; raises RemoteProtocolError at once if it breaks a rule."""
        cdef int tag
        cdef int code = self._allowed(frame, &tag)
        self._advance(code, tag)
        if tag == NOTIFICATION:
            self.notifications += 1

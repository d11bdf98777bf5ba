# Included at the end of _mcp_notifications_c.pyx: decode of a short notification (_SCANNED_UP_TO),
# in one pass that validates the body as orjson reads it and builds its mapping as orjson would
# build it. Each token is checked by the scanner's own readers (_jsonscan.h: dc_string,
# dc_number_quick, dc_literal) and made at once; the grammar between them (braces, brackets,
# commas, colons, spaces) is checked here. Anything this pass does not settle (not valid, not an
# object, an escaped key, an integer of more than 18 digits, nesting past _BUILT_DEPTH, a shape
# the channel refuses) goes to orjson whole, which words every refusal as before (issue 44: the
# scan then a second pass to build cost 1.2x msgspec's typed decode).
# The data the pass reads is a bytes object's (the caller holds it), so the allocations between
# its reads, which may run a collection and finalizers, cannot move or change it.

cdef extern from "_jsonscan.h":
    ctypedef struct dc_window:
        pass
    size_t dc_string(const unsigned char* s, size_t pos, size_t end, int* escaped, dc_window* window) nogil
    size_t dc_number_quick(const unsigned char* s, size_t pos) nogil
    size_t dc_literal(const unsigned char* s, size_t pos, const char* word, size_t len) nogil
    bint dc_name_is(const unsigned char* text, size_t len, const char* name, size_t name_len) nogil
    size_t dc_unescape(const unsigned char* s, size_t pos, unsigned char* out, size_t* close) nogil


cdef extern from *:
    """
    /* Whether n bytes hold no byte of 0x80 or above: eight at a time. */
    static inline int dc_build_ascii(const unsigned char *s, size_t n) {
        uint64_t word, seen = 0;
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            memcpy(&word, s + i, 8);
            seen |= word;
        }
        for (; i < n; i++) seen |= s[i];
        return !(seen & 0x8080808080808080ULL);
    }
    /* Whether text is name, both len bytes (8 to 16): two loads of 8 from each end. */
    static DC_ALWAYS_INLINE int dc_build_name_is(const unsigned char *text, const char *name, size_t len) {
        uint64_t a, b, c, d;
        memcpy(&a, text, 8), memcpy(&b, name, 8), memcpy(&c, text + len - 8, 8), memcpy(&d, name + len - 8, 8);
        return a == b && c == d;
    }
    /* Which of the names MCP gives its members a key's text (len bytes, no escape) is: its index in
     * _NAMES, 0 for none. Inlined where a key is read, by length first. */
    static DC_ALWAYS_INLINE int dc_build_name(const unsigned char *text, size_t len) {
        switch (len) {
        case 4: return dc_name_is(text, 4, "data", 4) ? 1 : 0;
        case 5: return dc_name_is(text, 5, "total", 5) ? 2 : dc_name_is(text, 5, "level", 5) ? 3
                     : dc_name_is(text, 5, "_meta", 5) ? 4 : 0;
        case 6: return dc_name_is(text, 6, "method", 6) ? 5 : dc_name_is(text, 6, "params", 6) ? 6
                     : dc_name_is(text, 6, "logger", 6) ? 7 : 0;
        case 7: return dc_name_is(text, 7, "message", 7) ? 8 : dc_name_is(text, 7, "jsonrpc", 7) ? 9 : 0;
        case 8: return dc_name_is(text, 8, "progress", 8) ? 10 : 0;
        case 13: return dc_build_name_is(text, "progressToken", 13) ? 11 : 0;
        default: return 0;
        }
    }
    """
    bint dc_build_ascii(const unsigned char* s, size_t n) nogil
    int dc_build_name(const unsigned char* text, size_t len) nogil


cdef extern from "Python.h":
    str PyUnicode_InternFromString(const char* text)
    str PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    double PyOS_string_to_double(const char* text, char** end, PyObject* overflow_exception) except? -1.0


# The names MCP gives its members, one str each, made once (the envelope's as the parser hands them
# out: _METHOD, _PARAMS, _META): a key that is one of them costs two compares, no str.
cdef str _JSONRPC_KEY = _loads(b'{"jsonrpc":0}').popitem()[0]
cdef str _PROGRESS_TOKEN = PyUnicode_InternFromString("progressToken")
cdef str _PROGRESS = PyUnicode_InternFromString("progress")
cdef str _TOTAL = PyUnicode_InternFromString("total")
cdef str _MESSAGE = PyUnicode_InternFromString("message")
cdef str _LEVEL = PyUnicode_InternFromString("level")
cdef str _LOGGER = PyUnicode_InternFromString("logger")
cdef str _DATA = PyUnicode_InternFromString("data")
cdef str _VERSION = PyUnicode_InternFromString("2.0")  # the value of "jsonrpc", in every SDK's envelope
# By dc_build_name's index; the module's names above hold them.
cdef PyObject* _NAMES[12]
for _index, _name in enumerate((None, _DATA, _TOTAL, _LEVEL, _META, _METHOD, _PARAMS, _LOGGER, _MESSAGE, _JSONRPC_KEY,
                                _PROGRESS, _PROGRESS_TOKEN)):
    _NAMES[_index] = <PyObject*>_name
del _index, _name


# What the pass leaves to the parser, in place of a value.
cdef object _UNBUILT = object()
DEF _BUILT_DEPTH = 32


cdef inline size_t _skip_space(const char* s, size_t pos) noexcept:
    if <unsigned char>s[pos] > 32:  # most JSON is written with no space: one compare
        return pos
    while s[pos] == b" " or s[pos] == b"\n" or s[pos] == b"\r" or s[pos] == b"\t":
        pos += 1
    return pos


cdef inline str _text(const char* text, Py_ssize_t size):
    """The str of a string's UTF-8 with no escape (strict, as dc_string checked): ASCII copied straight in."""
    cdef str made
    if not dc_build_ascii(<const unsigned char*>text, <size_t>size):
        return PyUnicode_DecodeUTF8(text, size, NULL)
    made = PyUnicode_New(size, 127)
    memcpy(PyUnicode_DATA(made), text, size)
    return made


cdef object _unescaped(const char* s, size_t pos, size_t end):
    """The str of a string with an escape whose text starts at s[pos] (dc_string checked it); _UNBUILT
    where more than 256 bytes are left (decode builds bodies of at most 255)."""
    cdef unsigned char text[256]
    cdef size_t close
    if end - pos > sizeof(text):
        return _UNBUILT
    return PyUnicode_DecodeUTF8(<char*>text, <Py_ssize_t>dc_unescape(<const unsigned char*>s, pos, text, &close), NULL)


# The powers of ten a double holds exactly: a number of at most 15 significant digits times or over
# one of them is one correctly rounded operation, the value orjson reads (Clinger's fast path).
cdef double[23] _POWERS = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                           1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]


cdef object _number(const char* s, size_t* at):
    """The number at s[at[0]], as orjson reads it: an int where it has no fraction or exponent
    (of at most 18 digits here), else the correctly rounded double."""
    cdef size_t pos = at[0], start = at[0]
    cdef long long value = 0, exponent = 0, scale = 0
    cdef int exponent_digits = 0
    cdef bint negative = s[pos] == b"-", exact = True, negative_exponent
    cdef double result
    cdef char text[40]
    pos += negative
    while s[pos] >= b"0" and s[pos] <= b"9":
        if value < 100000000000000000LL:  # 10**17: the next digit fits
            value = value * 10 + (s[pos] - 48)
        else:
            exact = False
        pos += 1
    if s[pos] != b"." and s[pos] != b"e" and s[pos] != b"E":
        if pos - start - negative > 18:
            return _UNBUILT
        at[0] = pos
        return PyLong_FromLongLong(-value if negative else value)
    if s[pos] == b".":
        pos += 1
        while s[pos] >= b"0" and s[pos] <= b"9":
            if value < 100000000000000000LL:
                value = value * 10 + (s[pos] - 48)
                scale -= 1
            else:
                exact = False
            pos += 1
    if s[pos] == b"e" or s[pos] == b"E":
        pos += 1
        negative_exponent = s[pos] == b"-"
        pos += s[pos] == b"-" or s[pos] == b"+"
        while s[pos] >= b"0" and s[pos] <= b"9":
            exponent = exponent * 10 + (s[pos] - 48) if exponent_digits < 5 else exponent
            exponent_digits += 1
            pos += 1
        scale += -exponent if negative_exponent else exponent
    if exact and exponent_digits <= 5 and value <= 9007199254740992LL and -22 <= scale <= 22:  # 2**53
        result = <double>value * _POWERS[scale] if scale >= 0 else <double>value / _POWERS[-scale]
        at[0] = pos
        return PyFloat_FromDouble(-result if negative else result)
    if pos - start >= sizeof(text):
        return _UNBUILT
    memcpy(text, s + start, pos - start)
    text[pos - start] = 0
    at[0] = pos
    return PyFloat_FromDouble(PyOS_string_to_double(text, NULL, NULL))


# The keys last made, by length and first byte: a stream's notifications repeat their keys, and the
# same str again costs a compare where a new one costs a decode, an allocation and a hash. Not on a
# free-threaded build (as _METHODS).
cdef list _KEYS = [""] * 256


cdef str _key_of(const char* text, Py_ssize_t size):
    cdef Py_ssize_t slot = ((<unsigned char>text[0] if size else 0) + size * 31) & 255
    cdef str last = <str>_KEYS[slot]
    if GIL_BUILD and PyUnicode_GET_LENGTH(last) == size and PyUnicode_IS_ASCII(last) \
            and memcmp(PyUnicode_DATA(last), text, size) == 0:
        return last
    cdef str key = PyUnicode_DecodeUTF8(text, size, NULL)
    if GIL_BUILD and PyUnicode_IS_ASCII(key):
        hash(key)
        _KEYS[slot] = key
    return key


cdef inline object _integer_or_number(const char* s, size_t* at):
    """The number at s[at[0]]: an integer of up to 18 digits read and made in one go, else the scan's
    reader checks it and _number makes it; _UNBUILT where it is not valid or is left to the parser."""
    cdef size_t pos = at[0], start, end
    cdef long long value = 0
    cdef bint negative = s[pos] == b"-"
    pos += negative
    start = pos
    if s[pos] == b"0":
        pos += 1
    else:
        while s[pos] >= b"0" and s[pos] <= b"9" and pos - start < 18:
            value = value * 10 + (s[pos] - 48)
            pos += 1
    if pos != start and not (s[pos] >= b"0" and s[pos] <= b"9") and s[pos] != b"." and s[pos] != b"e" and s[pos] != b"E":
        at[0] = pos
        return PyLong_FromLongLong(-value if negative else value)
    end = dc_number_quick(<const unsigned char*>s, at[0])
    if end == 0:
        return _UNBUILT
    value_made = _number(s, at)
    if at[0] != end:  # _number reads on where the number has ended ("01")
        return _UNBUILT
    return value_made


cdef object _value(const char* s, size_t* at, size_t end, int depth, bint* meta, bint repeats):
    """The JSON value at s[at[0]] (no space before it), checked and built, at[0] moved past it; _UNBUILT
    where it is not valid or is left to the parser. Objects are dicts, keys and strings str, as orjson
    builds them; *meta set where an object at this level has a "_meta" member (meta may be NULL).
    repeats: the value of a member whose strings repeat from one notification to the next (a log
    line's level and logger, a progress token), made as a key is (_key_of: the same str again)."""
    cdef size_t pos = at[0], next
    cdef char c = s[pos]
    cdef int escaped = 0, name
    cdef dict members
    cdef list items
    cdef str key
    if c == b'"':
        next = dc_string(<const unsigned char*>s, pos, end, &escaped, NULL)
        if next == 0:
            return _UNBUILT
        at[0] = next
        if escaped:
            return _unescaped(s, pos + 1, end)
        if repeats:
            return _key_of(s + pos + 1, <Py_ssize_t>(next - pos - 2))
        return _text(s + pos + 1, <Py_ssize_t>(next - pos - 2))
    if c == b"{":
        if depth == 0:
            return _UNBUILT
        members = {}
        pos = _skip_space(s, pos + 1)
        if s[pos] == b"}":
            at[0] = pos + 1
            return members
        while True:
            if s[pos] != b'"':
                return _UNBUILT
            next = dc_string(<const unsigned char*>s, pos, end, &escaped, NULL)
            if next == 0 or escaped:
                return _UNBUILT
            name = dc_build_name(<const unsigned char*>s + pos + 1, next - pos - 2)  # inlined: no call for a name
            key = <str>_NAMES[name] if name else _key_of(s + pos + 1, <Py_ssize_t>(next - pos - 2))
            if meta != NULL and key is _META:
                meta[0] = True
            pos = _skip_space(s, next)
            if s[pos] != b":":
                return _UNBUILT
            at[0] = _skip_space(s, pos + 1)
            value = _value(s, at, end, depth - 1, NULL, key is _LEVEL or key is _LOGGER or key is _PROGRESS_TOKEN)
            if value is _UNBUILT:
                return _UNBUILT
            members[key] = value
            pos = _skip_space(s, at[0])
            if s[pos] == b",":
                pos = _skip_space(s, pos + 1)
            elif s[pos] == b"}":
                at[0] = pos + 1
                return members
            else:
                return _UNBUILT
    if c == b"[":
        if depth == 0:
            return _UNBUILT
        items = []
        pos = _skip_space(s, pos + 1)
        if s[pos] == b"]":
            at[0] = pos + 1
            return items
        while True:
            at[0] = pos
            value = _value(s, at, end, depth - 1, NULL, False)
            if value is _UNBUILT:
                return _UNBUILT
            PyList_Append(items, value)
            pos = _skip_space(s, at[0])
            if s[pos] == b",":
                pos = _skip_space(s, pos + 1)
            elif s[pos] == b"]":
                at[0] = pos + 1
                return items
            else:
                return _UNBUILT
    if c == b"t":
        next = dc_literal(<const unsigned char*>s, pos, "true", 4)
        value = True
    elif c == b"f":
        next = dc_literal(<const unsigned char*>s, pos, "false", 5)
        value = False
    elif c == b"n":
        next = dc_literal(<const unsigned char*>s, pos, "null", 4)
        value = None
    else:
        return _integer_or_number(s, at)
    if next == 0:
        return _UNBUILT
    at[0] = next
    return value


cdef dict _members_in(int order, object method, object params):
    """The members decode left unbuilt (Notification._order): a slot of two bits for each, the first
    member highest, 1 for the method, 2 for "jsonrpc": "2.0", 3 for the params."""
    cdef dict members = {}
    cdef int shift, slot
    for shift in range(4, -2, -2):
        slot = (order >> shift) & 3
        if slot == 1:
            members[_METHOD] = method
        elif slot == 2:
            members[_JSONRPC_KEY] = _VERSION
        elif slot == 3:
            members[_PARAMS] = params
    return members


cdef object _built_notification(const char* data, Py_ssize_t size):
    """decode's Notification for a tag-0 payload of bytes (data: the tag, then the body), read and built
    in one pass; None where the parser reads it (see the top of this file). The members' dict is left
    unbuilt while they are the envelope alone, each once (Notification._order)."""
    cdef const char* s = data + 1
    cdef size_t end = <size_t>(size - 1), pos, at, next
    cdef int escaped = 0, name, slot, order = 0, seen = 0
    cdef bint meta = False
    cdef dict members = None
    cdef str key
    cdef object method = None, params = None
    cdef PyObject* found
    cdef Notification notification
    pos = _skip_space(s, 0)
    if s[pos] != b"{":
        return None
    pos = _skip_space(s, pos + 1)
    if s[pos] != b"}":
        while True:
            if s[pos] != b'"':
                return None
            next = dc_string(<const unsigned char*>s, pos, end, &escaped, NULL)
            if next == 0 or escaped:
                return None
            name = dc_build_name(<const unsigned char*>s + pos + 1, next - pos - 2)
            key = <str>_NAMES[name] if name else _key_of(s + pos + 1, <Py_ssize_t>(next - pos - 2))
            pos = _skip_space(s, next)
            if s[pos] != b":":
                return None
            pos = _skip_space(s, pos + 1)
            slot = 0
            if key is _METHOD and s[pos] == b'"':  # the method: the last one made, where it repeats
                next = dc_string(<const unsigned char*>s, pos, end, &escaped, NULL)
                if next == 0 or escaped:
                    return None
                value = _method_of(s + pos + 1, <Py_ssize_t>(next - pos - 2))
                at = next
                slot = 1
            elif key is _JSONRPC_KEY and s[pos] == b'"' and s[pos + 1] == b"2" and s[pos + 2] == b"." \
                    and s[pos + 3] == b"0" and s[pos + 4] == b'"':  # byte by byte: none is read past s[end], a NUL
                value = _VERSION
                at = pos + 5
                slot = 2
            else:
                at = pos
                value = _value(s, &at, end, _BUILT_DEPTH, &meta if key is _PARAMS else NULL, False)
                if value is _UNBUILT:
                    return None
                if key is _PARAMS:
                    slot = 3
            if slot and members is None and not seen & (1 << slot):
                seen |= 1 << slot
                order = (order << 2) | slot
            else:  # another member, or one again: the dict from here on, the members so far first
                if members is None:
                    members = _members_in(order, method, params)
                members[key] = value
            if key is _METHOD:
                method = value
            elif key is _PARAMS:
                params = value
            pos = _skip_space(s, at)
            if s[pos] == b",":
                pos = _skip_space(s, pos + 1)
            elif s[pos] == b"}":
                break
            else:
                return None
    if _skip_space(s, pos + 1) != end or type(method) is not str:
        return None
    if params is not None:
        if type(params) is not dict:
            return None
        if meta:  # a "_meta" member in some params (the last params wins): look at this one's
            found = PyDict_GetItemWithError(params, _META)
            if found is not NULL and <object>found is not None and type(<object>found) is not dict:
                return None
    notification = Notification.__new__(Notification)
    notification._method = method
    if members is None:
        notification._order = order
        notification._params = params
    else:
        notification._notification = members
    return notification

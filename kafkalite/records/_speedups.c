/* The compiled record codec: the per-record loops of RecordBatch v2, in C.
 *
 * Optional: kafkalite.records.accelerator loads this module when it was built and uses
 * the pure-Python codec otherwise. The Python codec is the reference. Every function
 * here either returns exactly what the Python code would return for the same input, or
 * returns None ("declined"), and the caller then runs the Python code on the same input.
 * It declines on anything outside the common case: any malformed record (so error
 * messages and types are the Python reference's by construction), numbers beyond
 * 64 bits, and argument types other than the plain ones the clients pass. It never
 * raises for bad input; it raises only when memory runs out. The one type here,
 * RecordsWriter, hands what it declines to the Python encoder itself (see there).
 *
 * The broker decodes what clients send, so every read is bounds-checked against the
 * end of the records section before it happens, and no allocation is sized by a count
 * taken from the input before that count has been checked against the bytes present.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#define API_VERSION 6
#define MIN_RECORD_SIZE 7 /* length, attributes, timestamp, offset, key, value, headers */
#define MIN_HEADER_SIZE 2 /* key length, value length */

enum { OK = 0, DECLINE = -1, FAILED = -2 /* a Python exception is set */ };

/* ---- varints ------------------------------------------------------------------------ */

/* A zig-zag varint of up to 10 bytes from d[*pos..end). Declines a truncated varint and
 * one whose value needs more than 64 bits (Python decodes those as big integers). */
static inline int
read_varint(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pos, int64_t *out)
{
    Py_ssize_t p = *pos;
    uint64_t raw = 0;
    int shift;
    if (p < end && d[p] < 0x80) { /* one byte: nearly every field */
        raw = d[p];
        *pos = p + 1;
        *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
        return OK;
    }
    for (shift = 0; shift < 70; shift += 7) {
        unsigned char b;
        if (p >= end)
            return DECLINE;
        b = d[p++];
        if (shift == 63 && b > 1)
            return DECLINE;
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            *pos = p;
            *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
            return OK;
        }
    }
    return DECLINE;
}

static inline uint64_t
zigzag(int64_t value)
{
    return ((uint64_t)value << 1) ^ (0 - ((uint64_t)value >> 63));
}

static inline Py_ssize_t
uvarint_size(uint64_t value)
{
    Py_ssize_t size = 1;
    while (value >= 0x80) {
        value >>= 7;
        size++;
    }
    return size;
}

static inline unsigned char *
put_uvarint(unsigned char *out, uint64_t value)
{
    while (value >= 0x80) {
        *out++ = (unsigned char)(value | 0x80);
        value >>= 7;
    }
    *out++ = (unsigned char)value;
    return out;
}

static inline int
add_overflows(int64_t a, int64_t b)
{
    return (b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b);
}

/* ---- decoding ----------------------------------------------------------------------- */

/* A record's headers at d[*pos..record_end), whose first byte is not 0: a tuple of
 * (str, bytes | None) tuples. */
static int
read_headers(const unsigned char *d, Py_ssize_t record_end, Py_ssize_t *pos, PyObject **out)
{
    Py_ssize_t p = *pos, i;
    int64_t count, size;
    PyObject *headers, *name, *value, *pair;
    if (read_varint(d, record_end, &p, &count) != OK || count < 0
            || count > (record_end - p) / MIN_HEADER_SIZE)
        return DECLINE;
    headers = PyTuple_New((Py_ssize_t)count);
    if (headers == NULL)
        return FAILED;
    for (i = 0; i < (Py_ssize_t)count; i++) {
        if (read_varint(d, record_end, &p, &size) != OK || size < 0 || size > record_end - p)
            goto decline;
        /* as Java's new String(bytes, UTF_8): bad sequences become U+FFFD */
        name = PyUnicode_DecodeUTF8((const char *)d + p, (Py_ssize_t)size, "replace");
        if (name == NULL)
            goto failed;
        p += (Py_ssize_t)size;
        if (read_varint(d, record_end, &p, &size) != OK || size < -1 || size > record_end - p) {
            Py_DECREF(name);
            goto decline;
        }
        if (size == -1) {
            value = Py_NewRef(Py_None);
        } else {
            value = PyBytes_FromStringAndSize((const char *)d + p, (Py_ssize_t)size);
            if (value == NULL) {
                Py_DECREF(name);
                goto failed;
            }
            p += (Py_ssize_t)size;
        }
        pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(name);
            Py_DECREF(value);
            goto failed;
        }
        PyTuple_SET_ITEM(pair, 0, name);
        PyTuple_SET_ITEM(pair, 1, value);
        PyTuple_SET_ITEM(headers, i, pair);
    }
    *pos = p;
    *out = headers;
    return OK;
decline:
    Py_DECREF(headers);
    return DECLINE;
failed:
    Py_DECREF(headers);
    return FAILED;
}

/* A key or value: its length, then its bytes (-1: null). */
static inline int
read_bytes(const unsigned char *d, Py_ssize_t record_end, Py_ssize_t *pos, PyObject **out)
{
    int64_t size;
    if (read_varint(d, record_end, pos, &size) != OK)
        return DECLINE;
    if (size == -1) {
        *out = Py_NewRef(Py_None);
        return OK;
    }
    if (size < 0 || size > record_end - *pos)
        return DECLINE;
    *out = PyBytes_FromStringAndSize((const char *)d + *pos, (Py_ssize_t)size);
    if (*out == NULL)
        return FAILED;
    *pos += (Py_ssize_t)size;
    return OK;
}

PyDoc_STRVAR(decode_records_doc,
"decode_records(data, pos, end, count, base_offset, base_timestamp)\n"
"--\n\n"
"The ``count`` records filling ``data[pos:end]`` as a tuple of five lists (offsets,\n"
"timestamps, keys, values, headers), or None where the Python decoder must decide.");

static PyObject *
decode_records(PyObject *module, PyObject *args)
{
    Py_buffer buffer;
    Py_ssize_t pos, end, count, i;
    long long base_offset, base_timestamp;
    PyObject *lists[5] = {NULL, NULL, NULL, NULL, NULL};
    PyObject *result = NULL;
    const unsigned char *d;
    int status = DECLINE, k;

    if (!PyArg_ParseTuple(args, "y*nnnLL:decode_records", &buffer, &pos, &end, &count,
                          &base_offset, &base_timestamp))
        return NULL;
    d = (const unsigned char *)buffer.buf;
    if (pos < 0 || end > buffer.len || pos >= end || count <= 0
            || count > (end - pos) / MIN_RECORD_SIZE)
        goto done;
    for (k = 0; k < 5; k++) {
        lists[k] = PyList_New(count);
        if (lists[k] == NULL)
            goto failed;
    }
    /* From here on, a ``goto done`` declines unless ``status`` says FAILED. */
    for (i = 0; i < count; i++) {
        int64_t length, timestamp_delta, offset_delta;
        Py_ssize_t record_end;
        PyObject *item;
        int read;

        if (read_varint(d, end, &pos, &length) != OK || length < MIN_RECORD_SIZE - 1
                || length > end - pos)
            goto done;
        record_end = pos + (Py_ssize_t)length;
        pos += 1; /* attributes: unused */
        if (read_varint(d, record_end, &pos, &timestamp_delta) != OK
                || read_varint(d, record_end, &pos, &offset_delta) != OK
                || add_overflows(base_offset, offset_delta)
                || add_overflows(base_timestamp, timestamp_delta))
            goto done;
        item = PyLong_FromLongLong(base_offset + offset_delta);
        if (item == NULL)
            goto failed;
        PyList_SET_ITEM(lists[0], i, item);
        item = PyLong_FromLongLong(base_timestamp + timestamp_delta);
        if (item == NULL)
            goto failed;
        PyList_SET_ITEM(lists[1], i, item);
        for (k = 2; k < 4; k++) { /* key, value */
            if ((read = read_bytes(d, record_end, &pos, &item)) != OK) {
                if (read == FAILED)
                    goto failed;
                goto done;
            }
            PyList_SET_ITEM(lists[k], i, item);
        }
        if (pos >= record_end)
            goto done;
        if (d[pos] == 0) {
            item = PyTuple_New(0); /* the shared empty tuple */
            if (item == NULL)
                goto failed;
            pos += 1;
        } else if ((read = read_headers(d, record_end, &pos, &item)) != OK) {
            if (read == FAILED)
                goto failed;
            goto done;
        }
        PyList_SET_ITEM(lists[4], i, item);
        if (pos != record_end)
            goto done;
    }
    status = pos == end ? OK : DECLINE;
    goto done;
failed:
    status = FAILED;
done:
    PyBuffer_Release(&buffer);
    if (status == OK) {
        result = PyTuple_Pack(5, lists[0], lists[1], lists[2], lists[3], lists[4]);
    } else if (status == DECLINE) {
        result = Py_NewRef(Py_None);
    }
    for (k = 0; k < 5; k++)
        Py_XDECREF(lists[k]);
    return result;
}

/* ---- encoding ----------------------------------------------------------------------- */

/* A key, value or header value the Python encoder accepts the same way: None, bytes or
 * bytearray (exact types). Anything else, memoryviews included, is declined. */
typedef struct {
    const char *data;
    Py_ssize_t size; /* -1: null */
} Field;

static inline int
get_field(PyObject *object, Field *field)
{
    if (object == Py_None) {
        field->data = NULL;
        field->size = -1;
    } else if (PyBytes_CheckExact(object)) {
        field->data = PyBytes_AS_STRING(object);
        field->size = PyBytes_GET_SIZE(object);
    } else if (PyByteArray_CheckExact(object)) {
        field->data = PyByteArray_AS_STRING(object);
        field->size = PyByteArray_GET_SIZE(object);
    } else {
        return DECLINE;
    }
    return OK;
}

static inline Py_ssize_t
field_size(const Field *field)
{
    return field->size < 0 ? 1 : uvarint_size(zigzag(field->size)) + field->size;
}

static inline unsigned char *
put_field(unsigned char *out, const Field *field)
{
    if (field->size < 0) {
        *out++ = 0x01; /* varint -1 */
        return out;
    }
    out = put_uvarint(out, zigzag(field->size));
    memcpy(out, field->data, (size_t)field->size);
    return out + field->size;
}

/* Headers as a non-empty list or tuple of (str, bytes | bytearray | None) pairs, each a
 * 2-tuple or 2-list: their encoded size, or -1 to decline. */
static Py_ssize_t
headers_size(PyObject *headers)
{
    Py_ssize_t count = PySequence_Fast_GET_SIZE(headers), i, size;
    PyObject **items = PySequence_Fast_ITEMS(headers);
    size = uvarint_size(zigzag(count));
    for (i = 0; i < count; i++) {
        PyObject *pair = items[i], *name;
        Py_ssize_t name_size;
        Field value;
        if (!(PyTuple_CheckExact(pair) || PyList_CheckExact(pair))
                || PySequence_Fast_GET_SIZE(pair) != 2)
            return -1;
        name = PySequence_Fast_GET_ITEM(pair, 0);
        if (!PyUnicode_CheckExact(name)
                || get_field(PySequence_Fast_GET_ITEM(pair, 1), &value) != OK)
            return -1;
        if (PyUnicode_AsUTF8AndSize(name, &name_size) == NULL) { /* lone surrogates */
            PyErr_Clear();
            return -1;
        }
        size += uvarint_size(zigzag(name_size)) + name_size + field_size(&value);
    }
    return size;
}

/* Writes what headers_size measured (no Python code runs in between). */
static unsigned char *
put_headers(unsigned char *out, PyObject *headers)
{
    Py_ssize_t count = PySequence_Fast_GET_SIZE(headers), i, name_size;
    PyObject **items = PySequence_Fast_ITEMS(headers);
    out = put_uvarint(out, zigzag(count));
    for (i = 0; i < count; i++) {
        PyObject *pair = items[i];
        const char *name = PyUnicode_AsUTF8AndSize(PySequence_Fast_GET_ITEM(pair, 0),
                                                   &name_size); /* cached by headers_size */
        Field value = {NULL, -1};
        get_field(PySequence_Fast_GET_ITEM(pair, 1), &value);
        out = put_uvarint(out, zigzag(name_size));
        memcpy(out, name, (size_t)name_size);
        out = put_field(out + name_size, &value);
    }
    return out;
}

static inline int
is_plain_int(PyObject *object)
{
    return PyLong_CheckExact(object) || PyBool_Check(object);
}

/* One record measured: what put_record writes and how many bytes it takes. */
typedef struct {
    int64_t timestamp_delta, offset_delta;
    Field key, value;
    PyObject *headers; /* NULL: none */
    Py_ssize_t body, size;
} Record;

/* A record's deltas, body and total size, its key and value (and ``header_bytes``, 1 for
 * no headers) already known. */
static inline void
size_record(Record *r, int64_t timestamp_delta, int64_t offset_delta, Py_ssize_t header_bytes)
{
    r->timestamp_delta = timestamp_delta;
    r->offset_delta = offset_delta;
    r->body = 1 + uvarint_size(zigzag(timestamp_delta)) + uvarint_size(zigzag(offset_delta))
        + field_size(&r->key) + field_size(&r->value) + header_bytes;
    r->size = uvarint_size(zigzag(r->body)) + r->body;
}

/* ``headers`` is None or a list or tuple (empty: no headers). */
static int
measure_record(Record *r, int64_t timestamp_delta, int64_t offset_delta, PyObject *key,
               PyObject *value, PyObject *headers)
{
    Py_ssize_t header_bytes = 1;
    if (get_field(key, &r->key) != OK || get_field(value, &r->value) != OK)
        return DECLINE;
    r->headers = NULL;
    if (headers != Py_None) {
        if (!(PyList_CheckExact(headers) || PyTuple_CheckExact(headers)))
            return DECLINE;
        if (PySequence_Fast_GET_SIZE(headers) > 0) {
            header_bytes = headers_size(headers);
            if (header_bytes < 0)
                return DECLINE;
            r->headers = headers;
        }
    }
    size_record(r, timestamp_delta, offset_delta, header_bytes);
    return OK;
}

static unsigned char *
put_record(unsigned char *o, const Record *r)
{
    o = put_uvarint(o, zigzag(r->body));
    *o++ = 0; /* attributes */
    o = put_uvarint(o, zigzag(r->timestamp_delta));
    o = put_uvarint(o, zigzag(r->offset_delta));
    o = put_field(o, &r->key);
    o = put_field(o, &r->value);
    if (r->headers != NULL)
        return put_headers(o, r->headers);
    *o++ = 0; /* no headers */
    return o;
}

static inline int
get_int64(PyObject *object, int64_t *out)
{
    int overflow;
    long long value;
    if (!is_plain_int(object))
        return DECLINE;
    value = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (overflow)
        return DECLINE;
    *out = value;
    return OK;
}

static inline int
get_size(PyObject *object, Py_ssize_t *out)
{
    int64_t value;
    if (get_int64(object, &value) != OK || value < 0 || value > PY_SSIZE_T_MAX)
        return DECLINE;
    *out = (Py_ssize_t)value;
    return OK;
}

/* Records being appended to a batch: the encoded bytes so far (grown as needed) and the
 * batch's size, record count and largest timestamp, as BatchBuilder keeps them. */
typedef struct {
    unsigned char *out;
    Py_ssize_t used, capacity, size, count, batch_size;
    int64_t max_timestamp;
} BatchRun;

enum { ADDED, FULL };

/* ADDED once there is room for ``size`` more bytes at b->out + b->used; FAILED (with
 * MemoryError set) when the buffer cannot grow. batch_room: FULL instead when a record
 * of that size would take a non-empty batch past its batch_size. */
static int
batch_grow(BatchRun *b, Py_ssize_t size)
{
    if (b->used + size > b->capacity) {
        Py_ssize_t wanted = Py_MAX(Py_MAX(b->capacity * 2, b->used + size), 4096);
        unsigned char *grown = PyMem_Realloc(b->out, (size_t)wanted);
        if (grown == NULL) {
            PyErr_NoMemory();
            return FAILED;
        }
        b->out = grown;
        b->capacity = wanted;
    }
    return ADDED;
}

static int
batch_room(BatchRun *b, Py_ssize_t size)
{
    return b->size + size > b->batch_size && b->count ? FULL : batch_grow(b, size);
}

/* The bookkeeping of a record of ``size`` bytes just written at b->out + b->used. */
static inline void
batch_count(BatchRun *b, Py_ssize_t size, int64_t timestamp)
{
    b->used += size;
    b->size += size;
    b->count += 1;
    if (timestamp > b->max_timestamp)
        b->max_timestamp = timestamp;
}

static int
batch_add(BatchRun *b, const Record *r, int64_t timestamp)
{
    int status = batch_room(b, r->size);
    if (status == ADDED) {
        put_record(b->out + b->used, r);
        batch_count(b, r->size, timestamp);
    }
    return status;
}

/* What the encoders return: (records bytes, index reached, size, record count, max
 * timestamp), None when declined, NULL on error; the buffer is freed. */
static PyObject *
batch_result(BatchRun *b, Py_ssize_t index, int status)
{
    PyObject *result = NULL;
    if (status == OK) {
        result = Py_BuildValue("y#nnnL", b->out != NULL ? (const char *)b->out : "", b->used,
                               index, b->size, b->count, (long long)b->max_timestamp);
    } else if (status == DECLINE) {
        result = Py_NewRef(Py_None);
    }
    PyMem_Free(b->out);
    return result;
}

static int
is_list_or_tuple(PyObject *object)
{
    return PyList_CheckExact(object) || PyTuple_CheckExact(object);
}

PyDoc_STRVAR(encode_records_doc,
"encode_records(timestamps, keys, values, headers, start, stop, base_timestamp,\n"
"               record_count, size, batch_size, max_timestamp)\n"
"--\n\n"
"Records ``start..stop-1`` of the parallel lists appended to a batch that holds\n"
"``record_count`` records in ``size`` bytes, until one would take it past\n"
"``batch_size``: (records bytes, index reached, size, record count, max timestamp),\n"
"or None where the Python encoder must decide.");

static PyObject *
encode_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *timestamps, *keys, *values, *headers;
    Py_ssize_t start, stop, index;
    int64_t base_timestamp;
    BatchRun batch = {0};
    int status = OK, added;

    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "encode_records takes 11 arguments");
        return NULL;
    }
    timestamps = args[0];
    keys = args[1];
    values = args[2];
    headers = args[3];
    if (!is_list_or_tuple(timestamps) || !is_list_or_tuple(keys) || !is_list_or_tuple(values)
            || !(headers == Py_None || is_list_or_tuple(headers))
            || get_size(args[4], &start) != OK || get_size(args[5], &stop) != OK
            || get_int64(args[6], &base_timestamp) != OK
            || get_size(args[7], &batch.count) != OK || get_size(args[8], &batch.size) != OK
            || get_size(args[9], &batch.batch_size) != OK
            || get_int64(args[10], &batch.max_timestamp) != OK
            || start >= stop || stop > PySequence_Fast_GET_SIZE(timestamps)
            || stop > PySequence_Fast_GET_SIZE(keys) || stop > PySequence_Fast_GET_SIZE(values)
            || (headers != Py_None && stop > PySequence_Fast_GET_SIZE(headers)))
        Py_RETURN_NONE;

    for (index = start; index < stop; index++) {
        int64_t timestamp;
        Record record;
        if (get_int64(PySequence_Fast_GET_ITEM(timestamps, index), &timestamp) != OK
                || (base_timestamp < 0 ? timestamp > INT64_MAX + base_timestamp
                                       : timestamp < INT64_MIN + base_timestamp)
                || measure_record(&record, timestamp - base_timestamp, batch.count,
                                  PySequence_Fast_GET_ITEM(keys, index),
                                  PySequence_Fast_GET_ITEM(values, index),
                                  headers == Py_None ? Py_None
                                      : PySequence_Fast_GET_ITEM(headers, index)) != OK) {
            status = DECLINE;
            break;
        }
        added = batch_add(&batch, &record, timestamp);
        if (added != ADDED) {
            status = added == FULL ? OK : FAILED;
            break;
        }
    }
    return batch_result(&batch, index, status);
}

/* ---- the open batch's records -------------------------------------------------------
 *
 * RecordsWriter holds the records section of a v2 batch while it fills: the producer's
 * per-record path (``append_future``) is one call that encodes the record in place and
 * returns its future, with no Python frame, no bytes object and no list per record.
 * kafkalite.records.builder has the Python twin (the fallback and the reference); both
 * raise the same errors for a bad timestamp, and a record this code declines is encoded
 * by the Python encoder it was given, so every other error is the Python one. */

typedef struct {
    PyObject_HEAD
    BatchRun run;
    int64_t base_timestamp;
    PyObject *fallback;        /* encode_record_python(timestamp_delta, offset_delta, ...) */
    PyTypeObject *future_type; /* append_future's futures: set by bind_futures */
    PyObject *tp, *future;
    int sealed;                /* set by seal(): appends decline, extend fails */
} RecordsWriter;

/* The record's timestamp and its delta from the batch's first; FAILED with TypeError or
 * ValueError set when it is not an int or the delta does not fit 64 bits. */
static int
writer_timestamp(RecordsWriter *w, PyObject *object, int64_t *timestamp, int64_t *delta)
{
    int overflow;
    long long value;
    int64_t base;
    if (!PyLong_Check(object)) {
        PyErr_Format(PyExc_TypeError, "record timestamp must be an int (ms), not %.100s",
                     Py_TYPE(object)->tp_name);
        return FAILED;
    }
    value = PyLong_AsLongLongAndOverflow(object, &overflow);
    if (value == -1 && PyErr_Occurred())
        return FAILED;
    if (overflow) {
        PyErr_Format(PyExc_ValueError, "record timestamp %R does not fit 64 bits", object);
        return FAILED;
    }
    base = w->run.count ? w->base_timestamp : value;
    if (base < 0 ? value > INT64_MAX + base : value < INT64_MIN + base) {
        PyErr_Format(PyExc_ValueError,
                     "record timestamp %R is out of range for a batch starting at %lld",
                     object, (long long)base);
        return FAILED;
    }
    *timestamp = value;
    *delta = value - base;
    return OK;
}

/* ADDED, FULL or FAILED; a declined record goes through the Python encoder. */
static int
writer_add(RecordsWriter *w, PyObject *timestamp_object, PyObject *key, PyObject *value,
           PyObject *headers)
{
    int64_t timestamp, delta;
    Record record;
    int status;
    if (w->sealed)
        return FULL;
    if (writer_timestamp(w, timestamp_object, &timestamp, &delta) != OK)
        return FAILED;
    if (measure_record(&record, delta, w->run.count, key, value, headers) == OK) {
        status = batch_add(&w->run, &record, timestamp);
    } else {
        PyObject *encoded = PyObject_CallFunction(w->fallback, "LnOOO", (long long)delta,
                                                  w->run.count, key, value, headers);
        if (encoded == NULL)
            return FAILED;
        if (!PyBytes_Check(encoded)) {
            Py_DECREF(encoded);
            PyErr_SetString(PyExc_TypeError, "the record encoder must return bytes");
            return FAILED;
        }
        status = batch_room(&w->run, PyBytes_GET_SIZE(encoded));
        if (status == ADDED) {
            memcpy(w->run.out + w->run.used, PyBytes_AS_STRING(encoded),
                   (size_t)PyBytes_GET_SIZE(encoded));
            batch_count(&w->run, PyBytes_GET_SIZE(encoded), timestamp);
        }
        Py_DECREF(encoded);
    }
    if (status == ADDED && w->run.count == 1)
        w->base_timestamp = timestamp;
    return status;
}

static PyObject *
writer_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"batch_size", "size", "fallback", NULL};
    Py_ssize_t batch_size, size;
    PyObject *fallback;
    RecordsWriter *w;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "nnO:RecordsWriter", names, &batch_size,
                                     &size, &fallback))
        return NULL;
    w = (RecordsWriter *)type->tp_alloc(type, 0);
    if (w == NULL)
        return NULL;
    w->run.batch_size = batch_size;
    w->run.size = size;
    w->run.max_timestamp = -1;
    w->fallback = Py_NewRef(fallback);
    return (PyObject *)w;
}

static int
writer_traverse(RecordsWriter *w, visitproc visit, void *arg)
{
    Py_VISIT(w->fallback);
    Py_VISIT(w->future_type);
    Py_VISIT(w->tp);
    Py_VISIT(w->future);
    return 0;
}

static int
writer_clear(RecordsWriter *w)
{
    Py_CLEAR(w->fallback);
    Py_CLEAR(w->future_type);
    Py_CLEAR(w->tp);
    Py_CLEAR(w->future);
    return 0;
}

static void
writer_dealloc(RecordsWriter *w)
{
    PyObject_GC_UnTrack(w);
    writer_clear(w);
    PyMem_Free(w->run.out);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

PyDoc_STRVAR(writer_append_doc,
"append(timestamp, key, value, headers)\n"
"--\n\n"
"Add a record; False (and nothing added) when it would take a non-empty batch past\n"
"batch_size, or once sealed.");

static PyObject *
writer_append(RecordsWriter *w, PyObject *const *args, Py_ssize_t nargs)
{
    int status;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "append takes 4 arguments");
        return NULL;
    }
    status = writer_add(w, args[0], args[1], args[2], args[3]);
    if (status == FAILED)
        return NULL;
    return PyBool_FromLong(status == ADDED);
}

static inline PyObject *
size_of(PyObject *field)
{
    Py_ssize_t size = field == Py_None ? -1 : PyObject_Size(field);
    return size == -1 && PyErr_Occurred() ? NULL : PyLong_FromSsize_t(size);
}

PyDoc_STRVAR(writer_append_future_doc,
"append_future(timestamp, key, value, headers)\n"
"--\n\n"
"append(), returning the record's future: future_type(tp, future, offset delta,\n"
"timestamp, key size, value size) as bind_futures set them (sizes -1 for None); None\n"
"when the record does not fit or the writer is sealed.");

static PyObject *
writer_append_future(RecordsWriter *w, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t offset_delta = w->run.count;
    PyObject *result, *item;
    int status;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "append_future takes 4 arguments");
        return NULL;
    }
    if (w->future_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "append_future before bind_futures");
        return NULL;
    }
    status = writer_add(w, args[0], args[1], args[2], args[3]);
    if (status != ADDED)
        return status == FULL ? Py_NewRef(Py_None) : NULL;
    result = w->future_type->tp_alloc(w->future_type, 6);
    if (result == NULL)
        return NULL;
    PyTuple_SET_ITEM(result, 0, Py_NewRef(w->tp));
    PyTuple_SET_ITEM(result, 1, Py_NewRef(w->future));
    PyTuple_SET_ITEM(result, 3, Py_NewRef(args[0]));
    if ((item = PyLong_FromSsize_t(offset_delta)) == NULL)
        goto failed;
    PyTuple_SET_ITEM(result, 2, item);
    if ((item = size_of(args[1])) == NULL)
        goto failed;
    PyTuple_SET_ITEM(result, 4, item);
    if ((item = size_of(args[2])) == NULL)
        goto failed;
    PyTuple_SET_ITEM(result, 5, item);
    return result;
failed:
    Py_DECREF(result);
    return NULL;
}

PyDoc_STRVAR(writer_bind_futures_doc,
"bind_futures(future_type, tp, future)\n"
"--\n\n"
"What append_future builds its futures from: a tuple subclass, and the first two items.");

static PyObject *
writer_bind_futures(RecordsWriter *w, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyType_Check(args[0])
            || !PyType_IsSubtype((PyTypeObject *)args[0], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "bind_futures(tuple subclass, tp, future)");
        return NULL;
    }
    Py_XSETREF(w->future_type, (PyTypeObject *)Py_NewRef(args[0]));
    Py_XSETREF(w->tp, Py_NewRef(args[1]));
    Py_XSETREF(w->future, Py_NewRef(args[2]));
    Py_RETURN_NONE;
}

PyDoc_STRVAR(writer_extend_doc,
"extend(records, base_timestamp, size, record_count, max_timestamp)\n"
"--\n\n"
"Add encoded records (what encode_records returned for this writer's totals), taking\n"
"the totals that came with them.");

static PyObject *
writer_extend(RecordsWriter *w, PyObject *args)
{
    Py_buffer records;
    long long base_timestamp, max_timestamp;
    Py_ssize_t size, count;
    int status;
    if (!PyArg_ParseTuple(args, "y*LnnL:extend", &records, &base_timestamp, &size, &count,
                          &max_timestamp))
        return NULL;
    if (w->sealed || count < w->run.count || size < w->run.size) {
        PyBuffer_Release(&records);
        PyErr_SetString(PyExc_ValueError, w->sealed ? "extend: the writer is sealed"
                                                    : "extend: totals below the writer's own");
        return NULL;
    }
    status = batch_grow(&w->run, records.len); /* encoded already: batch_size was applied */
    if (status == ADDED) {
        memcpy(w->run.out + w->run.used, records.buf, (size_t)records.len);
        w->run.used += records.len;
        w->run.size = size;
        w->run.count = count;
        w->run.max_timestamp = max_timestamp;
        w->base_timestamp = base_timestamp;
    }
    PyBuffer_Release(&records);
    return status == ADDED ? Py_NewRef(Py_None) : NULL;
}

PyDoc_STRVAR(writer_seal_doc,
"seal()\n"
"--\n\n"
"Take no more records: appends decline (as when full) and extend fails. One C call,\n"
"so under the GIL no append runs half before and half after it: what a batch holds\n"
"once sealed is final, which lets the producer append without its lock.");

static PyObject *
writer_seal(RecordsWriter *w, PyObject *unused)
{
    w->sealed = 1;
    Py_RETURN_NONE;
}

static PyObject *
writer_getvalue(RecordsWriter *w, PyObject *unused)
{
    return PyBytes_FromStringAndSize(w->run.out != NULL ? (const char *)w->run.out : "",
                                     w->run.used);
}

static PyObject *
writer_get_count(RecordsWriter *w, void *closure)
{
    return PyLong_FromSsize_t(w->run.count);
}

static PyObject *
writer_get_size(RecordsWriter *w, void *closure)
{
    return PyLong_FromSsize_t(w->run.size);
}

static PyObject *
writer_get_base_timestamp(RecordsWriter *w, void *closure)
{
    return PyLong_FromLongLong(w->base_timestamp);
}

static PyObject *
writer_get_max_timestamp(RecordsWriter *w, void *closure)
{
    return PyLong_FromLongLong(w->run.max_timestamp);
}

static PyObject *
writer_get_sealed(RecordsWriter *w, void *closure)
{
    return PyBool_FromLong(w->sealed);
}

static PyObject *
writer_get_batch_size(RecordsWriter *w, void *closure)
{
    return PyLong_FromSsize_t(w->run.batch_size);
}

static int
writer_set_batch_size(RecordsWriter *w, PyObject *value, void *closure)
{
    Py_ssize_t batch_size;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "batch_size cannot be deleted");
        return -1;
    }
    batch_size = PyLong_AsSsize_t(value);
    if (batch_size == -1 && PyErr_Occurred())
        return -1;
    w->run.batch_size = batch_size;
    return 0;
}

static PyGetSetDef writer_getset[] = {
    {"record_count", (getter)writer_get_count, NULL, "Records appended so far.", NULL},
    {"size_in_bytes", (getter)writer_get_size, NULL,
     "The batch's uncompressed size so far, its header included.", NULL},
    {"base_timestamp", (getter)writer_get_base_timestamp, NULL,
     "The first record's timestamp (0 while empty).", NULL},
    {"max_timestamp", (getter)writer_get_max_timestamp, NULL,
     "The largest timestamp so far (-1 while empty).", NULL},
    {"batch_size", (getter)writer_get_batch_size, (setter)writer_set_batch_size,
     "The size past which a non-empty batch takes no more records.", NULL},
    {"sealed", (getter)writer_get_sealed, NULL, "True once seal() was called.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef writer_methods[] = {
    {"append", (PyCFunction)(void (*)(void))writer_append, METH_FASTCALL, writer_append_doc},
    {"append_future", (PyCFunction)(void (*)(void))writer_append_future, METH_FASTCALL,
     writer_append_future_doc},
    {"bind_futures", (PyCFunction)(void (*)(void))writer_bind_futures, METH_FASTCALL,
     writer_bind_futures_doc},
    {"extend", (PyCFunction)writer_extend, METH_VARARGS, writer_extend_doc},
    {"seal", (PyCFunction)writer_seal, METH_NOARGS, writer_seal_doc},
    {"getvalue", (PyCFunction)writer_getvalue, METH_NOARGS,
     "The records section's bytes so far."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RecordsWriterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafkalite.records._speedups.RecordsWriter",
    .tp_doc = PyDoc_STR("RecordsWriter(batch_size, size, fallback)\n--\n\n"
                        "The records section of a v2 batch being filled; ``size`` counts\n"
                        "the batch header, ``fallback`` encodes what this code declines."),
    .tp_basicsize = sizeof(RecordsWriter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = writer_new,
    .tp_dealloc = (destructor)writer_dealloc,
    .tp_traverse = (traverseproc)writer_traverse,
    .tp_clear = (inquiry)writer_clear,
    .tp_methods = writer_methods,
    .tp_getset = writer_getset,
};

/* ---- validation --------------------------------------------------------------------- */

/* A key or value of the walk: its length at d[*pos], then its bytes skipped; *is_null for
 * length -1. A field that does not end before ``record_end`` is declined, as the Python
 * walk rejects it (the header count follows it inside the record). */
static inline int
skip_field(const unsigned char *d, Py_ssize_t record_end, Py_ssize_t *pos, int *is_null)
{
    int64_t size;
    if (read_varint(d, record_end, pos, &size) != OK || size < -1 || size > record_end - *pos)
        return DECLINE;
    *is_null = size == -1;
    if (size > 0)
        *pos += (Py_ssize_t)size;
    return *pos < record_end ? OK : DECLINE;
}

/* A record's headers at d[*pos..record_end), skipped: a count, then each header's key
 * (not null) and value (null allowed), every length within the record. */
static inline int
skip_headers(const unsigned char *d, Py_ssize_t record_end, Py_ssize_t *pos)
{
    Py_ssize_t p = *pos;
    int64_t count, size, i;
    if (read_varint(d, record_end, &p, &count) != OK || count < 0 || count > record_end - p)
        return DECLINE;
    for (i = 0; i < count; i++) {
        if (read_varint(d, record_end, &p, &size) != OK || size < 0 || size > record_end - p)
            return DECLINE;
        p += (Py_ssize_t)size;
        if (read_varint(d, record_end, &p, &size) != OK || size < -1 || size > record_end - p)
            return DECLINE;
        if (size > 0)
            p += (Py_ssize_t)size;
    }
    *pos = p;
    return OK;
}

PyDoc_STRVAR(check_records_doc,
"check_records(data, pos, end, count)\n"
"--\n\n"
"Walk the ``count`` records filling ``data[pos:end]`` as the broker's validation does:\n"
"the list of indexes of records with a null key, or None where the Python walk must\n"
"decide (every invalid record among it).");

static PyObject *
check_records(PyObject *module, PyObject *args)
{
    Py_buffer buffer;
    Py_ssize_t pos, end, count, index = 0;
    PyObject *null_keys = NULL;
    const unsigned char *d;
    int status = DECLINE;

    if (!PyArg_ParseTuple(args, "y*nnn:check_records", &buffer, &pos, &end, &count))
        return NULL;
    d = (const unsigned char *)buffer.buf;
    if (pos < 0 || end > buffer.len || pos >= end || count <= 0
            || count > (end - pos) / MIN_RECORD_SIZE)
        goto done;
    null_keys = PyList_New(0); /* grows with the records walked, never sized by ``count`` */
    if (null_keys == NULL)
        goto failed;
    while (pos < end) {
        int64_t length, delta;
        Py_ssize_t record_end;
        int is_null;

        if (index == count)
            goto done; /* bytes after the last record */
        if (read_varint(d, end, &pos, &length) != OK || length < MIN_RECORD_SIZE - 1
                || length > end - pos)
            goto done;
        record_end = pos + (Py_ssize_t)length;
        pos += 1; /* attributes: any value */
        if (read_varint(d, record_end, &pos, &delta) != OK /* timestamp delta: any */
                || read_varint(d, record_end, &pos, &delta) != OK || delta != index
                || skip_field(d, record_end, &pos, &is_null) != OK)
            goto done;
        if (is_null) {
            PyObject *item = PyLong_FromSsize_t(index);
            if (item == NULL || PyList_Append(null_keys, item) < 0) {
                Py_XDECREF(item);
                goto failed;
            }
            Py_DECREF(item);
        }
        if (skip_field(d, record_end, &pos, &is_null) != OK)
            goto done;
        if (d[pos] == 0)
            pos += 1;
        else if (skip_headers(d, record_end, &pos) != OK)
            goto done;
        if (pos != record_end)
            goto done;
        index += 1;
    }
    status = index == count ? OK : DECLINE;
    goto done;
failed:
    status = FAILED;
done:
    PyBuffer_Release(&buffer);
    if (status == OK)
        return null_keys;
    Py_XDECREF(null_keys);
    return status == DECLINE ? Py_NewRef(Py_None) : NULL;
}

/* ---- Arrow columns ------------------------------------------------------------------ */

/* Decoding records straight into Apache Arrow's buffer layout, for Consumer.poll_arrow:
 * no Python object per record. Only "plain" records take this path: offsets contiguous
 * from the batch's base offset (record i has offset delta i) and no headers, which is
 * what producers write and what the consumer fetches nearly always. Anything else is
 * declined (the caller decodes into Python columns instead), so plain records decode
 * to exactly what the Python decoder returns for them. */

/* One plain record: where its key and value are (size -1: null). */
typedef struct {
    const unsigned char *key, *value;
    Py_ssize_t key_size, value_size;
    int64_t timestamp_delta;
} PlainRecord;

/* A key or value in place: its length, then its bytes (-1: null). */
static inline int
read_span(const unsigned char *d, Py_ssize_t record_end, Py_ssize_t *pos,
          const unsigned char **out, Py_ssize_t *size)
{
    int64_t length;
    if (read_varint(d, record_end, pos, &length) != OK)
        return DECLINE;
    if (length == -1) {
        *out = NULL;
        *size = -1;
        return OK;
    }
    if (length < 0 || length > record_end - *pos)
        return DECLINE;
    *out = d + *pos;
    *size = (Py_ssize_t)length;
    *pos += (Py_ssize_t)length;
    return OK;
}

/* Record ``index`` of a section at d[*pos..end): declined unless it is well formed (the
 * Python decoder's rules), plain, and its timestamp fits 64 bits. */
static inline int
read_plain_record(const unsigned char *d, Py_ssize_t end, Py_ssize_t *pos, Py_ssize_t index,
                  int64_t base_timestamp, PlainRecord *r)
{
    int64_t length, offset_delta;
    Py_ssize_t p = *pos, record_end;
    if (read_varint(d, end, &p, &length) != OK || length < MIN_RECORD_SIZE - 1
            || length > end - p)
        return DECLINE;
    record_end = p + (Py_ssize_t)length;
    p += 1; /* attributes: unused */
    if (read_varint(d, record_end, &p, &r->timestamp_delta) != OK
            || read_varint(d, record_end, &p, &offset_delta) != OK
            || offset_delta != (int64_t)index
            || add_overflows(base_timestamp, r->timestamp_delta)
            || read_span(d, record_end, &p, &r->key, &r->key_size) != OK
            || read_span(d, record_end, &p, &r->value, &r->value_size) != OK
            || p >= record_end || d[p] != 0 /* headers */ || p + 1 != record_end)
        return DECLINE;
    *pos = record_end;
    return OK;
}

/* A records section as the Python side describes it: v2_records.RecordSection (data,
 * pos, end, count, base_offset, base_timestamp, fixed_timestamp: None, or every record's
 * timestamp under LogAppendTime), with ``with_range`` followed by the range of records
 * wanted (start, stop). */
typedef struct {
    const unsigned char *data;
    Py_ssize_t pos, end, count, start, stop;
    int64_t base_offset, base_timestamp, fixed_timestamp;
    int fixed;
} Section;

static int
get_section(PyObject *item, Section *s, int with_range)
{
    PyObject **f, *data;
    Py_ssize_t length = with_range ? 9 : 7;
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != length)
        return DECLINE;
    f = &PyTuple_GET_ITEM(item, 0);
    data = f[0];
    if (PyBytes_CheckExact(data)) {
        s->data = (const unsigned char *)PyBytes_AS_STRING(data);
        length = PyBytes_GET_SIZE(data);
    } else if (PyByteArray_CheckExact(data)) {
        s->data = (const unsigned char *)PyByteArray_AS_STRING(data);
        length = PyByteArray_GET_SIZE(data);
    } else {
        return DECLINE;
    }
    if (get_size(f[1], &s->pos) != OK || get_size(f[2], &s->end) != OK
            || get_size(f[3], &s->count) != OK || get_int64(f[4], &s->base_offset) != OK
            || get_int64(f[5], &s->base_timestamp) != OK)
        return DECLINE;
    s->fixed = f[6] != Py_None;
    if (s->fixed && get_int64(f[6], &s->fixed_timestamp) != OK)
        return DECLINE;
    s->start = 0;
    s->stop = s->count;
    if (with_range) {
        if (get_size(f[7], &s->start) != OK || get_size(f[8], &s->stop) != OK
                || s->start > s->stop || s->stop > s->count)
            return DECLINE;
    }
    if (s->end > length || s->pos >= s->end || s->count <= 0
            || s->count > (s->end - s->pos) / MIN_RECORD_SIZE
            || add_overflows(s->base_offset, (int64_t)s->count))
        return DECLINE;
    return OK;
}

/* Every record of the section read (so the whole section is checked, as the Python
 * decoder checks it); with ``key_bytes``, the sizes of keys and values in start..stop
 * added up. */
static int
scan_section(const Section *s, int64_t *key_bytes, int64_t *value_bytes)
{
    Py_ssize_t pos = s->pos, i;
    PlainRecord r;
    for (i = 0; i < s->count; i++) {
        if (read_plain_record(s->data, s->end, &pos, i, s->base_timestamp, &r) != OK)
            return DECLINE;
        if (key_bytes != NULL && i >= s->start && i < s->stop) {
            *key_bytes += r.key_size > 0 ? r.key_size : 0;
            *value_bytes += r.value_size > 0 ? r.value_size : 0;
        }
    }
    return pos == s->end ? OK : DECLINE;
}

PyDoc_STRVAR(is_plain_section_doc,
"is_plain_section(section)\n"
"--\n\n"
"True when ``decode_arrow`` takes the records of the section (data, pos, end, count,\n"
"base_offset, base_timestamp, fixed_timestamp): all well formed, offsets contiguous\n"
"from base_offset, no headers.");

static PyObject *
is_plain_section(PyObject *module, PyObject *item)
{
    Section s;
    if (get_section(item, &s, 0) != OK || scan_section(&s, NULL, NULL) != OK)
        Py_RETURN_FALSE;
    Py_RETURN_TRUE;
}

/* One binary column being filled: Arrow's validity bitmap, int32 offsets and data. */
typedef struct {
    PyObject *validity, *offsets, *data;
    unsigned char *bits;
    int32_t *ends;
    char *out;
    Py_ssize_t used, nulls;
} BinaryColumn;

static int
binary_column_new(BinaryColumn *c, Py_ssize_t rows, int64_t data_size)
{
    c->used = c->nulls = 0;
    c->validity = PyBytes_FromStringAndSize(NULL, (rows + 7) / 8);
    c->offsets = PyBytes_FromStringAndSize(NULL, (rows + 1) * (Py_ssize_t)sizeof(int32_t));
    c->data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)data_size);
    if (c->validity == NULL || c->offsets == NULL || c->data == NULL)
        return FAILED;
    c->bits = (unsigned char *)PyBytes_AS_STRING(c->validity);
    memset(c->bits, 0, (size_t)PyBytes_GET_SIZE(c->validity));
    c->ends = (int32_t *)(void *)PyBytes_AS_STRING(c->offsets);
    c->ends[0] = 0;
    c->out = PyBytes_AS_STRING(c->data);
    return OK;
}

static inline void
binary_column_put(BinaryColumn *c, Py_ssize_t row, const unsigned char *data, Py_ssize_t size)
{
    if (size < 0) {
        c->nulls++;
    } else {
        c->bits[row >> 3] |= (unsigned char)(1u << (row & 7));
        memcpy(c->out + c->used, data, (size_t)size);
        c->used += size;
    }
    c->ends[row + 1] = (int32_t)c->used;
}

static void
binary_column_clear(BinaryColumn *c)
{
    Py_XDECREF(c->validity);
    Py_XDECREF(c->offsets);
    Py_XDECREF(c->data);
}

PyDoc_STRVAR(decode_arrow_doc,
"decode_arrow(sections)\n"
"--\n\n"
"Records ``start..stop-1`` of each section (data, pos, end, count, base_offset,\n"
"base_timestamp, fixed_timestamp, start, stop), in order, as Arrow buffers: (rows,\n"
"key validity, key offsets, key data, key nulls, the same four for values, offsets,\n"
"timestamps), int32 offsets and int64 numbers in native byte order; or None when any\n"
"section is not plain (see is_plain_section) or the data passes 2 GiB.");

static PyObject *
decode_arrow(PyObject *module, PyObject *sections)
{
    Py_ssize_t n, i, rows = 0, row = 0;
    int64_t key_bytes = 0, value_bytes = 0;
    BinaryColumn keys = {NULL}, values = {NULL};
    PyObject *offsets = NULL, *timestamps = NULL, *result = NULL;
    int64_t *offset_out, *timestamp_out;

    if (!PyList_CheckExact(sections) || PyList_GET_SIZE(sections) == 0)
        Py_RETURN_NONE;
    n = PyList_GET_SIZE(sections);
    for (i = 0; i < n; i++) { /* check everything, and measure, before allocating */
        Section s;
        if (get_section(PyList_GET_ITEM(sections, i), &s, 1) != OK
                || scan_section(&s, &key_bytes, &value_bytes) != OK)
            Py_RETURN_NONE;
        rows += s.stop - s.start;
        if (key_bytes > INT32_MAX || value_bytes > INT32_MAX || rows > INT32_MAX)
            Py_RETURN_NONE;
    }
    if (binary_column_new(&keys, rows, key_bytes) != OK
            || binary_column_new(&values, rows, value_bytes) != OK)
        goto done;
    offsets = PyBytes_FromStringAndSize(NULL, rows * (Py_ssize_t)sizeof(int64_t));
    timestamps = PyBytes_FromStringAndSize(NULL, rows * (Py_ssize_t)sizeof(int64_t));
    if (offsets == NULL || timestamps == NULL)
        goto done;
    offset_out = (int64_t *)(void *)PyBytes_AS_STRING(offsets);
    timestamp_out = (int64_t *)(void *)PyBytes_AS_STRING(timestamps);
    for (i = 0; i < n; i++) { /* no Python code has run since the checks */
        Section s;
        Py_ssize_t pos, k;
        get_section(PyList_GET_ITEM(sections, i), &s, 1);
        pos = s.pos;
        for (k = 0; k < s.stop; k++) {
            PlainRecord r;
            read_plain_record(s.data, s.end, &pos, k, s.base_timestamp, &r);
            if (k < s.start)
                continue;
            binary_column_put(&keys, row, r.key, r.key_size);
            binary_column_put(&values, row, r.value, r.value_size);
            offset_out[row] = s.base_offset + k;
            timestamp_out[row] = s.fixed ? s.fixed_timestamp : s.base_timestamp + r.timestamp_delta;
            row++;
        }
    }
    result = Py_BuildValue("nOOOnOOOnOO", rows,
                           keys.nulls ? keys.validity : Py_None, keys.offsets, keys.data,
                           keys.nulls,
                           values.nulls ? values.validity : Py_None, values.offsets,
                           values.data, values.nulls, offsets, timestamps);
done:
    binary_column_clear(&keys);
    binary_column_clear(&values);
    Py_XDECREF(offsets);
    Py_XDECREF(timestamps);
    return result;
}

/* Encoding records straight from Arrow's buffer layout, for Producer.send_batch with
 * pyarrow input: keys and values are read in place, no Python bytes per record. A
 * column is (validity or None, offsets, data, first, length, offset width): Arrow's
 * buffers of a binary (width 4) or large binary (width 8) array of ``length`` rows that
 * starts at row ``first`` of them. Every offset is checked against the data before use;
 * anything unexpected is declined. */

typedef struct {
    Py_buffer validity, offsets, data;
    int has_validity, has_offsets, has_data, width;
    Py_ssize_t first, length;
} ArrowColumn;

static void
arrow_column_release(ArrowColumn *c)
{
    if (c->has_validity)
        PyBuffer_Release(&c->validity);
    if (c->has_offsets)
        PyBuffer_Release(&c->offsets);
    if (c->has_data)
        PyBuffer_Release(&c->data);
    c->has_validity = c->has_offsets = c->has_data = 0;
}

/* OK, DECLINE or FAILED; on OK the caller releases the column. */
static int
arrow_column_get(PyObject *spec, ArrowColumn *c)
{
    PyObject **f;
    Py_ssize_t rows_end;
    c->has_validity = c->has_offsets = c->has_data = 0;
    if (!PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 6)
        return DECLINE;
    f = &PyTuple_GET_ITEM(spec, 0);
    if (get_size(f[3], &c->first) != OK || get_size(f[4], &c->length) != OK
            || !PyLong_CheckExact(f[5]))
        return DECLINE;
    c->width = (int)PyLong_AsLong(f[5]);
    if ((c->width != 4 && c->width != 8) || c->first > PY_SSIZE_T_MAX / 16 - c->length)
        return DECLINE;
    rows_end = c->first + c->length;
    if (f[0] != Py_None) {
        if (PyObject_GetBuffer(f[0], &c->validity, PyBUF_SIMPLE) < 0)
            return FAILED;
        c->has_validity = 1;
    }
    if (PyObject_GetBuffer(f[1], &c->offsets, PyBUF_SIMPLE) < 0)
        goto failed;
    c->has_offsets = 1;
    if (PyObject_GetBuffer(f[2], &c->data, PyBUF_SIMPLE) < 0)
        goto failed;
    c->has_data = 1;
    if (c->offsets.len / c->width < rows_end + 1
            || (c->has_validity && c->validity.len < (rows_end + 7) / 8)) {
        arrow_column_release(c);
        return DECLINE;
    }
    return OK;
failed:
    arrow_column_release(c);
    return FAILED;
}

/* Row ``row`` of the column as a Field, its offsets checked against the data. */
static inline int
arrow_column_field(const ArrowColumn *c, Py_ssize_t row, Field *field)
{
    Py_ssize_t at = c->first + row;
    int64_t start, stop;
    if (c->has_validity
            && !(((const unsigned char *)c->validity.buf)[at >> 3] & (1u << (at & 7)))) {
        field->data = NULL;
        field->size = -1;
        return OK;
    }
    if (c->width == 4) {
        int32_t pair[2];
        memcpy(pair, (const char *)c->offsets.buf + at * 4, sizeof pair);
        start = pair[0];
        stop = pair[1];
    } else {
        int64_t pair[2];
        memcpy(pair, (const char *)c->offsets.buf + at * 8, sizeof pair);
        start = pair[0];
        stop = pair[1];
    }
    if (start < 0 || start > stop || stop > c->data.len)
        return DECLINE;
    field->data = (const char *)c->data.buf + start;
    field->size = (Py_ssize_t)(stop - start);
    return OK;
}

PyDoc_STRVAR(encode_arrow_records_doc,
"encode_arrow_records(timestamps, keys, values, start, stop, base_timestamp,\n"
"                     record_count, size, batch_size, max_timestamp)\n"
"--\n\n"
"encode_records for records without headers whose keys and values are Arrow columns\n"
"(validity, offsets, data, first, length, offset width); the same result, or None\n"
"where the Python encoder must decide.");

static PyObject *
encode_arrow_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *timestamps;
    ArrowColumn keys = {0}, values = {0};
    Py_ssize_t start, stop, index = 0;
    int64_t base_timestamp;
    BatchRun batch = {0};
    int status = OK, added;

    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "encode_arrow_records takes 10 arguments");
        return NULL;
    }
    timestamps = args[0];
    if (!is_list_or_tuple(timestamps) || get_size(args[3], &start) != OK
            || get_size(args[4], &stop) != OK || get_int64(args[5], &base_timestamp) != OK
            || get_size(args[6], &batch.count) != OK || get_size(args[7], &batch.size) != OK
            || get_size(args[8], &batch.batch_size) != OK
            || get_int64(args[9], &batch.max_timestamp) != OK
            || start >= stop || stop > PySequence_Fast_GET_SIZE(timestamps))
        Py_RETURN_NONE;
    if ((status = arrow_column_get(args[2], &values)) != OK
            || (status = arrow_column_get(args[1], &keys)) != OK)
        goto done;
    if (stop > values.length || stop > keys.length) {
        status = DECLINE;
        goto done;
    }
    for (index = start; index < stop; index++) {
        int64_t timestamp;
        Record record;
        if (get_int64(PySequence_Fast_GET_ITEM(timestamps, index), &timestamp) != OK
                || (base_timestamp < 0 ? timestamp > INT64_MAX + base_timestamp
                                       : timestamp < INT64_MIN + base_timestamp)
                || arrow_column_field(&keys, index, &record.key) != OK
                || arrow_column_field(&values, index, &record.value) != OK) {
            status = DECLINE;
            break;
        }
        record.headers = NULL;
        size_record(&record, timestamp - base_timestamp, batch.count, 1);
        added = batch_add(&batch, &record, timestamp);
        if (added != ADDED) {
            status = added == FULL ? OK : FAILED;
            break;
        }
    }
done:
    arrow_column_release(&keys);
    arrow_column_release(&values);
    return batch_result(&batch, index, status);
}

/* ------------------------------------------------------------------------------------
 * The consumer's per-record loop: ConsumerRecord tuples straight from decoded columns.
 * ---------------------------------------------------------------------------------- */

/* The record columns both record builders take as args[5..11] (offsets, timestamps, raw
   keys, raw values, headers, keys, values): their common length when they are lists of one
   length whose raw keys and values are bytes or None; -1 when the Python loop must run. */
#define RECORD_COLUMNS 7

static Py_ssize_t
column_length(PyObject *const *columns)
{
    Py_ssize_t count, index, column;
    for (column = 0; column < RECORD_COLUMNS; column++)
        if (!PyList_CheckExact(columns[column]))
            return -1;
    count = PyList_GET_SIZE(columns[0]);
    for (column = 1; column < RECORD_COLUMNS; column++)
        if (PyList_GET_SIZE(columns[column]) != count)
            return -1;
    for (index = 0; index < count; index++) {
        PyObject *key = PyList_GET_ITEM(columns[2], index);
        PyObject *value = PyList_GET_ITEM(columns[3], index);
        if ((key != Py_None && !PyBytes_CheckExact(key))
                || (value != Py_None && !PyBytes_CheckExact(value)))
            return -1;
    }
    return count;
}

PyDoc_STRVAR(consumer_records_doc,
"consumer_records(cls, topic, partition, timestamp_type, leader_epoch, offsets,\n"
"                 timestamps, raw_keys, raw_values, headers, keys, values)\n"
"--\n\n"
"One ``cls`` tuple per record (topic, partition, offset, timestamp, timestamp_type,\n"
"key, value, headers, leader_epoch, key size, value size, -1) from parallel lists, and\n"
"the bytes of all non-null raw keys and values: (records, size). ``keys``/``values``\n"
"are what the record carries (the raw ones, or deserialized); the sizes come from the\n"
"raw ones (-1 for null). None where the Python loop must run.");

static PyObject *
consumer_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyTypeObject *cls;
    PyObject *offsets, *timestamps, *raw_keys, *raw_values, *headers, *keys, *values;
    PyObject *records, *minus_one;
    Py_ssize_t count, index, total = 0;

    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "consumer_records takes 12 arguments");
        return NULL;
    }
    cls = (PyTypeObject *)args[0];
    offsets = args[5];
    timestamps = args[6];
    raw_keys = args[7];
    raw_values = args[8];
    headers = args[9];
    keys = args[10];
    values = args[11];
    /* A plain tuple layout (a NamedTuple: no extra fields) and lists of one length. */
    if (!PyType_Check(args[0]) || !PyType_IsSubtype(cls, &PyTuple_Type)
            || cls->tp_basicsize != PyTuple_Type.tp_basicsize
            || cls->tp_itemsize != PyTuple_Type.tp_itemsize
            || (count = column_length(args + 5)) < 0)
        Py_RETURN_NONE;

    records = PyList_New(count);
    minus_one = PyLong_FromLong(-1);
    if (records == NULL || minus_one == NULL)
        goto failed;
    for (index = 0; index < count; index++) {
        PyObject *raw_key = PyList_GET_ITEM(raw_keys, index);
        PyObject *raw_value = PyList_GET_ITEM(raw_values, index);
        Py_ssize_t key_size = raw_key == Py_None ? -1 : PyBytes_GET_SIZE(raw_key);
        Py_ssize_t value_size = raw_value == Py_None ? -1 : PyBytes_GET_SIZE(raw_value);
        PyObject *record = cls->tp_alloc(cls, 12);
        PyObject *key_size_object, *value_size_object;
        if (record == NULL)
            goto failed;
        PyList_SET_ITEM(records, index, record);
        key_size_object = PyLong_FromSsize_t(key_size);
        value_size_object = PyLong_FromSsize_t(value_size);
        if (key_size_object == NULL || value_size_object == NULL) {
            Py_XDECREF(key_size_object);
            Py_XDECREF(value_size_object);
            goto failed;
        }
        total += (key_size > 0 ? key_size : 0) + (value_size > 0 ? value_size : 0);
        PyTuple_SET_ITEM(record, 0, Py_NewRef(args[1]));
        PyTuple_SET_ITEM(record, 1, Py_NewRef(args[2]));
        PyTuple_SET_ITEM(record, 2, Py_NewRef(PyList_GET_ITEM(offsets, index)));
        PyTuple_SET_ITEM(record, 3, Py_NewRef(PyList_GET_ITEM(timestamps, index)));
        PyTuple_SET_ITEM(record, 4, Py_NewRef(args[3]));
        PyTuple_SET_ITEM(record, 5, Py_NewRef(PyList_GET_ITEM(keys, index)));
        PyTuple_SET_ITEM(record, 6, Py_NewRef(PyList_GET_ITEM(values, index)));
        PyTuple_SET_ITEM(record, 7, Py_NewRef(PyList_GET_ITEM(headers, index)));
        PyTuple_SET_ITEM(record, 8, Py_NewRef(args[4]));
        PyTuple_SET_ITEM(record, 9, key_size_object);
        PyTuple_SET_ITEM(record, 10, value_size_object);
        PyTuple_SET_ITEM(record, 11, Py_NewRef(minus_one));
    }
    Py_DECREF(minus_one);
    return Py_BuildValue("Nn", records, total);

failed:
    Py_XDECREF(records);
    Py_XDECREF(minus_one);
    return NULL;
}

PyDoc_STRVAR(slot_records_doc,
"slot_records(cls, names, topic, partition, timestamp_type, offsets, timestamps,\n"
"             raw_keys, raw_values, headers, keys, values)\n"
"--\n\n"
"One ``cls`` object per record, made as ``object.__new__(cls)`` with its slots stored (no\n"
"``__init__`` call), for a class of ``__slots__`` such as a ``dataclass(slots=True)``.\n"
"``names`` names its 11 slots in this order: topic, partition, offset, timestamp,\n"
"timestamp type, key, value, checksum (stored as None), serialized key size, serialized\n"
"value size (from the raw ones, -1 for null), headers. None where the Python loop must\n"
"run (another class layout, lists of different lengths, a raw key or value not bytes).");

#define SLOT_FIELDS 11

/* Where each of ``names``' slots sits in a ``cls`` object: its own writable object slots
   (member descriptors in its dict, within its basic size). 0 when any is not one. */
static int
slot_offsets(PyTypeObject *cls, PyObject *names, Py_ssize_t *offsets)
{
    Py_ssize_t field;
    if (cls->tp_dict == NULL || cls->tp_dictoffset != 0 || cls->tp_itemsize != 0)
        return 0;
    for (field = 0; field < SLOT_FIELDS; field++) {
        PyObject *name = PyTuple_GET_ITEM(names, field);
        PyObject *descr = PyUnicode_Check(name)
            ? PyDict_GetItemWithError(cls->tp_dict, name) : NULL;
        PyMemberDef *member;
        if (descr == NULL)
            return PyErr_Occurred() ? -1 : 0;
        if (!Py_IS_TYPE(descr, &PyMemberDescr_Type)
                || ((PyMemberDescrObject *)descr)->d_common.d_type != cls)
            return 0;
        member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY)
                || member->offset < (Py_ssize_t)sizeof(PyObject)
                || member->offset + (Py_ssize_t)sizeof(PyObject *) > cls->tp_basicsize)
            return 0;
        offsets[field] = member->offset;
    }
    return 1;
}

static PyObject *
slot_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyTypeObject *cls;
    PyObject *names, *offsets, *timestamps, *raw_keys, *raw_values, *headers, *keys, *values;
    PyObject *records;
    Py_ssize_t slot[SLOT_FIELDS], count, index;
    int found;

    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "slot_records takes 12 arguments");
        return NULL;
    }
    names = args[1];
    offsets = args[5];
    timestamps = args[6];
    raw_keys = args[7];
    raw_values = args[8];
    headers = args[9];
    keys = args[10];
    values = args[11];
    if (!PyType_Check(args[0]) || !PyTuple_CheckExact(names)
            || PyTuple_GET_SIZE(names) != SLOT_FIELDS
            || (count = column_length(args + 5)) < 0)
        Py_RETURN_NONE;
    cls = (PyTypeObject *)args[0];
    found = slot_offsets(cls, names, slot);
    if (found < 0)
        return NULL;
    if (found == 0)
        Py_RETURN_NONE;

    records = PyList_New(count);
    if (records == NULL)
        return NULL;
    for (index = 0; index < count; index++) {
        PyObject *raw_key = PyList_GET_ITEM(raw_keys, index);
        PyObject *raw_value = PyList_GET_ITEM(raw_values, index);
        PyObject *key_size = PyLong_FromSsize_t(
            raw_key == Py_None ? -1 : PyBytes_GET_SIZE(raw_key));
        PyObject *value_size = PyLong_FromSsize_t(
            raw_value == Py_None ? -1 : PyBytes_GET_SIZE(raw_value));
        PyObject *record = NULL;
        if (key_size != NULL && value_size != NULL)
            record = cls->tp_alloc(cls, 0); /* zeroed: every slot starts NULL */
        if (record == NULL) {
            Py_XDECREF(key_size);
            Py_XDECREF(value_size);
            Py_DECREF(records);
            return NULL;
        }
#define STORE(field, object) (*(PyObject **)((char *)record + slot[field]) = (object))
        STORE(0, Py_NewRef(args[2]));
        STORE(1, Py_NewRef(args[3]));
        STORE(2, Py_NewRef(PyList_GET_ITEM(offsets, index)));
        STORE(3, Py_NewRef(PyList_GET_ITEM(timestamps, index)));
        STORE(4, Py_NewRef(args[4]));
        STORE(5, Py_NewRef(PyList_GET_ITEM(keys, index)));
        STORE(6, Py_NewRef(PyList_GET_ITEM(values, index)));
        STORE(7, Py_NewRef(Py_None));
        STORE(8, key_size);
        STORE(9, value_size);
        STORE(10, Py_NewRef(PyList_GET_ITEM(headers, index)));
#undef STORE
        PyList_SET_ITEM(records, index, record);
    }
    return records;
}

static PyMethodDef methods[] = {
    {"check_records", check_records, METH_VARARGS, check_records_doc},
    {"decode_records", decode_records, METH_VARARGS, decode_records_doc},
    {"encode_records", (PyCFunction)(void (*)(void))encode_records, METH_FASTCALL,
     encode_records_doc},
    {"consumer_records", (PyCFunction)(void (*)(void))consumer_records, METH_FASTCALL,
     consumer_records_doc},
    {"slot_records", (PyCFunction)(void (*)(void))slot_records, METH_FASTCALL,
     slot_records_doc},
    {"is_plain_section", is_plain_section, METH_O, is_plain_section_doc},
    {"decode_arrow", decode_arrow, METH_O, decode_arrow_doc},
    {"encode_arrow_records", (PyCFunction)(void (*)(void))encode_arrow_records, METH_FASTCALL,
     encode_arrow_records_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "kafkalite.records._speedups",
    "The compiled record codec (see kafkalite.records.accelerator).",
    0,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *module;
    if (PyType_Ready(&RecordsWriterType) < 0)
        return NULL;
    module = PyModule_Create(&module_def);
    if (module != NULL && (PyModule_AddIntConstant(module, "API_VERSION", API_VERSION) < 0
            || PyModule_AddObjectRef(module, "RecordsWriter",
                                     (PyObject *)&RecordsWriterType) < 0)) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

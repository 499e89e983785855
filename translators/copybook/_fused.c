/* The fused copybook kernel: every compiled field of every record of a batch, in one pass.
 *
 * Built at install by setup.py (an optional extension: if the system has no C compiler the
 * install goes on and the NumPy kernels of kernels.py decode everything). The Python side
 * (kernels.FusedKernel) compiles a layout into a "program": one row of PROGRAM_WIDTH int64
 * per output column, and calls run() once per batch. For each record, for each column, for
 * each instance of the column in the record (an OCCURS element), the field's bytes are read
 * once and its value written to the column's output buffer:
 *
 *   zoned, packed, binary -> int32, int64 or decimal128 (little-endian, sign-extended)
 *   text (a single-byte code page) -> UTF-8 bytes + int32 offsets of an Arrow string array,
 *                                     trimmed as Java's String.trim() (chars <= U+0020)
 *
 * and a flag byte: 0 the value is good, 1 the value is null (an all-0x00 field under
 * improved null detection), 2 the storage form is not one the kernel knows (blanks, a bad
 * sign nibble, an overflow): Python decodes those with the field's own codec, which decides
 * the value or the bad-data reason (the per-record decoder's semantics stay in one place).
 * counts[c] is the number of non-zero flags of column c; the text columns are packed together
 * at the end (see counts[ncols + c]), so a batch holds no unused text capacity.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { K_ZONED = 1, K_PACKED = 2, K_BINARY = 3, K_TEXT = 4 };
enum {
    P_KIND, P_SIZE, P_COUNT, P_INSTANCES, P_WIDTH, P_SIGNED, P_SIGNPOS, P_LIMIT,
    P_VALUES, P_FLAGS, P_TEXTOFF, P_OPTS, PROGRAM_WIDTH
};
#define OPT_NULL_ZERO 16 /* all-0x00 field -> null (improved null detection) */
/* per byte: UTF-8 (4 bytes), length, "is trimmed", first byte, "is multi-byte"; then the space
 * byte eight times */
#define TABLE_BYTES (256 * 4 + 256 * 4 + 8)

static inline void put(uint8_t *values, int64_t idx, int64_t width, int64_t v) {
    if (width == 8) {
        memcpy(values + idx * 8, &v, 8);
    } else if (width == 4) {
        int32_t w = (int32_t)v;
        memcpy(values + idx * 4, &w, 4);
    } else { /* 16: decimal128, little endian, sign-extended */
        int64_t hi = v < 0 ? -1 : 0;
        memcpy(values + idx * 16, &v, 8);
        memcpy(values + idx * 16 + 8, &hi, 8);
    }
}

static inline int all_zero(const uint8_t *p, int64_t size) {
    for (int64_t i = 0; i < size; i++)
        if (p[i]) return 0;
    return 1;
}

/* digit tables: 255 where the byte is not a digit (pair) of the form */
static uint8_t ZONED_DIGIT[256], PACKED_PAIR[256];

static void init_tables(void) {
    memset(ZONED_DIGIT, 255, 256);
    memset(PACKED_PAIR, 255, 256);
    for (int d = 0; d < 10; d++) ZONED_DIGIT[0xF0 + d] = (uint8_t)d;
    for (int h = 0; h < 10; h++)
        for (int l = 0; l < 10; l++) PACKED_PAIR[(h << 4) | l] = (uint8_t)(h * 10 + l);
}

/* 0 good (*out set), 2 not a canonical zoned number */
static inline int zoned(const uint8_t *p, int64_t size, int64_t signpos, int64_t *out) {
    int64_t v = 0, from = 0, to = size;
    unsigned worst = 0, sd = 0;
    int neg = 0;
    if (signpos >= 0) { /* the overpunched byte (first or last): C0-C9 / F0-F9 positive, D0-D9 negative */
        unsigned b = p[signpos], hi = b >> 4;
        sd = b & 15;
        if (sd > 9 || (hi != 0xF && hi != 0xC && hi != 0xD)) return 2;
        neg = hi == 0xD;
        if (signpos == 0) {
            v = sd;
            from = 1;
        } else {
            to = size - 1;
        }
    }
    int64_t i = from;
    for (; i + 8 <= to; i += 8) { /* eight digits at once (SWAR): zones F, digits 0-9 */
        uint64_t x;
        memcpy(&x, p + i, 8);
        uint64_t d = x & 0x0F0F0F0F0F0F0F0FULL;
        if ((x & 0xF0F0F0F0F0F0F0F0ULL) != 0xF0F0F0F0F0F0F0F0ULL ||
            ((d + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL))
            return 2;
        d = (d * 10 + (d >> 8)) & 0x00FF00FF00FF00FFULL; /* little-endian load: first digit lowest */
        d = (d * 100 + (d >> 16)) & 0x0000FFFF0000FFFFULL;
        d = (d * 10000 + (d >> 32)) & 0xFFFFFFFFULL;
        v = v * 100000000 + (int64_t)d;
    }
    for (; i < to; i++) {
        unsigned d = ZONED_DIGIT[p[i]];
        worst |= d;
        v = v * 10 + d;
    }
    if (worst & 0x80) return 2;
    if (signpos > 0) v = v * 10 + sd;
    *out = neg ? -v : v;
    return 0;
}

static inline int packed(const uint8_t *p, int64_t size, int sgn, int64_t limit, int64_t *out) {
    int64_t v = 0;
    unsigned worst = 0;
    for (int64_t i = 0; i < size - 1; i++) {
        unsigned d = PACKED_PAIR[p[i]];
        worst |= d;
        v = v * 100 + d;
    }
    unsigned hi = p[size - 1] >> 4, s = p[size - 1] & 15;
    if ((worst & 0x80) || hi > 9 || s < 0xA) return 2;
    int neg = (s == 0xB || s == 0xD);
    if (neg && !sgn) return 2;
    v = v * 10 + hi;
    if (v >= limit) return 2;
    *out = neg ? -v : v;
    return 0;
}

static inline int binary(const uint8_t *p, int64_t size, int sgn, int64_t limit, int64_t *out) {
    uint64_t u = 0;
    for (int64_t i = 0; i < size; i++) u = (u << 8) | p[i];
    int64_t v;
    if (sgn && size < 8) {
        int shift = (int)(64 - 8 * size);
        v = (int64_t)(u << shift) >> shift;
    } else {
        v = (int64_t)u;
    }
    if (limit) { /* COMP: the value must fit the field's type (limit < 0: any int64 does) */
        if (v == INT64_MIN) return 2;
        if (limit > 0 && (v < 0 ? -v : v) >= limit) return 2;
    }
    *out = v;
    return 0;
}

typedef struct {
    int64_t kind, size, count, width, sgn, signpos, limit, opts;
    const int32_t *offs;
    uint8_t *values, *flags;
    int32_t *textoff;
    const uint8_t *table;
    int64_t cursor, bad;
} column_t;

static void decode_text(column_t *col, const uint8_t *p, int64_t idx) {
    const uint8_t *t = col->table, *len = t + 1024, *trim = t + 1280;
    const int64_t size = col->size, policy = col->opts & 15;
    int64_t lo = 0, hi = size;
    uint8_t *out = col->values + col->cursor, *o = out;
    uint8_t st = 0;
    if ((col->opts & OPT_NULL_ZERO) && p[0] == 0 && all_zero(p, size)) {
        st = 1;
        hi = 0;
    } else {
        if (policy == 1 || policy == 2)
            while (lo < hi && trim[p[lo]]) lo++;
        if (policy == 1 || policy == 3) {
            uint64_t spaces, tail;
            memcpy(&spaces, t + 2048, 8);
            while (hi - lo >= 8 && (memcpy(&tail, p + hi - 8, 8), tail == spaces)) hi -= 8; /* padding */
            while (hi > lo && trim[p[hi - 1]]) hi--;
        }
    }
    const uint8_t *one = t + 1536, *multi = t + 1792; /* first UTF-8 byte; 1 if there are more */
    uint8_t wide = 0;
    for (int64_t i = lo; i < hi; i++) {
        const uint8_t b = p[i];
        o[i - lo] = one[b];
        wide |= multi[b];
    }
    if (!wide) {
        o += hi - lo;
    } else { /* characters beyond U+007F: their whole UTF-8 sequences */
        for (int64_t i = lo; i < hi; i++) {
            const uint8_t b = p[i];
            memcpy(o, t + b * 4, 4);
            o += len[b];
        }
    }
    col->cursor += o - out;
    col->textoff[idx + 1] = (int32_t)col->cursor;
    col->flags[idx] = st;
    col->bad += st != 0;
}

static PyObject *run(PyObject *self, PyObject *args) {
    Py_buffer data, program, instances, tables, values, flags, textoff, text, counts;
    Py_ssize_t n, record_size;
    if (!PyArg_ParseTuple(args, "y*nny*y*y*w*w*w*w*w*", &data, &n, &record_size, &program, &instances,
                          &tables, &values, &flags, &textoff, &text, &counts))
        return NULL;
    PyObject *result = NULL;
    const int64_t *prog = (const int64_t *)program.buf;
    Py_ssize_t ncols = program.len / (Py_ssize_t)(sizeof(int64_t) * PROGRAM_WIDTH);
    column_t *cols = NULL;
    if (data.len < n * record_size || (2 * ncols + 1) * (Py_ssize_t)sizeof(int64_t) > counts.len) {
        PyErr_SetString(PyExc_ValueError, "buffers smaller than the program needs");
        goto done;
    }
    cols = (column_t *)PyMem_Calloc((size_t)(ncols ? ncols : 1), sizeof(column_t));
    if (!cols) {
        PyErr_NoMemory();
        goto done;
    }
    const uint8_t *base = (const uint8_t *)data.buf;
    const int32_t *inst = (const int32_t *)instances.buf;
    const uint8_t *tab = (const uint8_t *)tables.buf;
    uint8_t *vals = (uint8_t *)values.buf, *flg = (uint8_t *)flags.buf, *txt = (uint8_t *)text.buf;
    int32_t *toff = (int32_t *)textoff.buf;
    int64_t *cnt = (int64_t *)counts.buf;
    for (Py_ssize_t c = 0; c < ncols; c++) {
        const int64_t *pc = prog + c * PROGRAM_WIDTH;
        column_t *col = &cols[c];
        col->kind = pc[P_KIND];
        col->size = pc[P_SIZE];
        col->count = pc[P_COUNT];
        col->width = pc[P_WIDTH];
        col->sgn = pc[P_SIGNED];
        col->signpos = pc[P_SIGNPOS];
        col->limit = pc[P_LIMIT];
        col->opts = pc[P_OPTS];
        col->offs = inst + pc[P_INSTANCES];
        col->flags = flg + pc[P_FLAGS];
        col->cursor = col->bad = 0;
        if (col->kind == K_TEXT) {
            col->values = txt + pc[P_VALUES];
            col->table = tab + pc[P_WIDTH] * TABLE_BYTES;
            col->textoff = toff + pc[P_TEXTOFF];
            col->textoff[0] = 0;
        } else {
            col->values = vals + pc[P_VALUES];
        }
    }

    for (Py_ssize_t c = 0; c < ncols; c++) { /* no field may reach past its record */
        const column_t *col = &cols[c];
        const Py_ssize_t first = prog[c * PROGRAM_WIDTH + P_INSTANCES];
        if (first < 0 || (first + col->count) * (Py_ssize_t)sizeof(int32_t) > instances.len) {
            PyErr_SetString(PyExc_ValueError, "the program names instances it does not have");
            goto done;
        }
        for (int64_t j = 0; j < col->count; j++) {
            if (col->offs[j] < 0 || col->offs[j] + col->size > record_size || col->size < 1) {
                PyErr_Format(PyExc_ValueError, "a field at byte %d (%lld bytes) does not fit a %zd-byte record",
                             (int)col->offs[j], (long long)col->size, record_size);
                goto done;
            }
        }
    }

    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n; r++) {
        const uint8_t *rec = base + r * record_size;
        for (Py_ssize_t c = 0; c < ncols; c++) {
            column_t *col = &cols[c];
            const int64_t m = col->count, size = col->size, kind = col->kind;
            int64_t idx = (int64_t)r * m;
            for (int64_t j = 0; j < m; j++, idx++) {
                const uint8_t *p = rec + col->offs[j];
                int64_t v = 0;
                int st;
                switch (kind) {
                case K_TEXT:
                    decode_text(col, p, idx);
                    continue;
                case K_ZONED:
                    st = zoned(p, size, col->signpos, &v);
                    break;
                case K_PACKED:
                    st = packed(p, size, (int)col->sgn, col->limit, &v);
                    break;
                default:
                    st = binary(p, size, (int)col->sgn, col->limit, &v);
                }
                if (st) {
                    if ((col->opts & OPT_NULL_ZERO) && all_zero(p, size)) st = 1;
                    v = 0;
                    col->bad++;
                }
                col->flags[idx] = (uint8_t)st;
                put(col->values, idx, col->width, v);
            }
        }
    }
    Py_END_ALLOW_THREADS
    /* the text columns' regions (sized for four UTF-8 bytes a character) moved together:
     * counts[ncols + c] is where column c's text starts now, counts[2 * ncols] their total */
    int64_t at = 0;
    for (Py_ssize_t c = 0; c < ncols; c++) {
        cnt[c] = cols[c].bad;
        cnt[ncols + c] = at;
        if (cols[c].kind == K_TEXT) {
            memmove(txt + at, cols[c].values, (size_t)cols[c].cursor);
            at += cols[c].cursor;
        }
    }
    cnt[2 * ncols] = at;
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(cols);
    PyBuffer_Release(&data);
    PyBuffer_Release(&program);
    PyBuffer_Release(&instances);
    PyBuffer_Release(&tables);
    PyBuffer_Release(&values);
    PyBuffer_Release(&flags);
    PyBuffer_Release(&textoff);
    PyBuffer_Release(&text);
    PyBuffer_Release(&counts);
    return result;
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS,
     "run(data, n, record_size, program, instances, tables, values, flags, text_offsets, text, counts)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fused", "The fused copybook kernel.", -1, methods};

PyMODINIT_FUNC PyInit__fused(void) {
    init_tables();
    return PyModule_Create(&module);
}

/* The fused copybook kernel: every compiled field of every record of a batch, in one pass.
 *
 * Built at install by setup.py (an optional extension: if the system has no C compiler the
 * install goes on and the NumPy kernels of kernels.py decode everything). The Python side
 * (kernels.FusedKernel) compiles a layout into a "program": one row of PROGRAM_WIDTH int64
 * per output column, and calls run() once per batch. run() flattens the program into one
 * operation per field instance of a record (a column's OCCURS elements are instances), then
 * for each record runs the operations in order: the record's bytes are read once, and each
 * value is written to its column's output buffer:
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
 *
 * How it is fast (docs/performance.md has the profile):
 *   - records are taken in tiles of 64 (in the L1 cache); for each tile, each column runs
 *     its own loop over the tile's records, so a column's parameters stay in registers and
 *     its branches go the same way every time (a loop over one record's fields, each of
 *     another kind and size, mispredicts);
 *   - zoned digits eight at a time (SWAR: one 64-bit load, a validity test of all eight
 *     bytes at once, three multiply-adds), the rest and packed digit pairs through 256-entry
 *     tables, int64 / uint64 accumulation with one validity test at the end, no branch per
 *     digit;
 *   - text is translated through a 256-byte table (the first UTF-8 byte of each code point:
 *     bytes with the high bit set are the multi-byte characters, checked once per field);
 *     on CPUs with AVX-512 VBMI (checked at run time; the build stays generic) a field of up
 *     to 64 bytes is loaded, translated (two 128-byte table permutes), trimmed (bit masks)
 *     and stored in a handful of instructions; with AVX2 only, fields of more than 32 bytes
 *     are translated 32 bytes at a time (16 in-lane shuffles, one per high nibble) and trimmed by
 *     bit masks (use_text_path() picks a path; the property test runs each);
 *   - the GIL is released for the whole batch; Python only wraps the buffers as Arrow arrays.
 */
#define PY_SSIZE_T_CLEAN
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
/* the SWAR loads (zoned digits, short text) and the Arrow buffers assume little-endian words;
 * the extension is optional (setup.py): elsewhere the NumPy kernels decode */
#error "the fused kernel is built on little-endian machines only"
#endif
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define HAVE_X86_SIMD 1
#include <immintrin.h>
#else
#define HAVE_X86_SIMD 0
#endif

enum { K_ZONED = 1, K_PACKED = 2, K_BINARY = 3, K_TEXT = 4 };
enum {
    P_KIND, P_SIZE, P_COUNT, P_INSTANCES, P_WIDTH, P_SIGNED, P_SIGNPOS, P_LIMIT,
    P_VALUES, P_FLAGS, P_TEXTOFF, P_OPTS, PROGRAM_WIDTH
};
#define OPT_NULL_ZERO 16 /* all-0x00 field -> null (improved null detection) */
/* per byte: UTF-8 (4 bytes), length, "is trimmed", first byte, "is multi-byte"; then the space
 * byte eight times */
#define TABLE_BYTES (256 * 4 + 256 * 4 + 8)
/* bytes the text kernel may write past a value's end (a whole 64-byte vector); kernels.py
 * gives every text column this much room beyond its values */
#define TEXT_SLACK 64

#define ONES 0x0101010101010101ULL
#define HIGH 0x8080808080808080ULL

static inline uint64_t load64(const uint8_t *p) {
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

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

/* 0 good (*out set), 2 not a canonical packed number: digit pairs through a 256-entry table
 * (255: not two digit nibbles), uint64 accumulation (19 digits fit), one test at the end */
static inline int packed(const uint8_t *p, int64_t size, int sgn, int64_t limit, int64_t *out) {
    const int64_t pairs = size - 1;
    uint64_t v = 0;
    unsigned worst = 0;
    for (int64_t i = 0; i < pairs; i++) {
        unsigned d = PACKED_PAIR[p[i]];
        worst |= d;
        v = v * 100 + d;
    }
    unsigned hi = p[pairs] >> 4, s = p[pairs] & 15;
    if ((worst & 0x80) || hi > 9 || s < 0xA) return 2;
    int neg = (s == 0xB || s == 0xD);
    if (neg && !sgn) return 2;
    v = v * 10 + hi;
    if (v >= (uint64_t)limit) return 2;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

static inline int binary(const uint8_t *p, int64_t size, int sgn, int64_t limit, int64_t *out) {
    uint64_t u = 0;
    if (size == 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        u = __builtin_bswap32(w);
    } else if (size == 2) {
        uint16_t w;
        memcpy(&w, p, 2);
        u = __builtin_bswap16(w);
    } else if (size == 8) {
        u = __builtin_bswap64(load64(p));
    } else {
        for (int64_t i = 0; i < size; i++) u = (u << 8) | p[i];
    }
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

/* text with characters beyond U+007F: the whole UTF-8 sequences of p[lo..hi) */
static inline int64_t text_wide(const uint8_t *t, const uint8_t *p, int64_t lo, int64_t hi, uint8_t *o) {
    const uint8_t *len = t + 1024;
    uint8_t *start = o;
    for (int64_t i = lo; i < hi; i++) {
        const uint8_t b = p[i];
        memcpy(o, t + b * 4, 4);
        o += len[b];
    }
    return o - start;
}

/* one text field: its UTF-8 at o (trimmed per policy: 1 both, 2 left, 3 right), the bytes
 * written; *st = 1 when it is null (all 0x00 under improved null detection) */
static inline __attribute__((always_inline)) int64_t text_field(const uint8_t *t, const uint8_t *p, int64_t size, int64_t policy, int nullzero,
                                 uint8_t *o, uint8_t *st) {
    const uint8_t *trim = t + 1280, *one = t + 1536; /* first UTF-8 byte */
    int64_t lo = 0, hi = size;
    if (nullzero && p[0] == 0 && all_zero(p, size)) {
        *st = 1;
        return 0;
    }
    if (policy == 1 || policy == 2)
        while (lo < hi && trim[p[lo]]) lo++;
    if (policy == 1 || policy == 3) {
        const uint64_t spaces = load64(t + 2048);
        while (hi - lo >= 8 && load64(p + hi - 8) == spaces) hi -= 8; /* padding */
        while (hi > lo && trim[p[hi - 1]]) hi--;
    }
    uint64_t acc = 0;
    int64_t i = lo;
    for (; i + 8 <= hi; i += 8) {
        const uint64_t w = (uint64_t)one[p[i]] | (uint64_t)one[p[i + 1]] << 8 | (uint64_t)one[p[i + 2]] << 16 |
                           (uint64_t)one[p[i + 3]] << 24 | (uint64_t)one[p[i + 4]] << 32 |
                           (uint64_t)one[p[i + 5]] << 40 | (uint64_t)one[p[i + 6]] << 48 |
                           (uint64_t)one[p[i + 7]] << 56;
        memcpy(o + (i - lo), &w, 8);
        acc |= w;
    }
    for (; i < hi; i++) {
        const uint8_t c = one[p[i]];
        o[i - lo] = c;
        acc |= c;
    }
    /* a first UTF-8 byte with the high bit: a character beyond U+007F */
    return (acc & HIGH) ? text_wide(t, p, lo, hi, o) : hi - lo;
}

/* the bytes [lo, hi) of a field of size bytes that the trimming policy keeps (1 both sides, 2
 * left, 3 right, else none), from the first and one past the last byte that is not trimmed
 * (any: whether there is one) */
static inline void trim_bounds(int any, uint64_t first, uint64_t last, int64_t policy, int64_t size, uint64_t *lo,
                               uint64_t *hi) {
    *lo = 0;
    *hi = (uint64_t)size;
    if (policy == 1) { /* both sides: nothing kept is empty */
        *lo = any ? first : 0;
        *hi = any ? last : 0;
    } else if (policy == 3) {
        *hi = any ? last : 0;
    } else if (policy == 2) {
        *lo = any ? first : (uint64_t)size;
    }
}

#if HAVE_X86_SIMD
#define SIMD_TARGET __attribute__((target("avx512f,avx512bw,avx512vbmi,bmi,bmi2,lzcnt,popcnt")))

/* text_field for a field of up to 64 bytes with AVX-512 VBMI: load, translate, trim, store,
 * without a branch that depends on the value (a column of one-byte flags, Y / N / blank,
 * mispredicted a third of its values with branches on "blank" and "trimmed on the left").
 * nullzero: 1 the code page's byte 0x00 is a character <= U+0020 (every EBCDIC page: an
 * all-0x00 field trims to nothing), 2 it is not (then tested first, with a branch) */
SIMD_TARGET static inline int64_t text_field_simd(const uint8_t *p, int64_t size, int64_t policy,
                                                  int nullzero, uint8_t *o, uint8_t *st, const __m512i tab[4],
                                                  const __m512i shift, const uint8_t *end, const uint8_t *t) {
    const __mmask64 field = _bzhi_u64(~0ULL, (unsigned)size);
    /* a plain 64-byte load where the batch has 64 bytes from p, the field's bytes kept by
     * an AND: a masked load (vmovdqu8 {k}{z}) stalled here (this machine's AMD EPYC: the
     * whole kernel 1.5x slower than the portable path, 37 % of its samples on that load);
     * gcc folds _mm512_maskz_mov_epi8 of a load back into one, hence the AND */
    const __m512i raw = p + 64 <= end ? _mm512_and_si512(_mm512_loadu_si512((const void *)p), _mm512_movm_epi8(field))
                                      : _mm512_maskz_loadu_epi8(field, p);
    const int zero = nullzero && _mm512_test_epi8_mask(raw, raw) == 0; /* all 0x00 (the bytes past size are 0) */
    if (nullzero == 2 && zero) {
        *st = 1;
        return 0;
    }
    const __m512i low = _mm512_permutex2var_epi8(tab[0], raw, tab[1]);  /* bytes 00-7F */
    const __m512i high = _mm512_permutex2var_epi8(tab[2], raw, tab[3]); /* bytes 80-FF */
    const __m512i out = _mm512_mask_blend_epi8(_mm512_movepi8_mask(raw), low, high);
    /* the first UTF-8 byte is <= 0x20 exactly when the character is (multi-byte ones start >= 0xC2) */
    const __mmask64 keep = _mm512_mask_cmpgt_epu8_mask(field, out, _mm512_set1_epi8(0x20));
    const uint64_t first = _tzcnt_u64(keep), last = 64 - _lzcnt_u64(keep); /* 64 and 0 when none is kept */
    uint64_t lo, hi;
    trim_bounds(keep != 0, first, last, policy, size, &lo, &hi);
    const __mmask64 kept = _bzhi_u64(~0ULL, (unsigned)hi) & ~_bzhi_u64(~0ULL, (unsigned)lo);
    if (__builtin_expect((_mm512_movepi8_mask(out) & kept) != 0, 0)) /* characters beyond U+007F */
        return text_wide(t, p, (int64_t)lo, (int64_t)hi, o);
    if (lo) /* move byte lo to the front */
        _mm512_storeu_si512((void *)o, _mm512_permutexvar_epi8(_mm512_add_epi8(shift, _mm512_set1_epi8((char)lo)), out));
    else /* the 64-byte store may write past the value (TEXT_SLACK) */
        _mm512_storeu_si512((void *)o, out);
    *st = (uint8_t)zero;
    return zero ? 0 : (int64_t)(hi - lo);
}

#define AVX2_TARGET __attribute__((target("avx2,bmi,bmi2,lzcnt,popcnt")))

/* 32 bytes through a 256-entry table without a byte permute over 256 entries (AVX2 has none):
 * lut[h] holds the table's 16 entries of high nibble h in both lanes; for each h, the bytes
 * whose high nibble is h take the shuffle of lut[h] by their low nibble */
AVX2_TARGET static inline __m256i translate32(const __m256i x, const __m256i lut[16]) {
    const __m256i nib = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_and_si256(x, nib);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), nib);
    __m256i r = _mm256_shuffle_epi8(lut[0], lo);
    for (int h = 1; h < 16; h++)
        r = _mm256_blendv_epi8(r, _mm256_shuffle_epi8(lut[h], lo), _mm256_cmpeq_epi8(hi, _mm256_set1_epi8((char)h)));
    return r;
}

/* bit i set where byte i of the first UTF-8 bytes is > 0x20 (a character that is not trimmed) */
AVX2_TARGET static inline uint32_t kept32(const __m256i out) {
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_max_epu8(out, _mm256_set1_epi8(0x21)), out));
}

/* text_field_simd for CPUs with AVX2 but without AVX-512 VBMI, for a field of up to 64 bytes
 * (one or two 32-byte vectors; TEXT_AVX2 says which sizes take it) with 64 bytes of the batch from p: translate, trim by bit
 * masks, store, without a branch on the value (the caller takes text_field otherwise) */
AVX2_TARGET static inline int64_t text_field_avx2(const uint8_t *p, int64_t size, int64_t policy, int nullzero,
                                                  uint8_t *o, uint8_t *st, const __m256i lut[16], const uint8_t *t) {
    const uint64_t field = _bzhi_u64(~0ULL, (unsigned)size);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i a = _mm256_loadu_si256((const __m256i *)p);
    const __m256i outa = translate32(a, lut);
    uint64_t nonzero = (uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, zero));
    uint64_t keep = kept32(outa), high = (uint32_t)_mm256_movemask_epi8(outa);
    __m256i outb = zero;
    if (size > 32) {
        const __m256i b = _mm256_loadu_si256((const __m256i *)(p + 32));
        outb = translate32(b, lut);
        nonzero |= (uint64_t)(uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, zero)) << 32;
        keep |= (uint64_t)kept32(outb) << 32;
        high |= (uint64_t)(uint32_t)_mm256_movemask_epi8(outb) << 32;
    }
    keep &= field;
    const int allzero = nullzero && (nonzero & field) == 0;
    if (nullzero == 2 && allzero) {
        *st = 1;
        return 0;
    }
    const uint64_t first = _tzcnt_u64(keep), last = 64 - _lzcnt_u64(keep); /* 64 and 0 when none is kept */
    uint64_t lo, hi;
    trim_bounds(keep != 0, first, last, policy, size, &lo, &hi);
    const uint64_t kept = _bzhi_u64(~0ULL, (unsigned)hi) & ~_bzhi_u64(~0ULL, (unsigned)lo);
    if (__builtin_expect((high & kept) != 0, 0)) /* characters beyond U+007F */
        return text_wide(t, p, (int64_t)lo, (int64_t)hi, o);
    if (__builtin_expect(lo != 0, 0)) { /* move byte lo to the front, through the stack */
        uint8_t tmp[128] __attribute__((aligned(32)));
        _mm256_store_si256((__m256i *)tmp, outa);
        _mm256_store_si256((__m256i *)(tmp + 32), outb);
        _mm256_store_si256((__m256i *)(tmp + 64), zero);
        _mm256_storeu_si256((__m256i *)o, _mm256_loadu_si256((const __m256i *)(tmp + lo)));
        _mm256_storeu_si256((__m256i *)(o + 32), _mm256_loadu_si256((const __m256i *)(tmp + lo + 32)));
    } else { /* the 32- or 64-byte store may write past the value (TEXT_SLACK) */
        _mm256_storeu_si256((__m256i *)o, outa);
        if (size > 32) _mm256_storeu_si256((__m256i *)(o + 32), outb);
    }
    *st = (uint8_t)allzero;
    return allzero ? 0 : (int64_t)(hi - lo);
}

/* text_field_avx2 for a field of more than 64 bytes with size + 32 bytes of the batch from p:
 * the whole field translated into o 32 bytes at a time (the last store may pass the value by
 * less than 32 bytes: TEXT_SLACK), the bounds from each block's bit mask, the kept bytes
 * moved to the front when the left side was trimmed */
AVX2_TARGET static inline int64_t text_field_avx2_long(const uint8_t *p, int64_t size, int64_t policy, int nullzero,
                                                       uint8_t *o, uint8_t *st, const __m256i lut[16],
                                                       const uint8_t *t) {
    const int64_t blocks = (size + 31) / 32;
    const __m256i zero = _mm256_setzero_si256();
    uint32_t nonzero = 0, high = 0;
    int64_t first = -1, last = 0;
    for (int64_t b = 0; b < blocks; b++) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(p + 32 * b));
        const __m256i out = translate32(x, lut);
        _mm256_storeu_si256((__m256i *)(o + 32 * b), out);
        const uint32_t in = (uint32_t)_bzhi_u64(~0ULL, (unsigned)(size - 32 * b < 32 ? size - 32 * b : 32));
        nonzero |= ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, zero)) & in;
        high |= (uint32_t)_mm256_movemask_epi8(out) & in;
        const uint32_t keep = kept32(out) & in;
        if (keep) {
            if (first < 0) first = 32 * b + _tzcnt_u32(keep);
            last = 32 * b + 32 - _lzcnt_u32(keep);
        }
    }
    if (nullzero && !nonzero) {
        *st = 1;
        return 0;
    }
    uint64_t lo, hi;
    trim_bounds(first >= 0, (uint64_t)(first < 0 ? 0 : first), (uint64_t)last, policy, size, &lo, &hi);
    /* a byte with the high bit is never trimmed (it is > 0x20): any in the field is in [lo, hi) */
    if (__builtin_expect(high != 0, 0)) return text_wide(t, p, (int64_t)lo, (int64_t)hi, o);
    if (__builtin_expect(lo != 0, 0)) memmove(o, o + lo, hi - lo);
    return (int64_t)(hi - lo);
}
#endif

/* the text of column col in records r0..r1: the cursor and counts in registers (a store
 * through a byte pointer could be any of col's fields: they are written back at the end) */
#define TEXT_COLUMN(FIELD)                                                                    \
    do {                                                                                      \
        int64_t cursor = col->cursor, nbad = col->bad;                                        \
        uint8_t *const text = values;                                                         \
        int32_t *const toff = col->textoff;                                                   \
        const uint8_t *const t = col->table;                                                  \
        const int64_t policy = opts & 15;                                                     \
        const int nullzero = (opts & OPT_NULL_ZERO) != 0;                                     \
        for (Py_ssize_t r = r0; r < r1; r++) {                                                \
            const uint8_t *rec = base + r * record_size;                                      \
            int64_t idx = (int64_t)r * m;                                                     \
            for (int64_t j = 0; j < m; j++, idx++) {                                          \
                const uint8_t *p = rec + offs[j];                                             \
                uint8_t st = 0;                                                               \
                cursor += FIELD;                                                              \
                toff[idx + 1] = (int32_t)cursor;                                              \
                flags[idx] = st;                                                              \
                nbad += st;                                                                   \
            }                                                                                 \
        }                                                                                     \
        col->cursor = cursor;                                                                 \
        col->bad = nbad;                                                                      \
    } while (0)

/* records are decoded in tiles of TILE records (13 KB of the 207-byte record: in the L1
 * cache): for each tile, each column, each record of the tile, each instance. A record's bytes
 * come from memory once; the column's parameters stay in registers for the tile and its
 * branches are the same for every value (predicted), which a loop over the fields of one
 * record, each of another kind and size, does not give */
#define TILE 64

/* the numbers of column col in records r0..r1 (DECODE: zoned / packed / binary call) */
#define NUMBER_LOOP(WIDTH, DECODE)                                                            \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                    \
        const uint8_t *rec = base + r * record_size;                                          \
        int64_t idx = (int64_t)r * m;                                                         \
        for (int64_t j = 0; j < m; j++, idx++) {                                              \
            const uint8_t *p = rec + offs[j];                                                 \
            int64_t v = 0;                                                                    \
            int st = DECODE;                                                                  \
            if (__builtin_expect(st, 0)) {                                                    \
                if ((opts & OPT_NULL_ZERO) && all_zero(p, size)) st = 1;                      \
                v = 0;                                                                        \
                col->bad++;                                                                   \
            }                                                                                 \
            flags[idx] = (uint8_t)st;                                                         \
            put(values, idx, WIDTH, v);                                                       \
        }                                                                                     \
    }

#define NUMBERS(DECODE)                                                                       \
    do {                                                                                      \
        if (col->width == 4) {                                                                \
            NUMBER_LOOP(4, DECODE)                                                            \
        } else if (col->width == 8) {                                                         \
            NUMBER_LOOP(8, DECODE)                                                            \
        } else {                                                                              \
            NUMBER_LOOP(16, DECODE)                                                           \
        }                                                                                     \
    } while (0)

/* a loop of its own for each size of zoned (1-18 bytes) and packed (1-10 bytes) numbers: the
 * size a constant, the digit loops are unrolled (the column's size is the same for every value) */
#define ZONED_CASE(N) case N: NUMBERS(zoned(p, N, signpos, &v)); break;
#define PACKED_CASE(N) case N: NUMBERS(packed(p, N, sgn, limit, &v)); break;
#define ZONED_CASES                                                                           \
    ZONED_CASE(1) ZONED_CASE(2) ZONED_CASE(3) ZONED_CASE(4) ZONED_CASE(5) ZONED_CASE(6)        \
    ZONED_CASE(7) ZONED_CASE(8) ZONED_CASE(9) ZONED_CASE(10) ZONED_CASE(11) ZONED_CASE(12)     \
    ZONED_CASE(13) ZONED_CASE(14) ZONED_CASE(15) ZONED_CASE(16) ZONED_CASE(17) ZONED_CASE(18)
#define PACKED_CASES                                                                          \
    PACKED_CASE(1) PACKED_CASE(2) PACKED_CASE(3) PACKED_CASE(4) PACKED_CASE(5) PACKED_CASE(6)  \
    PACKED_CASE(7) PACKED_CASE(8) PACKED_CASE(9) PACKED_CASE(10)

/* TEXT decodes the text of column col in records r0..r1 */
#define DECODE_ALL(TEXT)                                                                      \
    for (Py_ssize_t r0 = 0; r0 < n; r0 += TILE) {                                             \
        const Py_ssize_t r1 = r0 + TILE < n ? r0 + TILE : n;                                  \
        for (Py_ssize_t c = 0; c < ncols; c++) {                                              \
            column_t *col = &cols[c];                                                         \
            const int64_t m = col->count, size = col->size, opts = col->opts;                 \
            const int64_t signpos = col->signpos, limit = col->limit;                         \
            const int sgn = (int)col->sgn;                             \
            const int32_t *offs = col->offs;                                                  \
            uint8_t *flags = col->flags, *values = col->values;                               \
            switch (col->kind) {                                                              \
            case K_TEXT:                                                                      \
                TEXT;                                                                         \
                break;                                                                        \
            case K_ZONED:                                                                     \
                switch (size) {                                                               \
                    ZONED_CASES                                                               \
                default:                                                                      \
                    NUMBERS(zoned(p, size, signpos, &v));                                     \
                }                                                                             \
                break;                                                                        \
            case K_PACKED:                                                                    \
                switch (size) {                                                               \
                    PACKED_CASES                                                              \
                default:                                                                      \
                    NUMBERS(packed(p, size, sgn, limit, &v));                                 \
                }                                                                             \
                break;                                                                        \
            default:                                                                          \
                NUMBERS(binary(p, size, sgn, limit, &v));                                     \
            }                                                                                 \
        }                                                                                     \
    }

#define TEXT_SCALAR TEXT_COLUMN(text_field(t, p, size, policy, nullzero, text + cursor, &st))

static void decode_generic(const uint8_t *base, Py_ssize_t n, Py_ssize_t record_size, column_t *cols, Py_ssize_t ncols) {
    DECODE_ALL(TEXT_SCALAR)
}

#if HAVE_X86_SIMD
/* the first-UTF-8-byte table of the batch's text columns (every text column has the one code
 * page table), or 256 zeros when there is none */
static const uint8_t *first_utf8_bytes(const column_t *cols, Py_ssize_t ncols) {
    static const uint8_t none[256];
    for (Py_ssize_t c = 0; c < ncols; c++)
        if (cols[c].kind == K_TEXT) return cols[c].table + 1536;
    return none;
}

#define TEXT_SIMD                                                                             \
    do {                                                                                      \
        if (size <= 64)                                                                     \
            TEXT_COLUMN(text_field_simd(p, size, policy, nullzero ? zero_trims : 0, text + cursor, &st, tab, shift, end, t)); \
        else                                                                                  \
            TEXT_SCALAR;                                                                      \
    } while (0)

SIMD_TARGET static void decode_simd(const uint8_t *base, Py_ssize_t n, Py_ssize_t record_size, column_t *cols,
                                    Py_ssize_t ncols) {
    const uint8_t *one = first_utf8_bytes(cols, ncols);
    __m512i tab[4];
    for (int q = 0; q < 4; q++) tab[q] = _mm512_loadu_si512((const void *)(one + 64 * q));
    uint8_t iota[64];
    for (int q = 0; q < 64; q++) iota[q] = (uint8_t)q;
    const __m512i shift = _mm512_loadu_si512((const void *)iota);
    const uint8_t *const end = base + n * record_size;
    const int zero_trims = one[0] <= 0x20 ? 1 : 2; /* see text_field_simd */
    DECODE_ALL(TEXT_SIMD)
}

/* fields of more than 32 bytes: 32-byte vectors, 16 shuffles each, beat the portable loop
 * (X(40) 1.30x, X(64) 1.58x, X(80) 1.51x, X(200) 1.55x on an AMD EPYC without AVX-512); up to
 * 32 bytes the portable loop is as fast or faster (0.92-1.05x: the per-field costs dominate;
 * docs/performance.md). A field without 64 (or size + 32) bytes of the batch from it (the last
 * records) takes the portable path */
#define TEXT_AVX2                                                                             \
    do {                                                                                      \
        if (size > 32 && size <= 64)                                                          \
            TEXT_COLUMN(p + 64 <= end ? text_field_avx2(p, size, policy, nullzero ? zero_trims : 0, text + cursor, &st, lut, t) \
                                      : text_field(t, p, size, policy, nullzero, text + cursor, &st)); \
        else if (size > 64)                                                                   \
            TEXT_COLUMN(p + size + 32 <= end ? text_field_avx2_long(p, size, policy, nullzero, text + cursor, &st, lut, t) \
                                             : text_field(t, p, size, policy, nullzero, text + cursor, &st)); \
        else                                                                                  \
            TEXT_SCALAR;                                                                      \
    } while (0)

/* whether a text column takes the AVX2 path (TEXT_AVX2); without one the portable loop runs
 * (compiled for AVX2, the other columns' loops measured up to 15 % slower on one-byte fields) */
static int has_avx2_text(const column_t *cols, Py_ssize_t ncols) {
    for (Py_ssize_t c = 0; c < ncols; c++)
        if (cols[c].kind == K_TEXT && cols[c].size > 32) return 1;
    return 0;
}

AVX2_TARGET static void decode_avx2(const uint8_t *base, Py_ssize_t n, Py_ssize_t record_size, column_t *cols,
                                    Py_ssize_t ncols) {
    const uint8_t *one = first_utf8_bytes(cols, ncols);
    __m256i lut[16];
    for (int h = 0; h < 16; h++) lut[h] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(one + 16 * h)));
    const uint8_t *const end = base + n * record_size;
    const int zero_trims = one[0] <= 0x20 ? 1 : 2;
    DECODE_ALL(TEXT_AVX2)
}
#endif

/* the text path in use: the best the CPU has by default; use_text_path() picks another (the
 * property test runs each against the same oracles) */
enum { PATH_PORTABLE, PATH_AVX2, PATH_AVX512 };
static const char *const PATH_NAMES[] = {"portable", "avx2", "avx512"};
static int path_on = PATH_PORTABLE;

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
#if HAVE_X86_SIMD
    if (path_on == PATH_AVX512)
        decode_simd(base, n, record_size, cols, ncols);
    else if (path_on == PATH_AVX2 && has_avx2_text(cols, ncols))
        decode_avx2(base, n, record_size, cols, ncols);
    else
#endif
        decode_generic(base, n, record_size, cols, ncols);
    Py_END_ALLOW_THREADS
    /* the text columns' regions (sized for the code page's longest UTF-8 character) moved together:
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

/* whether the CPU has the path's instructions */
static int path_available(int path) {
#if HAVE_X86_SIMD
    __builtin_cpu_init();
    if (path == PATH_AVX512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("bmi2");
    if (path == PATH_AVX2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
               __builtin_cpu_supports("lzcnt");
#endif
    return path == PATH_PORTABLE;
}

static PyObject *text_paths(PyObject *self, PyObject *noargs) {
    PyObject *out = PyList_New(0);
    for (int path = PATH_PORTABLE; out && path <= PATH_AVX512; path++) {
        if (!path_available(path)) continue;
        PyObject *name = PyUnicode_FromString(PATH_NAMES[path]);
        if (!name || PyList_Append(out, name) < 0) Py_CLEAR(out);
        Py_XDECREF(name);
    }
    return out;
}

static PyObject *use_text_path(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    for (int path = PATH_PORTABLE; path <= PATH_AVX512; path++)
        if (strcmp(name, PATH_NAMES[path]) == 0) {
            if (!path_available(path)) {
                PyErr_Format(PyExc_ValueError, "this CPU has no %s text path", name);
                return NULL;
            }
            path_on = path;
            Py_RETURN_NONE;
        }
    PyErr_Format(PyExc_ValueError, "no text path named %s (portable, avx2, avx512)", name);
    return NULL;
}

static PyObject *text_path(PyObject *self, PyObject *noargs) { return PyUnicode_FromString(PATH_NAMES[path_on]); }

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS,
     "run(data, n, record_size, program, instances, tables, values, flags, text_offsets, text, counts)"},
    {"text_paths", text_paths, METH_NOARGS, "text_paths() -> list[str]: the text paths this CPU can run, best last"},
    {"use_text_path", use_text_path, METH_VARARGS, "use_text_path(name): decode text with this path from now on"},
    {"text_path", text_path, METH_NOARGS, "text_path() -> str: the text path in use (the best by default)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fused", "The fused copybook kernel.", -1, methods};

PyMODINIT_FUNC PyInit__fused(void) {
    init_tables();
    for (int path = PATH_PORTABLE; path <= PATH_AVX512; path++)
        if (path_available(path)) path_on = path;
    return PyModule_Create(&module);
}

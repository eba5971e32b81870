// numba-metal prelude: MSL helpers that give kernels Numba's semantics.
//
// Sections start with `//@@ name requires: dep ...`; code generation includes only the sections a
// kernel uses, with their dependencies. Everything here must compile both with Apple's Metal compiler
// and with the CPU reference device's clang shim: no double, no goto, no recursion, float literals
// with an `f` suffix.

//@@ base
#ifndef NM_INLINE
#define NM_INLINE inline __attribute__((__always_inline__))
#endif

//@@ env requires: base
// The kernel environment: the thread's built-in inputs and the kernel-wide resources, built once at
// kernel entry and passed to every device function.
struct nm_env {
    uint3 gid;      // thread_position_in_grid
    uint3 gsize;    // threads_per_grid
    uint3 tgid;     // threadgroup_position_in_grid
    uint3 ngroups;  // threadgroups_per_grid
    uint3 tid;      // thread_position_in_threadgroup
    uint3 tsize;    // threads_per_threadgroup
    uint lane;      // thread_index_in_simdgroup
    uint sgid;      // simdgroup_index_in_threadgroup
    device uint* err;  // debug error record (debug=True), else null
    device uint* out;  // the print buffer (the kernel prints), else null
    thread uint* raised;  // set when the thread raised (the kernel raises), else null
    threadgroup atomic_int* tgcount;  // counter for syncthreads_count/and/or, else null
    threadgroup uchar* tgpool;        // shared arrays declared in device functions, else null
    threadgroup uchar* dynshared;     // dynamic shared memory (the launch's sharedmem), else null
    uint dynshared_bytes;
};

//@@ array requires: base
// An N-d array view: element pointer, shape and strides in elements (64-bit index arithmetic).
template <typename P, int N> struct nm_arr {
    P data;
    long shape[N];
    long strides[N];
};
// A 0-d array has no axes; C++ has no arrays of length 0, so its members have one unused element.
template <typename P> struct nm_arr<P, 0> {
    P data;
    long shape[1];
    long strides[1];
};

// Python's negative-index wraparound.
NM_INLINE long nm_wrap(long i, long n) { return i < 0 ? i + n : i; }
// The same in 32 bits, for arrays of fewer than 2**31 elements (threadgroup, thread and constant arrays).
NM_INLINE int nm_wrap(int i, int n) { return i < 0 ? i + n : i; }

//@@ slice requires: base
// A Python slice as Numba's slice constructor builds it: the bounds left out are filled in from the
// step's sign (start 0 or LONG_MAX, stop LONG_MAX or LONG_MIN), so that one struct holds every form.
struct nm_slice {
    long start;
    long stop;
    long step;
};
// A bound of a slice of an axis of n elements, wrapped if negative, then clamped to [lo, hi].
NM_INLINE long nm_slice_bound(long b, long n, long lo, long hi) {
    b = b < 0 ? b + n : b;
    return b < lo ? lo : (b > hi ? hi : b);
}
// A slice of an axis of n elements as a view takes it (Numba's fix_slice and get_slice_length): the
// first element's index in `start`, the number of elements in `stop`. An empty slice starts at 0, so
// that its view's data pointer never leaves the array; a step of 0 (refused before) gives no element.
NM_INLINE nm_slice nm_slice_fix(nm_slice s, long n) {
    bool neg = s.step < 0;
    long lo = neg ? -1l : 0l;
    long hi = neg ? n - 1l : n;
    long start = nm_slice_bound(s.start, n, lo, hi);
    long stop = nm_slice_bound(s.stop, n, lo, hi);
    long delta = stop - start;
    bool empty = s.step == 0 || (neg ? delta >= 0 : delta <= 0);
    long length = empty ? 0l : 1l + (neg ? delta + 1l : delta - 1l) / s.step;
    return nm_slice{empty ? 0l : start, length, s.step};
}

//@@ boundscheck requires: env
// debug=True: report the first out-of-bounds access (the host raises it at the next wait) and
// tell the caller to skip the access.
// Record layout (uint words; compiler/kernel_io.py RECORD): 0 flag, 1 array id, 2 axis, 3 line,
// 4-6 thread position, 7 kind (0: bounds), 8-9 index (lo, hi), 10-11 extent (lo, hi).
NM_INLINE bool nm_in_bounds(long i, long n, thread const nm_env& c, uint array_id, uint axis, uint line) {
    if (i >= 0 && i < n) {
        return true;
    }
    device atomic_uint* flag = (device atomic_uint*)c.err;
    // MSL has only the weak compare-exchange, which may fail spuriously: retry while the flag is still 0,
    // or the first fault's report would be lost.
    uint expected = 0u;
    while (!atomic_compare_exchange_weak_explicit(flag, &expected, 1u, memory_order_relaxed,
                                                  memory_order_relaxed)) {
        if (expected != 0u) {
            return false;
        }
    }
    c.err[1] = array_id;
    c.err[2] = axis;
    c.err[3] = line;
    c.err[4] = c.gid.x;
    c.err[5] = c.gid.y;
    c.err[6] = c.gid.z;
    c.err[7] = 0u;
    c.err[8] = uint(ulong(i) & 0xffffffffu);
    c.err[9] = uint(ulong(i) >> 32);
    c.err[10] = uint(ulong(n) & 0xffffffffu);
    c.err[11] = uint(ulong(n) >> 32);
    return false;
}

//@@ raise requires: env
// `raise` (and a failed `assert`): the thread stops; with debug=True the first raising thread of the
// launch records the raise site (an index into the kernel's table of sites) for the host.
// Record words as nm_in_bounds', with 1 the site and 7 kind 1.
NM_INLINE void nm_raise(thread const nm_env& c, uint site, uint line) {
    *c.raised = 1u;
    if (c.err == nullptr) {
        return;
    }
    device atomic_uint* flag = (device atomic_uint*)c.err;
    uint expected = 0u;
    // Retried while the flag is still 0: a weak compare-exchange may fail spuriously.
    while (!atomic_compare_exchange_weak_explicit(flag, &expected, 1u, memory_order_relaxed,
                                                  memory_order_relaxed)) {
        if (expected != 0u) {
            return;
        }
    }
    c.err[1] = site;
    c.err[3] = line;
    c.err[4] = c.gid.x;
    c.err[5] = c.gid.y;
    c.err[6] = c.gid.z;
    c.err[7] = 1u;
}

//@@ print requires: env
// print(): reserve `words` words of the print buffer (header: 0 words used, 1 records lost,
// 2 capacity in words; records from word 4) and write the format's key; null when the buffer is full
// (the record is counted as lost). A compare-and-swap loop, so that the count of used words never
// passes the capacity however many prints fail.
NM_INLINE device uint* nm_print_begin(thread const nm_env& c, uint words, uint key_lo, uint key_hi) {
    device atomic_uint* used = (device atomic_uint*)c.out;
    uint capacity = c.out[2];
    uint at = atomic_load_explicit(used, memory_order_relaxed);
    while (true) {
        if (at > capacity || words > capacity - at) {
            atomic_fetch_add_explicit((device atomic_uint*)(c.out + 1), 1u, memory_order_relaxed);
            return nullptr;
        }
        if (atomic_compare_exchange_weak_explicit(used, &at, at + words, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            break;
        }
    }
    device uint* r = c.out + 4 + at;
    r[0] = key_lo;
    r[1] = key_hi;
    return r;
}

// Value k of a print record, as 64 bits.
NM_INLINE void nm_print_put(device uint* r, uint k, ulong v) {
    if (r != nullptr) {
        r[2 + 2 * k] = uint(v & 0xffffffffu);
        r[3 + 2 * k] = uint(v >> 32);
    }
}

//@@ records requires: base
// Fields of packed records (NumPy structured dtypes without align=True) whose offset is not a multiple
// of their size: read and written a byte at a time, since Metal requires aligned loads and stores.
// Little-endian, as Apple GPUs and NumPy's native dtypes are.
template <typename T, typename P> NM_INLINE T nm_load_packed2(P p) {
    return as_type<T>(uchar2(p[0], p[1]));
}
template <typename T, typename P> NM_INLINE T nm_load_packed4(P p) {
    return as_type<T>(uchar4(p[0], p[1], p[2], p[3]));
}
template <typename T, typename P> NM_INLINE T nm_load_packed8(P p) {
    return as_type<T>(uint2(as_type<uint>(uchar4(p[0], p[1], p[2], p[3])),
                            as_type<uint>(uchar4(p[4], p[5], p[6], p[7]))));
}
template <typename T, typename P> NM_INLINE void nm_store_packed2(P p, T v) {
    uchar2 b = as_type<uchar2>(v);
    p[0] = b.x;
    p[1] = b.y;
}
template <typename T, typename P> NM_INLINE void nm_store_packed4(P p, T v) {
    uchar4 b = as_type<uchar4>(v);
    p[0] = b.x;
    p[1] = b.y;
    p[2] = b.z;
    p[3] = b.w;
}
template <typename T, typename P> NM_INLINE void nm_store_packed8(P p, T v) {
    uint2 w = as_type<uint2>(v);
    nm_store_packed4<uint>(p, w.x);
    nm_store_packed4<uint>(p + 4, w.y);
}
// A whole record copied (ary[i] = ary[j]): byte by byte, the only access every layout allows.
template <typename P, typename Q> NM_INLINE void nm_copy_record(P dst, Q src, int n) {
    for (int k = 0; k < n; ++k) {
        dst[k] = src[k];
    }
}

//@@ nested_copy requires: array
// A whole nested array of a record assigned from an array (r.h = src): at most n elements, taken from
// src in C order through its strides and converted to the field's type (NumPy's assignment).
template <typename Q, int N> NM_INLINE long nm_arr_size(nm_arr<Q, N> a) {
    long size = 1;
    for (int d = 0; d < N; ++d) {
        size *= a.shape[d];
    }
    return size;
}
template <typename P, typename Q, int N> NM_INLINE void nm_copy_to_nested(P dst, nm_arr<Q, N> src, long n) {
    long count = min(n, nm_arr_size(src));
    for (long k = 0; k < count; ++k) {
        long rem = k;
        long off = 0;
        for (int d = N - 1; d >= 0; --d) {
            off += (rem % src.shape[d]) * src.strides[d];
            rem /= src.shape[d];
        }
        dst[k] = src.data[off];
    }
}

//@@ pair requires: base
template <typename A, typename B> struct nm_pair {
    A first;
    B second;
};

//@@ range requires: pair
// Python range objects and their iterators. The trip count is computed once, in unsigned
// arithmetic, so iteration never overflows (range(0, 2**63 - 1, 2**62) is fine).
template <typename T> struct nm_range {
    T start;
    T stop;
    T step;
};
// The trip count's type: 32 bits for int ranges (at most 2**32 - 1 items), so that a loop the compiler
// proved 32-bit (index32.py) counts in 32 bits.
template <typename T> struct nm_range_count_type { typedef ulong type; };
template <> struct nm_range_count_type<int> { typedef uint type; };
template <typename T> struct nm_range_iter {
    T next;
    T step;
    typename nm_range_count_type<T>::type count;
};
// A range whose start, stop and step are proven to fit in int (index32.py).
template <typename T> NM_INLINE nm_range<int> nm_range32(nm_range<T> r) {
    return nm_range<int>{int(r.start), int(r.stop), int(r.step)};
}
NM_INLINE ulong nm_range_count(long start, long stop, long step) {
    if (step > 0 && start < stop) {
        return (ulong(stop) - ulong(start) - 1ul) / ulong(step) + 1ul;
    }
    if (step < 0 && start > stop) {
        return (ulong(start) - ulong(stop) - 1ul) / (0ul - ulong(step)) + 1ul;
    }
    return 0ul;  // includes step == 0, where Python raises ValueError
}
NM_INLINE ulong nm_range_count(ulong start, ulong stop, ulong step) {
    if (step > 0ul && start < stop) {
        return (stop - start - 1ul) / step + 1ul;
    }
    return 0ul;
}
// range(int32) (Numba's range_state_int32): exact in 64 bits (without this, int is ambiguous).
NM_INLINE ulong nm_range_count(int start, int stop, int step) {
    return nm_range_count(long(start), long(stop), long(step));
}
template <typename T> NM_INLINE nm_range_iter<T> nm_getiter(nm_range<T> r) {
    nm_range_iter<T> it;
    it.next = r.start;
    it.step = r.step;
    it.count = typename nm_range_count_type<T>::type(nm_range_count(r.start, r.stop, r.step));
    return it;
}
template <typename T> NM_INLINE nm_pair<T, bool> nm_iternext(thread nm_range_iter<T>& it) {
    nm_pair<T, bool> p;
    p.first = it.next;
    typedef typename nm_range_count_type<T>::type C;
    p.second = it.count != C(0);
    if (p.second) {
        it.count -= C(1);
        it.next = T(C(it.next) + C(it.step));
    }
    return p;
}

//@@ intdiv requires: base
// Python // and % on integers with Numba's conventions: x // 0 == x % 0 == 0, and
// MIN // -1 == MIN % -1 == 0 (Numba's answer where the hardware would trap).
#define NM_SIGNED_DIVMOD(T, U)                                                       \
    NM_INLINE T nm_floordiv(T a, T b) {                                             \
        if (b == T(0)) return T(0);                                                  \
        if (b == T(-1)) return (U(a) == (U(1) << (sizeof(T) * 8 - 1))) ? T(0) : T(U(0) - U(a)); \
        T q = T(a / b);                                                              \
        T r = T(a - q * b);                                                          \
        if (r != T(0) && ((r < T(0)) != (b < T(0)))) q = T(q - T(1));                \
        return q;                                                                    \
    }                                                                                \
    NM_INLINE T nm_mod(T a, T b) {                                                  \
        if (b == T(0) || b == T(-1)) return T(0);                                   \
        T r = T(a - T(a / b) * b);                                                   \
        if (r != T(0) && ((r < T(0)) != (b < T(0)))) r = T(r + b);                   \
        return r;                                                                    \
    }
#define NM_UNSIGNED_DIVMOD(T)                                                        \
    NM_INLINE T nm_floordiv(T a, T b) { return b == T(0) ? T(0) : T(a / b); }       \
    NM_INLINE T nm_mod(T a, T b) { return b == T(0) ? T(0) : T(a % b); }
NM_SIGNED_DIVMOD(char, uchar)
NM_SIGNED_DIVMOD(short, ushort)
NM_SIGNED_DIVMOD(int, uint)
NM_SIGNED_DIVMOD(long, ulong)
NM_UNSIGNED_DIVMOD(uchar)
NM_UNSIGNED_DIVMOD(ushort)
NM_UNSIGNED_DIVMOD(uint)
NM_UNSIGNED_DIVMOD(ulong)

//@@ floatdiv requires: base
// Python // and % on floats (CPython's float_divmod); x // 0 is x / 0 and x % 0 is NaN, as in
// NumPy's error model.
NM_INLINE float nm_floordiv(float a, float b) {
    if (b == 0.0f) return a / b;
    if (isnan(a) || isnan(b)) return NAN;  // and fmod never sees a NaN: see nm_fmod
    float mod = fmod(a, b);
    float div = (a - mod) / b;
    if (mod != 0.0f && ((b < 0.0f) != (mod < 0.0f))) {
        div -= 1.0f;
    }
    if (div != 0.0f) {
        float fl = floor(div);
        if (div - fl > 0.5f) fl += 1.0f;
        return fl;
    }
    return copysign(0.0f, a / b);
}
NM_INLINE float nm_mod(float a, float b) {
    if (b == 0.0f || isnan(a) || isnan(b)) return NAN;
    float mod = fmod(a, b);
    if (mod != 0.0f) {
        if ((b < 0.0f) != (mod < 0.0f)) mod += b;
    } else {
        mod = copysign(0.0f, b);
    }
    return mod;
}
NM_INLINE half nm_floordiv(half a, half b) { return half(nm_floordiv(float(a), float(b))); }
NM_INLINE half nm_mod(half a, half b) { return half(nm_mod(float(a), float(b))); }
// math.fmod. A NaN divisor is answered here: clang (the CPU device's compiler) folds
// fmod(x, <constant NaN>) to poison and drops the stores that depend on it.
NM_INLINE float nm_fmod(float a, float b) { return isnan(b) ? b : fmod(a, b); }
NM_INLINE half nm_fmod(half a, half b) { return half(nm_fmod(float(a), float(b))); }

//@@ ipow requires: base
// Integer ** integer as Numba computes it: repeated squaring with wraparound; a negative exponent
// gives 0 unless the base is 1 or -1, and 0 ** negative gives the type's minimum value.
#define NM_IPOW(T, U)                                                                \
    NM_INLINE T nm_ipow(T a, long b) {                                              \
        if (b < 0l) {                                                                \
            if (a == T(0)) return T(U(1) << (sizeof(T) * 8 - 1));                     \
            if (a != T(1) && a != T(-1)) return T(0);                                \
            return ((-b) & 1l) ? a : T(1);                                           \
        }                                                                            \
        U r = U(1);                                                                  \
        U x = U(a);                                                                  \
        ulong e = ulong(b);                                                          \
        while (e != 0ul) {                                                           \
            if (e & 1ul) r = U(r * x);                                               \
            e >>= 1;                                                                 \
            x = U(x * x);                                                            \
        }                                                                            \
        return T(r);                                                                 \
    }
NM_IPOW(long, ulong)
NM_IPOW(int, uint)
NM_IPOW(ulong, ulong)
NM_IPOW(uint, uint)

//@@ powi requires: base
// float ** integer as Numba computes it: repeated multiplication, then 1/r for a negative exponent.
// (The half overload calls it by another name: a call of an overload of the same name reads as
// recursion to MSL's call-graph rule.)
NM_INLINE float nm_powi_f32(float a, long b) {
    ulong e = b < 0l ? 0ul - ulong(b) : ulong(b);
    if (e > 65536ul) return pow(a, float(b));
    float r = 1.0f;
    float x = a;
    while (e != 0ul) {
        if (e & 1ul) r *= x;
        e >>= 1;
        x *= x;
    }
    return b < 0l ? 1.0f / r : r;
}
NM_INLINE float nm_powi(float a, long b) { return nm_powi_f32(a, b); }
NM_INLINE half nm_powi(half a, long b) { return half(nm_powi_f32(float(a), b)); }

//@@ shifts requires: base
// Shift counts are taken modulo the bit width, as MSL defines them; shifting is done on the
// unsigned type so that shifting a negative value left is defined.
#define NM_SHIFTS(T, U)                                                              \
    NM_INLINE T nm_shl(T a, T b) { return T(U(a) << (U(b) & U(sizeof(T) * 8 - 1))); } \
    NM_INLINE T nm_shr(T a, T b) { return T(a >> (U(b) & U(sizeof(T) * 8 - 1))); }
NM_SHIFTS(char, uchar)
NM_SHIFTS(short, ushort)
NM_SHIFTS(int, uint)
NM_SHIFTS(long, ulong)
NM_SHIFTS(uchar, uchar)
NM_SHIFTS(ushort, ushort)
NM_SHIFTS(uint, uint)
NM_SHIFTS(ulong, ulong)

//@@ mixedcmp requires: base
// Comparisons between a signed and an unsigned 64-bit integer by value (C++ would convert the
// signed operand to unsigned first).
NM_INLINE bool nm_lt(long a, ulong b) { return a < 0l || ulong(a) < b; }
NM_INLINE bool nm_lt(ulong a, long b) { return b > 0l && a < ulong(b); }
NM_INLINE bool nm_eq(long a, ulong b) { return a >= 0l && ulong(a) == b; }
NM_INLINE bool nm_eq(ulong a, long b) { return b >= 0l && a == ulong(b); }

//@@ round requires: pow10
// round(x, ndigits) as numba.cuda computes it: numba-cuda's round_to_impl scales the float32 x by 10**ndigits in
// float64, where the product is exact, rounds it half to even and unscales. In float32 the scaled value is
// itself rounded, which can turn a value just above or below a half into a half (0.3425f * 1000 is
// 342.500001..., whose float32 product is 342.5, which rint takes to 342): the product's rounding error
// (exactly, by fma) decides such ties. nm_round_exact: the integer nearest y + e (halves to even), where
// y = fl(y + e) and |e| <= ulp(y) / 2.
NM_INLINE float nm_round_exact(float y, float e) {
    float z = rint(y);
    if (fabs(y - z) == 0.5f && e != 0.0f) z = e > 0.0f ? ceil(y) : floor(y);
    return z;
}
NM_INLINE float nm_round_ndigits(float x, long nd) {
    if (isnan(x)) return as_type<float>(as_type<uint>(x) | 0x00400000u);  // quieted, as NumPy's np.round
    if (isinf(x)) return x;
    if (nd >= 0l) {
        float p = nm_pow10(nd);
        float y = x * p;
        // Beyond 2**24 numba.cuda's float64 result is within half an ulp of x, so it converts back to x.
        if (isinf(y) || fabs(y) >= 16777216.0f) return x;
        return nm_round_exact(y, fma(x, p, -y)) / p;
    }
    float p = nm_pow10(-nd);
    if (isinf(p)) return copysign(0.0f, x);   // numba.cuda: x / 10**-nd rounds to 0, times 10**-nd is 0
    float y = x / p;
    return nm_round_exact(y, fma(-y, p, x)) * p;   // the remainder x - y * p has the sign of x / p - y
}

//@@ pow10 requires: base
NM_INLINE float nm_pow10(long n) {
    float r = 1.0f;
    for (long i = 0l; i < n && i < 64l; ++i) r *= 10.0f;
    return r;
}

//@@ angles requires: base
NM_INLINE float nm_degrees(float x) { return x * 57.295779513082320876798f; }
NM_INLINE float nm_radians(float x) { return x * 0.017453292519943295769237f; }

//@@ ldexp requires: base
NM_INLINE float nm_ldexp(float x, long e) {
    return ldexp(x, int(clamp(e, -1000l, 1000l)));
}

//@@ syncreduce requires: base
// syncthreads_count: a barrier that also counts the threads whose predicate is true, through a
// threadgroup counter. The third barrier keeps the next call's reset away from this call's reads.
NM_INLINE int nm_sync_count(threadgroup atomic_int* c, bool p, uint3 tid, uint3 tsize) {
    uint linear = tid.x + tid.y * tsize.x + tid.z * tsize.x * tsize.y;
    if (linear == 0u) {
        atomic_store_explicit(c, 0, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    if (p) {
        atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    int r = atomic_load_explicit(c, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    return r;
}

//@@ atomics requires: base
// Atomic operations MSL lacks, as compare-and-swap loops on the 32-bit word (relaxed order, the only
// order MSL atomics have). Each returns the old value.
#define NM_ATOMIC_CAS_LOOPS(SFX, AS)                                                              \
    NM_INLINE int nm_atomic_cas_##SFX(AS int* p, int expected, int desired) {                 \
        AS atomic_int* q = (AS atomic_int*)p;                                                 \
        int cur = expected;                                                                   \
        while (true) {                                                                        \
            if (atomic_compare_exchange_weak_explicit(q, &cur, desired, memory_order_relaxed, \
                                                      memory_order_relaxed)) return expected; \
            if (cur != expected) return cur;                                                  \
        }                                                                                     \
    }                                                                                         \
    NM_INLINE uint nm_atomic_cas_##SFX(AS uint* p, uint expected, uint desired) {             \
        AS atomic_uint* q = (AS atomic_uint*)p;                                               \
        uint cur = expected;                                                                  \
        while (true) {                                                                        \
            if (atomic_compare_exchange_weak_explicit(q, &cur, desired, memory_order_relaxed, \
                                                      memory_order_relaxed)) return expected; \
            if (cur != expected) return cur;                                                  \
        }                                                                                     \
    }                                                                                         \
    NM_INLINE float nm_atomic_casf_##SFX(AS float* p, float expected, float desired) {        \
        return as_type<float>(nm_atomic_cas_##SFX((AS uint*)p, as_type<uint>(expected),        \
                                                  as_type<uint>(desired)));                   \
    }                                                                                         \
    NM_INLINE uint nm_atomic_inc_##SFX(AS uint* p, uint v) {                                  \
        AS atomic_uint* q = (AS atomic_uint*)p;                                               \
        uint old = atomic_load_explicit(q, memory_order_relaxed);                             \
        while (true) {                                                                        \
            uint nv = (old >= v) ? 0u : old + 1u;                                             \
            if (atomic_compare_exchange_weak_explicit(q, &old, nv, memory_order_relaxed,      \
                                                      memory_order_relaxed)) return old;      \
        }                                                                                     \
    }                                                                                         \
    NM_INLINE uint nm_atomic_dec_##SFX(AS uint* p, uint v) {                                  \
        AS atomic_uint* q = (AS atomic_uint*)p;                                               \
        uint old = atomic_load_explicit(q, memory_order_relaxed);                             \
        while (true) {                                                                        \
            uint nv = (old == 0u || old > v) ? v : old - 1u;                                  \
            if (atomic_compare_exchange_weak_explicit(q, &old, nv, memory_order_relaxed,      \
                                                      memory_order_relaxed)) return old;      \
        }                                                                                     \
    }                                                                                         \
    NM_ATOMIC_FLOAT_OP(SFX, AS, fadd, (o + v))                                                     \
    NM_ATOMIC_FLOAT_OP(SFX, AS, fsub, (o - v))                                                     \
    NM_ATOMIC_FLOAT_OP(SFX, AS, fmax, (v > o ? v : o))                                             \
    NM_ATOMIC_FLOAT_OP(SFX, AS, fmin, (v < o ? v : o))                                             \
    NM_ATOMIC_FLOAT_OP(SFX, AS, fnanmax, (isnan(o) ? v : (isnan(v) ? o : (v > o ? v : o))))        \
    NM_ATOMIC_FLOAT_OP(SFX, AS, fnanmin, (isnan(o) ? v : (isnan(v) ? o : (v < o ? v : o))))
#define NM_HALF_ADD_WORD_LOOP(AS)                                                                 \
    /* Metal has no 16-bit atomics: a CAS loop on the aligned 32-bit word q holding the half at p */ \
    /* (little-endian: the half at the lower address is the low 16 bits; low is 2 for the high  */ \
    /* half), changing only its bits.                                                           */ \
    AS atomic_uint* q = (AS atomic_uint*)(p - (low >> 1));                                        \
    uint shift = low * 8u;                                                                        \
    uint old = atomic_load_explicit(q, memory_order_relaxed);                                     \
    while (true) {                                                                                \
        half o = as_type<half>(ushort(old >> shift));                                             \
        uint nv = (old & ~(0xffffu << shift)) | (uint(as_type<ushort>(half(o + v))) << shift);    \
        if (nv == old) return o;                                                                  \
        if (atomic_compare_exchange_weak_explicit(q, &old, nv, memory_order_relaxed,              \
                                                  memory_order_relaxed)) return o;                \
    }
#define NM_HALF_ADD_DEVICE(SFX, AS)                                                               \
    NM_INLINE half nm_atomic_hadd_##SFX(AS half* p, half v) {                                     \
        /* Device memory: the place comes from the address (a bound half array may start at any  */ \
        /* even byte offset of its buffer; the word lies inside it: buffers are whole pages).    */ \
        uint low = uint(reinterpret_cast<ulong>(p)) & 2u;                                         \
        NM_HALF_ADD_WORD_LOOP(AS)                                                                 \
    }
#define NM_ATOMIC_FLOAT_OP(SFX, AS, NAME, EXPR)                                                   \
    NM_INLINE float nm_atomic_##NAME##_##SFX(AS float* p, float v) {                          \
        AS atomic_uint* q = (AS atomic_uint*)p;                                               \
        uint old = atomic_load_explicit(q, memory_order_relaxed);                             \
        while (true) {                                                                        \
            float o = as_type<float>(old);                                                    \
            uint nv = as_type<uint>(EXPR);                                                    \
            if (nv == old) return o;                                                          \
            if (atomic_compare_exchange_weak_explicit(q, &old, nv, memory_order_relaxed,      \
                                                      memory_order_relaxed)) return o;        \
        }                                                                                     \
    }
NM_ATOMIC_CAS_LOOPS(dev, device)
NM_ATOMIC_CAS_LOOPS(tg, threadgroup)
NM_HALF_ADD_DEVICE(dev, device)
// Threadgroup memory: the place comes from the half's index in an array that starts a 32-bit word (shared
// half arrays are declared as words), by pointer subtraction; a threadgroup pointer is never cast to an
// integer, which Apple's compiler may refuse.
NM_INLINE half nm_atomic_hadd_tg(threadgroup half* data, threadgroup half* p, half v) {
    uint low = uint((p - data) & 1) * 2u;
    NM_HALF_ADD_WORD_LOOP(threadgroup)
}

//@@ coherent_atomics requires: atomics
// The same on device memory declared coherent(device) (MSL 3.2): kernels that fence it across threadgroups.
NM_ATOMIC_CAS_LOOPS(cdev, coherent(device) device)
NM_HALF_ADD_DEVICE(cdev, coherent(device) device)

//@@ simd64 requires: base
// SIMD shuffles of 64-bit values, as two 32-bit shuffles (MSL's SIMD functions exclude long).
NM_INLINE ulong nm_simd_shuffle_64(ulong x, ushort lane) {
    uint2 v = as_type<uint2>(x);
    return as_type<ulong>(uint2(simd_shuffle(v.x, lane), simd_shuffle(v.y, lane)));
}
NM_INLINE ulong nm_simd_shuffle_up_64(ulong x, ushort d) {
    uint2 v = as_type<uint2>(x);
    return as_type<ulong>(uint2(simd_shuffle_up(v.x, d), simd_shuffle_up(v.y, d)));
}
NM_INLINE ulong nm_simd_shuffle_down_64(ulong x, ushort d) {
    uint2 v = as_type<uint2>(x);
    return as_type<ulong>(uint2(simd_shuffle_down(v.x, d), simd_shuffle_down(v.y, d)));
}
NM_INLINE ulong nm_simd_shuffle_xor_64(ulong x, ushort m) {
    uint2 v = as_type<uint2>(x);
    return as_type<ulong>(uint2(simd_shuffle_xor(v.x, m), simd_shuffle_xor(v.y, m)));
}
NM_INLINE ulong nm_simd_broadcast_64(ulong x, ushort lane) {
    uint2 v = as_type<uint2>(x);
    return as_type<ulong>(uint2(simd_broadcast(v.x, lane), simd_broadcast(v.y, lane)));
}

//@@ bits requires: base
// CUDA's __ffs/__ffsll for every integer width: the 1-based position of the lowest set bit, 0 for 0
// (the lowest set bit does not depend on the width the value is read in).
template <typename T> NM_INLINE uint nm_ffs(T x) { return x == T(0) ? 0u : uint(ctz(x)) + 1u; }

//@@ fp16 requires: base
// numba.cuda's cuda.fp16.hmax/hmin (`a if a > b else b`: a NaN gives b) and hrcp.
NM_INLINE half nm_hmax(half a, half b) { return a > b ? a : b; }
NM_INLINE half nm_hmin(half a, half b) { return a < b ? a : b; }
NM_INLINE half nm_hrcp(half x) { return half(1.0f) / x; }

//@@ simdmatch requires: simd64
// numba.cuda's match_any_sync/match_all_sync on a SIMD group: values are compared as bit patterns
// (PTX match.sync's b32/b64), among the active lanes. Every active lane runs the same loop, so each
// broadcast has a uniform source lane, as MSL requires.
NM_INLINE uint nm_ballot32(bool p) { return uint(static_cast<simd_vote::vote_t>(simd_ballot(p)) & 0xffffffffu); }
NM_INLINE uint nm_bcast(uint x, ushort lane) { return simd_broadcast(x, lane); }
NM_INLINE ulong nm_bcast(ulong x, ushort lane) { return nm_simd_broadcast_64(x, lane); }
template <typename T> NM_INLINE uint nm_match_any(T x, uint lane) {
    uint active = nm_ballot32(true);
    uint result = 0u;
    for (ushort k = 0; k < 32; ++k) {
        if (((active >> k) & 1u) != 0u) {
            uint same = nm_ballot32(x == nm_bcast(x, k));
            if (uint(k) == lane) result = same;
        }
    }
    return result;
}
template <typename T> NM_INLINE uint nm_match_all(T x) {
    uint active = nm_ballot32(true);
    return nm_ballot32(x == nm_bcast(x, ushort(ctz(active)))) == active ? active : 0u;
}

//@@ libdevice requires: base
// CUDA libdevice's __nv_mul24/__nv_umul24: the product of the low 24 bits of each operand (sign-extended
// for int), its low 32 bits; __nv_sad/__nv_usad: |x - y| + z, in unsigned arithmetic.
NM_INLINE int nm_mul24(int x, int y) {
    int sx = int((uint(x) & 0xffffffu) ^ 0x800000u) - 0x800000;
    int sy = int((uint(y) & 0xffffffu) ^ 0x800000u) - 0x800000;
    return int(uint(sx) * uint(sy));
}
NM_INLINE uint nm_mul24(uint x, uint y) { return (x & 0xffffffu) * (y & 0xffffffu); }
NM_INLINE uint nm_sad(int x, int y, uint z) { return (x > y ? uint(x) - uint(y) : uint(y) - uint(x)) + z; }
NM_INLINE uint nm_sad(uint x, uint y, uint z) { return (x > y ? x - y : y - x) + z; }

//@@ mathpairs requires: base
// float32 routines of math.frexp, math.modf, math.nextafter and math.isclose (the math table's rows): the
// tuple results as structs whose members are the tuple's items in order. Special operands are handled
// here (MSL leaves frexp's exponent of an infinity and modf of an infinity open): frexp of 0, inf or NaN
// is (x, 0); modf(+-inf) is (+-0, +-inf) as C's. nextafter works on the bit patterns (so a subnormal
// neighbour of zero is produced, as nextafterf does, though Apple GPUs flush it in later arithmetic).
struct nm_frexp_f32 { float mantissa; int exponent; };
struct nm_modf_f32 { float first; float second; };
NM_INLINE nm_frexp_f32 nm_frexp(float x) {
    nm_frexp_f32 r;
    r.mantissa = x;
    r.exponent = 0;
    if (isfinite(x) && x != 0.0f) {
        r.mantissa = metal::frexp(x, r.exponent);
    }
    return r;
}
NM_INLINE nm_modf_f32 nm_modf(float x) {
    nm_modf_f32 r;
    r.second = metal::trunc(x);
    r.first = isinf(x) ? metal::copysign(0.0f, x) : metal::copysign(x - r.second, x);
    if (isnan(x)) {
        r.first = x;
    }
    return r;
}
NM_INLINE float nm_nextafter(float x, float y) {
    uint ux = as_type<uint>(x), uy = as_type<uint>(y);
    uint ax = ux & 0x7FFFFFFFu, ay = uy & 0x7FFFFFFFu;
    if (ax > 0x7F800000u || ay > 0x7F800000u) {
        return as_type<float>((ax > 0x7F800000u ? ux : uy) | 0x00400000u);
    }
    if (ux == uy || (ax == 0u && ay == 0u)) {
        return y;
    }
    if (ax == 0u) {
        return as_type<float>((uy & 0x80000000u) | 1u);
    }
    // Signed keys order the values as the reals (integer compares: no subnormal is flushed here).
    int kx = (ux >> 31) != 0u ? -int(ax) : int(ax);
    int ky = (uy >> 31) != 0u ? -int(ay) : int(ay);
    bool away = (kx < ky) == ((ux >> 31) == 0u);
    return as_type<float>(away ? ux + 1u : ux - 1u);
}
// math.isclose(a, b, rel_tol=, abs_tol=) as CPython computes it (in float32 here).
NM_INLINE bool nm_isclose(float a, float b, float rel_tol, float abs_tol) {
    if (a == b) {
        return true;
    }
    if (isinf(a) || isinf(b)) {
        return false;
    }
    float diff = metal::fabs(b - a);
    return diff <= metal::fabs(rel_tol * b) || diff <= metal::fabs(rel_tol * a) || diff <= abs_tol;
}

// The kernel sanitizer's hooks (compiler/sanitize.py owns the layout: each @name@ is replaced by its
// number there). CPU reference device only: addresses are compared as integers.
//@@ sanitizer requires:
struct nm_san_entry {
    uint tag, addr_lo, addr_hi, w_thread, w_epoch, w_site, r1_thread, r_epoch, r1_site, r2_thread, r2_site;
    uint w_sepoch, r1_sepoch, r2_sepoch, gen, pad;
};
static inline device uint* nm_san_header(thread const nm_env& c) { return c.err + @ERROR_RECORD_WORDS@u; }
static inline uint nm_san_thread(thread const nm_env& c) {
    return c.tid.x + c.tsize.x * (c.tid.y + c.tsize.y * c.tid.z);
}
static inline uint nm_san_group(thread const nm_env& c) {
    return c.tgid.x + c.ngroups.x * (c.tgid.y + c.ngroups.y * c.tgid.z);
}
static inline void nm_san_begin(thread const nm_env& c) {
    device uint* s = nm_san_header(c);
    if (nm_san_thread(c) != 0u) {
        return;
    }
    // A free slot (owner 0), from the threadgroup's claim number on; the threadgroup's last thread to exit
    // frees it (nm_san_end). No free slot: the threadgroup is not checked (counted as lost).
    uint claim = atomic_fetch_add_explicit((device atomic_uint*)(s + @claims@), 1u, memory_order_relaxed);
    uint slots = s[@slots@];
    uint g = nm_san_group(c) + 1u;
    for (uint k = 0u; k < slots; k++) {
        uint slot = (claim + k) % slots;
        device uint* h = s + s[@slot_headers@] + @SLOT_WORDS@u * slot;
        uint expected = 0u;
        bool won = false;
        while (!(won = atomic_compare_exchange_weak_explicit((device atomic_uint*)h, &expected, g,
                                                               memory_order_relaxed, memory_order_relaxed))) {
            if (expected != 0u) {
                break;
            }
        }
        if (won) {
            for (uint i = 1u; i < @SLOT_WORDS@u; i++) {
                h[i] = 0u;
            }
            if (s[@sync_threads@] != 0u) {
                uint n = c.tsize.x * c.tsize.y * c.tsize.z * @SYNC_WORDS@u;
                device uint* r = s + s[@sync_threads@] + slot * n;
                for (uint i = 0u; i < n; i++) {
                    r[i] = 0u;
                }
            }
            s[s[@slot_of@] + g - 1u] = slot;
            return;
        }
    }
    s[s[@slot_of@] + g - 1u] = @NO_SITE@u;
}
static inline device uint* nm_san_slot(thread const nm_env& c, thread uint& slot) {
    device uint* s = nm_san_header(c);
    uint g = nm_san_group(c);
    slot = s[s[@slot_of@] + g];
    device uint* h = s + s[@slot_headers@] + @SLOT_WORDS@u * (slot == @NO_SITE@u ? 0u : slot);
    if (slot == @NO_SITE@u || atomic_load_explicit((device atomic_uint*)h, memory_order_relaxed) != g + 1u) {
        atomic_fetch_add_explicit((device atomic_uint*)(s + @lost@), 1u, memory_order_relaxed);
        return nullptr;
    }
    return h;
}
// A thread's exit (the destructor of the kernel's nm_san_exit guard): the last thread of the threadgroup
// frees its slot.
static inline void nm_san_end(thread const nm_env& c) {
    uint slot;
    device uint* h = nm_san_slot(c, slot);
    if (h == nullptr) {
        return;
    }
    device uint* s = nm_san_header(c);
    if (s[@sync_threads@] != 0u) {
        s[s[@sync_threads@] + (slot * c.tsize.x * c.tsize.y * c.tsize.z + nm_san_thread(c)) * @SYNC_WORDS@u + 2u] = 1u;
    }
    h[3] += 1u;
    if (h[3] == c.tsize.x * c.tsize.y * c.tsize.z) {
        atomic_store_explicit((device atomic_uint*)h, 0u, memory_order_relaxed);
    }
}
struct nm_san_exit {
    thread const nm_env& c;
    ~nm_san_exit() {
        nm_san_end(c);
    }
};
static inline void nm_san_barrier(thread const nm_env& c) {
    uint slot;
    device uint* h = nm_san_slot(c, slot);
    if (h == nullptr) {
        return;
    }
    h[2] += 1u;
    if (h[2] == c.tsize.x * c.tsize.y * c.tsize.z) {
        h[2] = 0u;
        h[1] += 1u;
    }
}
static inline void nm_san_report(device uint* s, uint kind, uint site, uint prev_site, uint g, uint t, uint prev_t,
                                 long i0, long i1, long i2, uint extra) {
    uint n = atomic_fetch_add_explicit((device atomic_uint*)(s + @reports@), 1u, memory_order_relaxed);
    if (n >= s[@max_reports@]) {
        return;
    }
    device uint* r = s + s[@report_base@] + @REPORT_WORDS@u * n;
    r[0] = kind; r[1] = site; r[2] = prev_site; r[3] = g; r[4] = t; r[5] = prev_t;
    r[6] = (uint)i0; r[7] = (uint)i1; r[8] = (uint)i2; r[9] = extra;
}
// Two accesses of an element by threads u and t (each with the threadgroup's barrier epoch and its SIMD
// group's SIMD-barrier epoch at the time) are ordered when a threadgroup barrier lies between them, or
// when both threads are in one SIMD group and a SIMD-group barrier lies between them.
static inline bool nm_san_ordered(uint u, uint u_epoch, uint u_sepoch, uint t, uint epoch, uint sepoch) {
    return u == t || u_epoch != epoch || ((u - 1u) / 32u == (t - 1u) / 32u && u_sepoch != sepoch);
}
static inline void nm_san_tg(thread const nm_env& c, ulong addr, uint site, uint kind, long i0, long i1, long i2) {
    uint slot;
    device uint* h = nm_san_slot(c, slot);
    if (h == nullptr) {
        return;
    }
    device uint* s = nm_san_header(c);
    uint g = nm_san_group(c) + 1u;
    uint t = nm_san_thread(c) + 1u;
    uint epoch = h[1];
    uint sepoch = h[@SIMD_EPOCHS@u + (t - 1u) / 32u];
    uint cap = s[@capacity@];
    uint checks = s[@checks@];
    uint gen = s[@generation@];
    device nm_san_entry* table = (device nm_san_entry*)(s + s[@tables@]) + (ulong)slot * cap;
    uint lo = (uint)addr, hi = (uint)(addr >> 32);
    uint k = cap > 1u ? ((lo ^ (hi * 0x9E3779B9u)) * 2654435761u) >> s[@shift@] : 0u;
    device nm_san_entry* e = nullptr;
    for (uint probe = 0u; probe < cap; probe++) {
        device nm_san_entry* x = table + ((k + probe) & (cap - 1u));
        if (x->tag != g || x->gen != gen) {
            x->tag = g; x->gen = gen; x->addr_lo = lo; x->addr_hi = hi;
            x->w_thread = 0u; x->r1_thread = 0u; x->r2_thread = 0u;
            e = x;
            break;
        }
        if (x->addr_lo == lo && x->addr_hi == hi) {
            e = x;
            break;
        }
    }
    if (e == nullptr) {
        atomic_fetch_add_explicit((device atomic_uint*)(s + @lost@), 1u, memory_order_relaxed);
        return;
    }
    bool race = (checks & 1u) != 0u;
    uint w_site = e->w_site & 0x7FFFFFFFu;
    bool w_atomic = (e->w_site >> 31) != 0u;
    bool r1_races = e->r1_thread != 0u && !nm_san_ordered(e->r1_thread, e->r_epoch, e->r1_sepoch, t, epoch, sepoch);
    bool r2_races = e->r2_thread != 0u && !nm_san_ordered(e->r2_thread, e->r_epoch, e->r2_sepoch, t, epoch, sepoch);
    if (e->w_thread == 0u && kind != @WRITE@u) {
        if ((checks & 2u) != 0u) {
            nm_san_report(s, @REPORT_INIT@u, site, @NO_SITE@u, g - 1u, t - 1u, @NO_SITE@u, i0, i1, i2, 0u);
        }
    } else if (race && e->w_thread != 0u && !nm_san_ordered(e->w_thread, e->w_epoch, e->w_sepoch, t, epoch, sepoch)
               && !(kind == @ATOMIC@u && w_atomic)) {
        nm_san_report(s, @REPORT_RACE@u, site, w_site, g - 1u, t - 1u, e->w_thread - 1u, i0, i1, i2, 0u);
    } else if (race && kind != @READ@u && r1_races) {
        nm_san_report(s, @REPORT_RACE@u, site, e->r1_site, g - 1u, t - 1u, e->r1_thread - 1u, i0, i1, i2, 0u);
    } else if (race && kind != @READ@u && r2_races) {
        nm_san_report(s, @REPORT_RACE@u, site, e->r2_site, g - 1u, t - 1u, e->r2_thread - 1u, i0, i1, i2, 0u);
    }
    if (kind == @READ@u) {
        // Remember up to two readers of this epoch: this thread replaces its own entry, or one that no
        // longer races with anything after it.
        if (e->r1_thread == 0u || e->r_epoch != epoch || e->r1_thread == t) {
            if (e->r1_thread != t || e->r_epoch != epoch) {
                e->r2_thread = 0u;
            }
            e->r1_thread = t; e->r1_site = site; e->r1_sepoch = sepoch; e->r_epoch = epoch;
        } else if (e->r2_thread == 0u || e->r2_thread == t) {
            e->r2_thread = t; e->r2_site = site; e->r2_sepoch = sepoch;
        }
    } else {
        e->w_thread = t; e->w_epoch = epoch; e->w_sepoch = sepoch;
        e->w_site = site | (kind == @ATOMIC@u ? 0x80000000u : 0u);
        e->r1_thread = 0u; e->r2_thread = 0u;
    }
}
// A whole record of a threadgroup array: each of its bytes is an element (its fields, and their elements, are
// accessed at their own addresses).
static inline void nm_san_tg_bytes(thread const nm_env& c, ulong addr, uint bytes, uint site, uint kind, long i0,
                                   long i1, long i2) {
    for (uint b = 0u; b < bytes; b++) {
        nm_san_tg(c, addr + b, site, kind, i0, i1, i2);
    }
}
// A SIMD-group barrier (simdgroup_barrier, syncwarp): orders the accesses of its SIMD group's threads.
static inline void nm_san_simd_barrier(thread const nm_env& c) {
    uint slot;
    device uint* h = nm_san_slot(c, slot);
    if (h == nullptr) {
        return;
    }
    uint n = c.tsize.x * c.tsize.y * c.tsize.z;
    uint sg = nm_san_thread(c) / 32u;
    uint lanes = min(32u, n - sg * 32u);
    h[@SIMD_ARRIVALS@u + sg] += 1u;
    if (h[@SIMD_ARRIVALS@u + sg] == lanes) {
        h[@SIMD_ARRIVALS@u + sg] = 0u;
        h[@SIMD_EPOCHS@u + sg] += 1u;
    }
}
// A SIMD-group barrier (simdgroup_barrier, syncwarp) with the sync check, called before it with
// simd_broadcast_first(site) of the lanes that met there: every lane of the SIMD group must reach the same
// SIMD-group barrier (MSL: every thread of the group must reach it). The CPU device runs each SIMD-group
// function as a rendezvous of the SIMD group's live lanes at one call, and the broadcast takes the site as
// its operand, so the C++ compiler cannot merge two sites' rendezvous into one: fewer lanes than the SIMD
// group has (others exited, or wait at another barrier), or lanes of another site, are a divergent
// SIMD-group barrier, reported once, by the lowest lane that arrived.
static inline void nm_san_simd_sync(thread const nm_env& c, uint site, uint first_site) {
    uint mask = (uint)(ulong)simd_active_threads_mask();
    uint n = c.tsize.x * c.tsize.y * c.tsize.z;
    uint t = nm_san_thread(c);
    uint lanes = min(32u, n - t / 32u * 32u);
    uint full = lanes == 32u ? 0xFFFFFFFFu : (1u << lanes) - 1u;
    if ((mask != full || first_site != site) && t % 32u == ctz(mask)) {
        nm_san_report(nm_san_header(c), @REPORT_SIMD_SYNC@u, site, first_site, nm_san_group(c), t, 0u, 0l, 0l, 0l,
                      mask);
    }
}
// A write (or atomic) of device memory: the element's last writer is kept in a table shared by every
// threadgroup (filled under a compare-and-swap, as threadgroups run in parallel); a write by another
// threadgroup than the last writer's, not both atomics, is reported (a warning on the host).
static inline void nm_san_dev(thread const nm_env& c, ulong addr, uint site, uint kind, long i0, long i1, long i2) {
    device uint* s = nm_san_header(c);
    uint cap = s[@device_capacity@];
    if (cap == 0u) {
        return;
    }
    uint g = nm_san_group(c) + 1u;
    uint t = nm_san_thread(c);
    uint lo = (uint)addr, hi = (uint)(addr >> 32);
    uint k = cap > 1u ? ((lo ^ (hi * 0x9E3779B9u)) * 2654435761u) >> s[@device_shift@] : 0u;
    device uint* table = s + s[@device_table@];
    // An entry's state word is generation * 4 + (1: being filled, 2: ready); an entry of an earlier launch
    // (another generation) is free, so the table is not cleared between launches.
    uint gen = s[@generation@] * 4u;
    // At most @DEVICE_PROBES@ probes: a full table costs a bounded time per write (the write is counted as lost).
    for (uint probe = 0u; probe < min(cap, @DEVICE_PROBES@u); probe++) {
        device uint* e = table + @DEVICE_WORDS@u * ((k + probe) & (cap - 1u));
        device atomic_uint* state = (device atomic_uint*)e;
        uint expected = atomic_load_explicit(state, memory_order_relaxed);
        while ((expected & ~3u) != gen) {
            if (atomic_compare_exchange_weak_explicit(state, &expected, gen + 1u, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                e[1] = lo; e[2] = hi; e[4] = t; e[5] = site | (kind == @ATOMIC@u ? 0x80000000u : 0u);
                atomic_store_explicit((device atomic_uint*)(e + 3), g, memory_order_relaxed);
                atomic_store_explicit(state, gen + 2u, memory_order_relaxed);
                return;
            }
        }
        while (atomic_load_explicit(state, memory_order_relaxed) == gen + 1u) {
        }
        if (e[1] != lo || e[2] != hi) {
            continue;
        }
        uint prev_site = e[5];
        uint prev_thread = e[4];
        uint prev = atomic_exchange_explicit((device atomic_uint*)(e + 3), g, memory_order_relaxed);
        e[4] = t;
        e[5] = site | (kind == @ATOMIC@u ? 0x80000000u : 0u);
        bool both_atomic = kind == @ATOMIC@u && (prev_site >> 31) != 0u;
        if (prev != g && !both_atomic) {
            nm_san_report(s, @REPORT_DEVICE_RACE@u, site, prev_site & 0x7FFFFFFFu, g - 1u, t, prev - 1u, i0, i1, i2,
                          prev_thread);
        }
        return;
    }
    atomic_fetch_add_explicit((device atomic_uint*)(s + @device_lost@), 1u, memory_order_relaxed);
}
// An access of device memory (init): when the address lies in one of the launch's device_array allocations
// the host tracks (its initialised-shadow ranges), a write (or atomic) marks its bytes written, and a read (or
// atomic) of a byte never written since the allocation is reported (prev_site: the range's number).
static inline void nm_san_devinit(thread const nm_env& c, ulong addr, uint size, uint site, uint kind, long i0,
                                  long i1, long i2) {
    device uint* s = nm_san_header(c);
    uint n = s[@init_count@];
    device uint* r = s + s[@init_table@];
    for (uint k = 0u; k < n; k++, r += @INIT_WORDS@u) {
        ulong base = (ulong)r[0] | ((ulong)r[1] << 32);
        ulong len = (ulong)r[2] | ((ulong)r[3] << 32);
        if (addr < base || addr - base >= len) {
            continue;
        }
        device uchar* shadow = (device uchar*)(s + r[4]) + (addr - base);
        uint m = (uint)min((ulong)size, len - (addr - base));
        if (kind != @WRITE@u) {
            bool unwritten = false;
            for (uint b = 0u; b < m; b++) {
                unwritten = unwritten || shadow[b] == 0u;
            }
            if (unwritten) {
                nm_san_report(s, @REPORT_DEVICE_INIT@u, site, k, nm_san_group(c), nm_san_thread(c), @NO_SITE@u,
                              i0, i1, i2, 0u);
            }
        }
        if (kind != @READ@u) {
            for (uint b = 0u; b < m; b++) {
                shadow[b] = 1u;
            }
        }
        return;
    }
}
// An access of a local array (init) at p, checked against one local array of the function (at base, nbytes
// long, with its shadow: declared next to it, zero at the function's entry, marking the bytes this thread
// wrote): a read (or atomic) of a byte this thread has not written is reported.
static inline void nm_san_local(thread const nm_env& c, thread const uchar* p, thread const uchar* base, uint nbytes,
                                thread uchar* shadow, uint size, uint site, uint kind, long i0, long i1, long i2) {
    if (p < base || p >= base + nbytes) {
        return;
    }
    uint at = (uint)(p - base);
    uint m = min(size, nbytes - at);
    if (kind != @WRITE@u) {
        bool unwritten = false;
        for (uint b = 0u; b < m; b++) {
            unwritten = unwritten || shadow[at + b] == 0u;
        }
        if (unwritten) {
            nm_san_report(nm_san_header(c), @REPORT_LOCAL_INIT@u, site, @NO_SITE@u, nm_san_group(c),
                          nm_san_thread(c), @NO_SITE@u, i0, i1, i2, 0u);
        }
    }
    if (kind != @READ@u) {
        for (uint b = 0u; b < m; b++) {
            shadow[at + b] = 1u;
        }
    }
}
// A threadgroup barrier (sync): the thread's record counts its arrivals and keeps the barrier's site, so that
// the host names every thread of a divergent barrier (where it waits, or that it exited, and after how many).
static inline void nm_san_sync(thread const nm_env& c, uint site) {
    device uint* s = nm_san_header(c);
    if (s[@sync_threads@] == 0u) {
        return;
    }
    uint slot;
    device uint* h = nm_san_slot(c, slot);
    if (h == nullptr) {
        return;
    }
    device uint* r = s + s[@sync_threads@] + (slot * c.tsize.x * c.tsize.y * c.tsize.z + nm_san_thread(c)) *
                     @SYNC_WORDS@u;
    r[0] += 1u;
    r[1] = site;
}

/*
 * cpu_fibers.c -- the CPU device's work-items as fibers: the runtime hooks kernel code calls
 * (threadgroup_barrier, the SIMD-group exchange), the fiber scheduler of one threadgroup with its barrier
 * and SIMD-group rendezvous and divergence detection, and the measurement of the context switch.
 */
#include "cpu_engine.h"

/* MARK: - runtime hooks called from kernel code */

static void fail_outside_fibers(worker *w) {
    w->signo = 0; /* 0 marks "barrier outside fiber mode" */
    w->in_kernel = 0;
    siglongjmp(w->jb, 1);
}

static void rt_threadgroup_barrier(uint32_t msl_line) {
    worker *w = tl_worker;
    if (!w->fiber_mode) fail_outside_fibers(w);
    fiber *f = &w->fibers[w->current];
    f->line = msl_line;
    f->state = F_BARRIER;
    nm_ctx_switch(&f->sp, w->sched_sp);
}

static nm_simd_group_state *rt_simd_exchange(const void *site, const void *operand, uint32_t size, uint32_t *lane) {
    worker *w = tl_worker;
    if (!w->fiber_mode) fail_outside_fibers(w);
    uint32_t i = w->current;
    nm_simd_group_state *g = &w->sg[i >> 5];
    if (size > 32) size = 32;
    if (size) memcpy(g->in[i & 31], operand, size);
    fiber *f = &w->fibers[i];
    f->site = site;
    f->state = F_SIMD;
    nm_ctx_switch(&f->sp, w->sched_sp);
    *lane = i & 31;
    return g;
}

static void rt_fail(const char *message) {
    worker *w = tl_worker;
    w->kernel_error = message;
    w->signo = -1;
    w->in_kernel = 0;
    siglongjmp(w->jb, 1);
}

const nm_rt_api nm_cpu_rt_api = {NM_KERNEL_ABI_VERSION, rt_threadgroup_barrier, rt_simd_exchange, rt_fail};

/* MARK: - fibers */

static void fiber_main(void *arg) {
    worker *w = tl_worker;
    uint32_t i = (uint32_t)(uintptr_t)arg;
    w->k->run_item(w->L, w->tg_ptrs, w->group, i);
    w->fibers[i].state = F_DONE;
    nm_ctx_switch(&w->fibers[i].sp, w->sched_sp);
}

NM_ENGINE_PRIVATE int fiber_stack(fiber *f) {
    if (f->stack) return 0;
    size_t total = g_stack_bytes + g_page;
    void *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return -1;
    mprotect(base, g_page, PROT_NONE); /* guard page: an overflow faults instead of corrupting memory */
    f->stack = (char *)base + g_page;
    return 0;
}

NM_ENGINE_PRIVATE void group_coords(const nm_launch *L, uint32_t g, uint32_t out[3]) {
    out[0] = g % L->groups[0];
    out[1] = (g / L->groups[0]) % L->groups[1];
    out[2] = g / (L->groups[0] * L->groups[1]);
}

/* Where the barrier on an MSL line is: its Python location, or the MSL line. */
static void describe_barrier(const worker *w, uint32_t line, char *out, size_t len) {
    const char *where = w->k->barrier_site ? w->k->barrier_site(line) : NULL;
    if (where) snprintf(out, len, "the barrier at %s", where);
    else snprintf(out, len, "the barrier on line %u of the kernel's MSL", line);
}

/* Appends " (threads (x,y,z), ...)" naming up to 6 work-items of the group in `state` (and, for F_BARRIER,
   waiting on `line`), by their position in the threadgroup. */
static void append_threads(const worker *w, uint32_t state, uint32_t line, char *out, size_t len) {
    const fiber *f = w->fibers;
    const uint32_t *t = w->L->threads;
    uint32_t shown = 0, total = 0;
    size_t n = strlen(out);
    for (uint32_t i = 0; i < w->nthreads; i++) {
        if (f[i].state != state || (state == F_BARRIER && f[i].line != line)) continue;
        if (shown < 6) {
            n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s(%u,%u,%u)", shown ? ", " : " (threads ",
                                  i % t[0], (i / t[0]) % t[1], i / (t[0] * t[1]));
            shown++;
        }
        total++;
    }
    if (total > shown) n += (size_t)snprintf(out + n, n < len ? len - n : 0, ", ...");
    if (shown) snprintf(out + n, n < len ? len - n : 0, ")");
}

/* Every live work-item waits at a threadgroup_barrier. A barrier that not every work-item of the
   threadgroup reaches, at the same call, is undefined behaviour on a GPU (MSL specification, 6.9.1: "all
   threads in a threadgroup executing the kernel must encounter" it): fails the dispatch naming the barrier,
   the work-items waiting elsewhere and those that have exited; 0 when every work-item is at one call. */
static int barrier_diverged(worker *w, char *err, size_t errlen) {
    const fiber *f = w->fibers;
    uint32_t n = w->nthreads;
    /* The common case, in one pass: every work-item waits at the first one's call. */
    uint32_t same = 0;
    for (uint32_t i = 0; i < n; i++) same += f[i].state == F_BARRIER && f[i].line == f[0].line;
    if (same == n) return 0;
    /* Diverged (a failure, so its cost does not matter): the barrier is the line most work-items wait on. */
    uint32_t best = 0, best_count = 0, exited = 0, elsewhere = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (f[i].state == F_DONE) { exited++; continue; }
        uint32_t c = 0;
        for (uint32_t j = 0; j < n; j++) c += f[j].state == F_BARRIER && f[j].line == f[i].line;
        if (c > best_count) { best_count = c; best = f[i].line; }
    }
    elsewhere = n - exited - best_count;
    if (exited == 0 && elsewhere == 0) return 0;
    uint32_t gc[3];
    group_coords(w->L, w->group, gc);
    char where[512];
    describe_barrier(w, best, where, sizeof where);
    int k = snprintf(err, errlen, "hit a divergent barrier in threadgroup (%u,%u,%u): %u work-items wait at %s, "
                     "%u did not arrive", gc[0], gc[1], gc[2], best_count, where, exited + elsewhere);
    size_t used = k > 0 ? (size_t)k : 0;
    /* the other barriers, each with its work-items */
    uint32_t reported[8], nreported = 0;
    for (uint32_t i = 0; i < n && used < errlen; i++) {
        if (f[i].state != F_BARRIER || f[i].line == best) continue;
        int seen = 0;
        for (uint32_t r = 0; r < nreported; r++) seen |= reported[r] == f[i].line;
        if (seen || nreported == 8) continue;
        reported[nreported++] = f[i].line;
        uint32_t c = 0;
        for (uint32_t j = 0; j < n; j++) c += f[j].state == F_BARRIER && f[j].line == f[i].line;
        describe_barrier(w, f[i].line, where, sizeof where);
        used += (size_t)snprintf(err + used, errlen - used, "; %u wait at %s", c, where);
        append_threads(w, F_BARRIER, f[i].line, err, errlen);
        used = strlen(err);
    }
    if (exited && used < errlen) {
        used += (size_t)snprintf(err + used, errlen - used, "; %u have exited without reaching it", exited);
        append_threads(w, F_DONE, 0, err, errlen);
        used = strlen(err);
    }
    if (used < errlen)
        snprintf(err + used, errlen - used, " (every work-item of a threadgroup must reach the same barrier the "
                 "same number of times: a barrier some work-items skip is undefined behaviour on a GPU, which may "
                 "hang or give wrong results)");
    return 1;
}

NM_ENGINE_PRIVATE int run_group_fibers(worker *w, char *err, size_t errlen) {
    uint32_t n = w->nthreads;
    fiber *f = w->fibers;
    for (uint32_t i = 0; i < n; i++) {
        if (fiber_stack(&f[i]) != 0) {
            snprintf(err, errlen, "could not allocate a %llu-byte fiber stack (NUMBA_METAL_CPU_STACK_KB)",
                     (unsigned long long)g_stack_bytes);
            return 1;
        }
        /* Stagger the stack tops across cache sets: equally spaced stacks would all map to the same sets
           and every switch would miss. */
        size_t color = ((size_t)i * 17u % 64u) * 64u + ((size_t)i / 64u % 4u) * 4096u;
        f[i].sp = nm_ctx_init(f[i].stack, g_stack_bytes - color, fiber_main, (void *)(uintptr_t)i);
        f[i].state = F_RUN;
    }
    uint32_t nsg = (n + 31) / 32;
    for (;;) {
        for (uint32_t i = 0; i < n; i++) {
            if (f[i].state == F_RUN) {
                w->current = i;
                nm_ctx_switch(&w->sched_sp, f[i].sp);
            }
        }
        uint32_t done = 0, at_barrier = 0, at_simd = 0;
        for (uint32_t i = 0; i < n; i++) {
            done += f[i].state == F_DONE;
            at_barrier += f[i].state == F_BARRIER;
            at_simd += f[i].state == F_SIMD;
        }
        uint32_t live = n - done;
        if (live == 0) return 0;
        if (at_barrier == live) {
            if (barrier_diverged(w, err, errlen)) return 1;
            for (uint32_t i = 0; i < n; i++)
                if (f[i].state == F_BARRIER) f[i].state = F_RUN;
            continue;
        }
        int released = 0;
        for (uint32_t s = 0; s < nsg; s++) {
            uint32_t lo = s * 32, hi = lo + 32 < n ? lo + 32 : n;
            uint32_t lanes_live = 0, lanes_waiting = 0;
            const void *site = NULL;
            for (uint32_t i = lo; i < hi; i++) {
                if (f[i].state == F_DONE) continue;
                lanes_live++;
                if (f[i].state == F_SIMD) {
                    lanes_waiting++;
                    /* Lanes waiting at different call sites (divergent SIMD-group calls): complete the
                       site with the lowest code address first (see docs/limitations.md). */
                    if (!site || (uintptr_t)f[i].site < (uintptr_t)site) site = f[i].site;
                }
            }
            if (lanes_live == 0 || lanes_waiting != lanes_live) continue;
            uint32_t mask = 0;
            for (uint32_t i = lo; i < hi; i++)
                if (f[i].state == F_SIMD && f[i].site == site) {
                    mask |= 1u << (i - lo);
                    f[i].state = F_RUN;
                }
            w->sg[s].mask = mask;
            w->sg[s].computed = 0;
            released = 1;
        }
        if (released) continue;
        uint32_t gc[3];
        group_coords(w->L, w->group, gc);
        snprintf(err, errlen,
                 "threadgroup (%u,%u,%u) can make no progress: %u work-items wait at threadgroup_barrier, "
                 "%u at SIMD-group functions and %u have exited (divergent barrier: every live work-item of a "
                 "threadgroup must reach the same threadgroup_barrier, every live lane of a SIMD group the same "
                 "SIMD-group function)",
                 gc[0], gc[1], gc[2], at_barrier, at_simd, done);
        return 1;
    }
}

/* MARK: - measuring the switch */

static void *g_bench_main_sp, *g_bench_fiber_sp;
static void bench_fiber(void *arg) {
    uint32_t n = (uint32_t)(uintptr_t)arg;
    for (uint32_t i = 0; i < n; i++) nm_ctx_switch(&g_bench_fiber_sp, g_bench_main_sp);
    for (;;) nm_ctx_switch(&g_bench_fiber_sp, g_bench_main_sp);
}

double nm_measure_context_switch_ns(uint32_t iterations) {
    pthread_once(&g_config_once, config_init);
    fiber f = {0};
    if (fiber_stack(&f) != 0) return -1;
    g_bench_fiber_sp = nm_ctx_init(f.stack, g_stack_bytes, bench_fiber, (void *)(uintptr_t)iterations);
    uint64_t t0 = nm_clock_ns();
    for (uint32_t i = 0; i < iterations; i++) nm_ctx_switch(&g_bench_main_sp, g_bench_fiber_sp);
    uint64_t t1 = nm_clock_ns();
    munmap((char *)f.stack - g_page, g_stack_bytes + g_page);
    return (double)(t1 - t0) / (2.0 * iterations);
}

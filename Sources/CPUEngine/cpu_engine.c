/*
 * cpu_engine.c -- the CPU reference device's executor.
 *
 * Queues: each nm_cq owns an executor thread that runs its work items in order. Items live in a ring
 * of fixed-size chunks (stable addresses; at most NM_CQ_MAX_PENDING outstanding, after which submitting
 * blocks until the executor catches up, so memory is bounded however much is queued).
 *
 * Dispatches: the threadgroups of a dispatch are handed out in chunks to the worker pool and to the
 * executor thread itself. Every threadgroup runs wholly on one OS thread, so thread_local storage in
 * a kernel object is exactly per-threadgroup (static threadgroup variables rely on this).
 *  - Kernels that call no barrier or SIMD-group function run as a plain loop over work-items
 *    (nm_kernel_run_groups, compiled into the kernel object, where clang can inline the kernel).
 *  - Others run each work-item as a fiber. threadgroup_barrier parks a fiber until every live
 *    work-item of the threadgroup is parked there; SIMD-group functions park it until every live lane
 *    of its SIMD group (32 consecutive linear indices) is parked at a SIMD-group function, then the lanes
 *    at one call site exchange operands. No progress possible = divergent barrier: the dispatch fails.
 *
 * Faults: SIGSEGV/SIGBUS/SIGILL/SIGFPE raised while a worker runs kernel code are caught on an
 * alternate signal stack and siglongjmp back to the worker, which fails the dispatch (naming the
 * kernel and the signal) and goes on. Signals raised anywhere else go to the previous handler. Kernels
 * are compiled with stack-clash protection (every page of a new frame is touched in order), so a stack
 * overflow always lands in the guard page below the stack and is reported as one.
 *
 * Stopping: a dispatch that runs past its time limit (the watchdog thread) or whose queue is cancelled
 * is failed, and every thread running its kernel code is sent NM_INTERRUPT_SIGNAL, whose handler leaves
 * the kernel the way a fault does. Kernel code holds no locks and allocates nothing, so leaving it at
 * any instruction is safe.
 */
#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "nm_internal.h"
#include "context.h"

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

/* MARK: - configuration */

#define NM_CQ_CHUNK 1024u
#define NM_CQ_MAX_PENDING 32768u
#define NM_CQ_HISTORY 65536u
#define NM_CQ_SPIN_NS 50000u

/* Interrupts a thread running kernel code of a stopped dispatch. SIGURG is ignored by default and has no
   use in a process that does not handle out-of-band socket data; one the runtime does not expect goes on
   to the previous handler. */
#define NM_INTERRUPT_SIGNAL SIGURG

static uint32_t g_threads;
static uint64_t g_stack_bytes;
static uint64_t g_spin_ns = NM_CQ_SPIN_NS;
static uint64_t g_time_limit_ns;
static size_t g_page;
static pthread_once_t g_config_once = PTHREAD_ONCE_INIT;

/* One line per environment variable whose value was refused: the variable, its value and what is used. */
static char g_config_warnings[2048];

/* The integer value of environment variable `name` if it is set to a whole decimal integer in lo..hi,
   else `fallback` (and a line in g_config_warnings naming the variable, its value and `used`). */
static long long config_integer(const char *name, long long lo, long long hi, long long fallback,
                                const char *used) {
    const char *s = getenv(name);
    if (!s || !*s) return fallback;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno == 0 && end != s && *end == '\0' && v >= lo && v <= hi) return v;
    size_t n = strlen(g_config_warnings);
    snprintf(g_config_warnings + n, sizeof g_config_warnings - n,
             "%s='%.64s' is not an integer from %lld to %lld; using %s\n", name, s, lo, hi, used);
    return fallback;
}

static void config_init(void) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    g_threads = cores > 0 ? (uint32_t)cores : 1;
    char used[64];
    snprintf(used, sizeof used, "%u (the online cores)", g_threads);
    g_threads = (uint32_t)config_integer("NUMBA_METAL_CPU_THREADS", 1, 1024, g_threads, used);
    g_stack_bytes = (uint64_t)config_integer("NUMBA_METAL_CPU_STACK_KB", 16, 65536, 128, "128") * 1024;
    snprintf(used, sizeof used, "%llu", (unsigned long long)(g_spin_ns / 1000));
    g_spin_ns = (uint64_t)config_integer("NUMBA_METAL_CPU_SPIN_US", 0, 100000, (long long)(g_spin_ns / 1000),
                                         used) * 1000;
    g_time_limit_ns = (uint64_t)config_integer("NUMBA_METAL_CPU_TIME_LIMIT_MS", 0, 1000000000ll, 0,
                                               "0 (no limit)") * 1000000ull;
    g_page = (size_t)sysconf(_SC_PAGESIZE);
    g_stack_bytes = (g_stack_bytes + g_page - 1) & ~(uint64_t)(g_page - 1);
}

uint32_t nm_cpu_thread_count(void) {
    pthread_once(&g_config_once, config_init);
    return g_threads;
}

uint64_t nm_cpu_stack_bytes(void) {
    pthread_once(&g_config_once, config_init);
    return g_stack_bytes;
}

uint64_t nm_cpu_default_time_limit_ns(void) {
    pthread_once(&g_config_once, config_init);
    return g_time_limit_ns;
}

const char *nm_config_warnings(void) {
    pthread_once(&g_config_once, config_init);
    return g_config_warnings;
}

/* MARK: - workers */

enum { F_RUN = 0, F_BARRIER = 1, F_SIMD = 2, F_DONE = 3 };

typedef struct fiber {
    void *sp;
    void *stack;          /* usable stack above the guard page; NULL until first needed */
    const void *site;     /* call site of the SIMD-group function it waits in */
    uint32_t state;
} fiber;

#define NM_TG_SCRATCH (32768 + 31 * 16 + 64)

struct job;

typedef struct worker {
    sigjmp_buf jb;
    volatile sig_atomic_t in_kernel;
    volatile int signo;
    void *volatile fault_addr;
    struct job *volatile job;   /* the dispatch whose kernel code this thread runs */
    uintptr_t stack_lo;         /* this thread's own stack: lowest usable address, size, guard below it */
    size_t stack_size, stack_guard;
    int fiber_mode;
    fiber *fibers;        /* 1024 */
    void *sched_sp;
    uint32_t current;
    uint32_t nthreads;
    const nm_cpu_kernel *k;
    const nm_launch *L;
    void *tg_ptrs[31];
    uint32_t group;
    unsigned char *tg_scratch;
    nm_simd_group_state sg[32];
} worker;

static _Thread_local worker *tl_worker;

static const int g_signals[5] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, NM_INTERRUPT_SIGNAL};
static struct sigaction g_previous[5];
static pthread_once_t g_signals_once = PTHREAD_ONCE_INIT;

static int job_interrupted(struct job *j);

/* Hands a signal the runtime does not take to whoever had it before. 1 if someone did. */
static int chain_signal(int sig, siginfo_t *info, void *uc) {
    for (int i = 0; i < 5; i++) {
        if (g_signals[i] != sig) continue;
        struct sigaction *old = &g_previous[i];
        if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
            old->sa_sigaction(sig, info, uc);
            return 1;
        }
        if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN && old->sa_handler) {
            old->sa_handler(sig);
            return 1;
        }
    }
    return 0;
}

static void fault_handler(int sig, siginfo_t *info, void *uc) {
    worker *w = tl_worker;
    if (w && w->in_kernel) {
        w->in_kernel = 0;
        w->signo = sig;
        w->fault_addr = info ? info->si_addr : NULL;
        siglongjmp(w->jb, 1);
    }
    if (chain_signal(sig, info, uc)) return;
    /* Not ours and nobody else's: restore the default action; returning re-executes the fault. */
    signal(sig, SIG_DFL);
}

static void interrupt_handler(int sig, siginfo_t *info, void *uc) {
    worker *w = tl_worker;
    if (w && w->in_kernel && w->job && job_interrupted(w->job)) {
        w->in_kernel = 0;
        w->signo = sig;
        w->fault_addr = NULL;
        siglongjmp(w->jb, 1);
    }
    chain_signal(sig, info, uc);
}

static void install_signal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    /* SA_NODEFER: siglongjmp out of the handler does not restore the signal mask (sigsetjmp(jb, 0)). */
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 4; i++) sigaction(g_signals[i], &sa, &g_previous[i]);
    sa.sa_sigaction = interrupt_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
    sigaction(NM_INTERRUPT_SIGNAL, &sa, &g_previous[4]);
}

/* Frees a worker (fiber stacks, scratch, alternate signal stack): at the exit of any thread that ran
   kernels, through the key's destructor, so that threads the runtime does not own (a simulated GPU's)
   leave nothing behind. */
static void worker_release(void *p) {
    worker *w = (worker *)p;
    if (!w) return;
    tl_worker = NULL;
    for (uint32_t i = 0; i < 1024; i++)
        if (w->fibers[i].stack) munmap((char *)w->fibers[i].stack - g_page, g_stack_bytes + g_page);
    stack_t ss, old;
    memset(&ss, 0, sizeof ss);
    ss.ss_flags = SS_DISABLE;
    if (sigaltstack(&ss, &old) == 0 && old.ss_sp) free(old.ss_sp);
    free(w->fibers);
    free(w->tg_scratch);
    free(w);
}

/* Where this thread's own stack ends (for telling a stack overflow from another fault). */
static void thread_stack_bounds(worker *w) {
#if defined(__APPLE__)
    pthread_t self = pthread_self();
    uintptr_t top = (uintptr_t)pthread_get_stackaddr_np(self);
    w->stack_size = pthread_get_stacksize_np(self);
    w->stack_lo = top - w->stack_size;
    w->stack_guard = g_page;
#elif defined(__linux__)
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        void *lo = NULL;
        size_t size = 0, guard = 0;
        pthread_attr_getstack(&a, &lo, &size);
        pthread_attr_getguardsize(&a, &guard);
        w->stack_lo = (uintptr_t)lo;
        w->stack_size = size;
        w->stack_guard = guard ? guard : g_page;
        pthread_attr_destroy(&a);
    }
#endif
}

static pthread_key_t g_worker_key;
static pthread_once_t g_worker_key_once = PTHREAD_ONCE_INIT;
static void worker_key_init(void) { pthread_key_create(&g_worker_key, worker_release); }

static worker *worker_get(void) {
    worker *w = tl_worker;
    if (w) return w;
    pthread_once(&g_config_once, config_init);
    pthread_once(&g_signals_once, install_signal_handlers);
    pthread_once(&g_worker_key_once, worker_key_init);
    w = (worker *)calloc(1, sizeof(worker));
    w->fibers = (fiber *)calloc(1024, sizeof(fiber));
    w->tg_scratch = (unsigned char *)aligned_alloc(64, NM_TG_SCRATCH);
    size_t alt = 64 * 1024;
    stack_t ss;
    ss.ss_sp = malloc(alt);
    ss.ss_size = alt;
    ss.ss_flags = 0;
    sigaltstack(&ss, NULL);
    nm_enable_ftz_daz();
    thread_stack_bounds(w);
    tl_worker = w;
    pthread_setspecific(g_worker_key, w);
    return w;
}

/* MARK: - runtime hooks called from kernel code */

static void fail_outside_fibers(worker *w) {
    w->signo = 0; /* 0 marks "barrier outside fiber mode" */
    w->in_kernel = 0;
    siglongjmp(w->jb, 1);
}

static void rt_threadgroup_barrier(void) {
    worker *w = tl_worker;
    if (!w->fiber_mode) fail_outside_fibers(w);
    fiber *f = &w->fibers[w->current];
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

const nm_rt_api nm_cpu_rt_api = {NM_KERNEL_ABI_VERSION, rt_threadgroup_barrier, rt_simd_exchange};

/* MARK: - fibers */

static void fiber_main(void *arg) {
    worker *w = tl_worker;
    uint32_t i = (uint32_t)(uintptr_t)arg;
    w->k->run_item(w->L, w->tg_ptrs, w->group, i);
    w->fibers[i].state = F_DONE;
    nm_ctx_switch(&w->fibers[i].sp, w->sched_sp);
}

static int fiber_stack(fiber *f) {
    if (f->stack) return 0;
    size_t total = g_stack_bytes + g_page;
    void *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return -1;
    mprotect(base, g_page, PROT_NONE); /* guard page: an overflow faults instead of corrupting memory */
    f->stack = (char *)base + g_page;
    return 0;
}

static void group_coords(const nm_launch *L, uint32_t g, uint32_t out[3]) {
    out[0] = g % L->groups[0];
    out[1] = (g / L->groups[0]) % L->groups[1];
    out[2] = g / (L->groups[0] * L->groups[1]);
}

/* Runs threadgroup w->group as fibers. 0 = done, 1 = no progress possible (message in err). */
static int run_group_fibers(worker *w, char *err, size_t errlen) {
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

/* MARK: - jobs and the worker pool */

#define NM_RESIGNAL_NS 100000000ull   /* threads of a stopped dispatch still in its kernel are signalled again */

typedef struct job {
    const nm_cpu_kernel *k;
    const nm_launch *L;
    const uint32_t *tg_lengths;
    uint32_t tg_count;
    uint32_t nthreads;
    uint64_t total;
    uint64_t chunk;
    uint64_t next;       /* atomic: next group to hand out */
    int failed;          /* atomic: err is set */
    int interrupted;     /* atomic: stopped (time limit, cancel): its threads leave its kernel code */
    int cancelled;       /* stopped by a cancel whose message won */
    int active;          /* pool workers inside run_chunks (pool mutex) */
    struct job *link;    /* jobs handing out work (pool mutex) */
    /* running dispatches, for the watchdog and cancels (pool mutex) */
    struct job *running_next;
    const nm_dispatch_control *control;
    uint64_t deadline;   /* nm_clock_ns; 0 = none */
    uint64_t last_signal;
    pthread_t caller;
    char err[1024];
} job;

static pthread_mutex_t g_pool_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_pool_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_pool_idle = PTHREAD_COND_INITIALIZER;
static job *g_jobs;
static uint32_t g_pool_started;
static pthread_t g_pool_threads[1024];
static job *g_running;
static pthread_cond_t g_watchdog_cv;
static pthread_once_t g_watchdog_cv_once = PTHREAD_ONCE_INIT;
static int g_watchdog_started;

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (invalid memory access)";
    case SIGBUS: return "SIGBUS (misaligned or unmapped memory access)";
    case SIGILL: return "SIGILL (illegal instruction, e.g. a trap)";
    case SIGFPE: return "SIGFPE (arithmetic fault, e.g. integer division by zero)";
    default: return "a signal";
    }
}

static int job_interrupted(job *j) { return __atomic_load_n(&j->interrupted, __ATOMIC_SEQ_CST); }

/* Records the dispatch's failure (the first one wins; 1 if this one did) and hands out no more groups. */
static int job_fail(job *j, const char *msg) {
    int expected = 0, won = 0;
    if (__atomic_compare_exchange_n(&j->failed, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        snprintf(j->err, sizeof j->err, "%s", msg);
        won = 1;
    }
    __atomic_store_n(&j->next, j->total, __ATOMIC_RELEASE);
    return won;
}

/* Sends the interrupt to every thread that may run j's kernel code: its caller and the pool (a thread
   running other code ignores it). Pool mutex held: j is registered, so its caller has not returned. */
static void signal_job_threads(job *j) {
    j->last_signal = nm_clock_ns();
    pthread_kill(j->caller, NM_INTERRUPT_SIGNAL);
    for (uint32_t i = 0; i < g_pool_started; i++) pthread_kill(g_pool_threads[i], NM_INTERRUPT_SIGNAL);
}

static void *watchdog_main(void *arg);

static void watchdog_cv_init(void) { nm_cond_init_monotonic(&g_watchdog_cv); }

/* Pool mutex held. */
static void watchdog_wake(void) {
    pthread_once(&g_watchdog_cv_once, watchdog_cv_init);
    if (!g_watchdog_started) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, watchdog_main, NULL) == 0) g_watchdog_started = 1;
        pthread_attr_destroy(&attr);
    }
    pthread_cond_signal(&g_watchdog_cv);
}

/* Stops j: fails it with msg (unless it failed already) and interrupts its threads. Pool mutex held. */
static void job_interrupt(job *j, const char *msg, int cancel) {
    if (job_fail(j, msg) && cancel) j->cancelled = 1;
    __atomic_store_n(&j->interrupted, 1, __ATOMIC_SEQ_CST);
    signal_job_threads(j);
    watchdog_wake();  /* it signals again while threads stay in the kernel */
}

static const char *k_cancelled_running =
    "was cancelled while it ran (its queue was cancelled: a KeyboardInterrupt or another stop during a wait); "
    "its results are incomplete";

/* Ends dispatches past their time limit; signals stopped ones again while their threads stay in kernel code. */
static void *watchdog_main(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_pool_mutex);
    for (;;) {
        uint64_t now = nm_clock_ns(), next = 0;
        for (job *j = g_running; j; j = j->running_next) {
            uint64_t due;
            if (job_interrupted(j)) {
                if (now - j->last_signal >= NM_RESIGNAL_NS) signal_job_threads(j);
                due = j->last_signal + NM_RESIGNAL_NS;
            } else if (j->deadline && now >= j->deadline) {
                char msg[256];
                snprintf(msg, sizeof msg, "ran longer than its time limit of %.3f s and was stopped (the per-dispatch limit set by "
                         "NUMBA_METAL_CPU_TIME_LIMIT_MS or the device's set_time_limit); its results are incomplete",
                         (double)j->control->time_limit_ns / 1e9);
                job_interrupt(j, msg, 0);
                due = j->last_signal + NM_RESIGNAL_NS;
            } else if (j->deadline) {
                due = j->deadline;
            } else {
                continue;
            }
            if (next == 0 || due < next) next = due;
        }
        nm_cond_wait_until(&g_watchdog_cv, &g_pool_mutex, next);
    }
    return NULL;
}

/* Makes j findable by the watchdog and by cancels (pool mutex held). */
static void job_register(job *j) {
    const nm_dispatch_control *c = j->control;
    j->caller = pthread_self();
    j->running_next = g_running;
    g_running = j;
    if (!c) return;
    if (c->time_limit_ns) {
        j->deadline = nm_clock_ns() + c->time_limit_ns;
        watchdog_wake();
    }
    /* A cancel that came before this registration did not see j: look for it here. */
    if (c->cancel_through && __atomic_load_n(c->cancel_through, __ATOMIC_ACQUIRE) >= c->id)
        job_interrupt(j, k_cancelled_running, 1);
}

static void job_unregister(job *j) {
    for (job **p = &g_running; *p; p = &(*p)->running_next)
        if (*p == j) {
            *p = j->running_next;
            break;
        }
}

void nm_cpu_cancel(const void *tag) {
    pthread_mutex_lock(&g_pool_mutex);
    for (job *j = g_running; j; j = j->running_next) {
        const nm_dispatch_control *c = j->control;
        if (c && tag && c->tag == tag && c->cancel_through && !job_interrupted(j)
            && __atomic_load_n(c->cancel_through, __ATOMIC_ACQUIRE) >= c->id)
            job_interrupt(j, k_cancelled_running, 1);
    }
    pthread_mutex_unlock(&g_pool_mutex);
}

/* The message for a fault of kernel code: a stack overflow when the address is at the low end of the
   stack the code ran on (stack-clash protection makes an overflow touch the guard page first). */
static void describe_fault(worker *w, char *msg, size_t len) {
    uint32_t gc[3];
    group_coords(w->L, w->group, gc);
    uintptr_t a = (uintptr_t)w->fault_addr;
    int segv = w->signo == SIGSEGV || w->signo == SIGBUS;
    if (w->fiber_mode) {
        uintptr_t lo = (uintptr_t)w->fibers[w->current].stack;
        if (segv && lo && a >= lo - g_page && a < lo + g_page) {
            snprintf(msg, len, "overflowed its work-item's %llu KiB stack in threadgroup (%u,%u,%u): its local arrays "
                     "(metal.local.array) and calls need more; the dispatch was abandoned. Metal gives a GPU thread far "
                     "less private memory: use smaller local arrays (or raise NUMBA_METAL_CPU_STACK_KB, the CPU "
                     "device's stack for kernels with barriers or SIMD-group functions)",
                     (unsigned long long)(g_stack_bytes / 1024), gc[0], gc[1], gc[2]);
            return;
        }
        snprintf(msg, len, "faulted with %s at address %p in threadgroup (%u,%u,%u); the dispatch was abandoned "
                 "(an out-of-range index or a bad pointer is the usual cause)",
                 signal_name(w->signo), w->fault_addr, gc[0], gc[1], gc[2]);
        return;
    }
    if (segv && w->stack_lo && a >= w->stack_lo - w->stack_guard - g_page && a < w->stack_lo + g_page) {
        snprintf(msg, len, "overflowed the %llu KiB stack of the CPU thread running it (in one of threadgroups %u.. of "
                 "the dispatch): its local arrays (metal.local.array) and calls need more; the dispatch was abandoned. "
                 "Metal gives a GPU thread far less private memory: use smaller local arrays",
                 (unsigned long long)(w->stack_size / 1024), w->group);
        return;
    }
    snprintf(msg, len, "faulted with %s at address %p in one of threadgroups %u.. of the dispatch; the dispatch was "
             "abandoned (an out-of-range index or a bad pointer is the usual cause)",
             signal_name(w->signo), w->fault_addr, w->group);
}

static void run_chunks(job *j) {
    worker *w = worker_get();
    unsigned char *base = (unsigned char *)(((uintptr_t)w->tg_scratch + 15) & ~(uintptr_t)15);
    size_t off = 0;
    for (uint32_t i = 0; i < 31; i++) {
        if (i < j->tg_count && j->tg_lengths[i]) {
            w->tg_ptrs[i] = base + off;
            off += (j->tg_lengths[i] + 15u) & ~15u;
        } else {
            w->tg_ptrs[i] = NULL;
        }
    }
    w->k = j->k;
    w->L = j->L;
    w->nthreads = j->nthreads;
    w->fiber_mode = j->k->uses_fibers != 0;
    w->job = j;
    if (sigsetjmp(w->jb, 0) != 0) {
        w->job = NULL;
        if (w->signo == NM_INTERRUPT_SIGNAL) return;  /* stopped: the job carries the reason */
        char msg[768];
        if (w->signo == 0) {
            uint32_t gc[3];
            group_coords(w->L, w->group, gc);
            snprintf(msg, sizeof msg, "called a barrier or SIMD-group function the runtime did not expect "
                     "(the source scan found none); threadgroup (%u,%u,%u)", gc[0], gc[1], gc[2]);
        } else {
            describe_fault(w, msg, sizeof msg);
        }
        job_fail(j, msg);
        return;
    }
    char err[768];
    for (;;) {
        uint64_t g0 = __atomic_fetch_add(&j->next, j->chunk, __ATOMIC_ACQ_REL);
        if (g0 >= j->total) break;
        uint64_t cnt = j->total - g0 < j->chunk ? j->total - g0 : j->chunk;
        /* Entering kernel code: in_kernel is published before interrupted is read, and a stop publishes
           interrupted before it signals, so either this thread sees the stop or the signal sees it in the kernel. */
        w->group = (uint32_t)g0;
        __atomic_store_n(&w->in_kernel, 1, __ATOMIC_SEQ_CST);
        if (job_interrupted(j)) {
            w->in_kernel = 0;
            break;
        }
        if (w->fiber_mode) {
            int rc = 0;
            for (uint64_t g = g0; g < g0 + cnt && !rc; g++) {
                w->group = (uint32_t)g;
                rc = run_group_fibers(w, err, sizeof err);
            }
            w->in_kernel = 0;
            if (rc) {
                job_fail(j, err);
                break;
            }
        } else {
            j->k->run_groups(j->L, w->tg_ptrs, (uint32_t)g0, (uint32_t)cnt);
            w->in_kernel = 0;
        }
    }
    w->job = NULL;
}

static void *pool_main(void *arg) {
    (void)arg;
    worker_get();
    pthread_mutex_lock(&g_pool_mutex);
    for (;;) {
        while (!g_jobs) pthread_cond_wait(&g_pool_work, &g_pool_mutex);
        job *j = g_jobs;
        j->active++;
        pthread_mutex_unlock(&g_pool_mutex);
        run_chunks(j);
        pthread_mutex_lock(&g_pool_mutex);
        if (g_jobs == j) g_jobs = j->link; /* exhausted: nothing left to hand out */
        if (--j->active == 0) pthread_cond_broadcast(&g_pool_idle);
    }
    return NULL;
}

static void pool_start(void) {
    pthread_mutex_lock(&g_pool_mutex);
    while (g_pool_started + 1 < g_threads) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 8u << 20);
        if (pthread_create(&t, &attr, pool_main, NULL) != 0) {
            pthread_attr_destroy(&attr);
            break;
        }
        pthread_attr_destroy(&attr);
        g_pool_threads[g_pool_started++] = t;
    }
    pthread_mutex_unlock(&g_pool_mutex);
}

static void run_job(job *j) {
    pthread_once(&g_config_once, config_init);
    uint64_t parts = (uint64_t)g_threads * 4;
    j->chunk = j->total / parts ? j->total / parts : 1;
    if (j->k->uses_fibers) j->chunk = j->total / (g_threads * 8ull) ? j->total / (g_threads * 8ull) : 1;
    int alone = j->total <= 1 || g_threads <= 1;
    if (!alone && g_pool_started + 1 < g_threads) pool_start();
    pthread_mutex_lock(&g_pool_mutex);
    job_register(j);
    if (!alone) {
        j->link = NULL;
        job **tail = &g_jobs;
        while (*tail) tail = &(*tail)->link;
        *tail = j;
        pthread_cond_broadcast(&g_pool_work);
    }
    pthread_mutex_unlock(&g_pool_mutex);
    run_chunks(j);
    pthread_mutex_lock(&g_pool_mutex);
    if (!alone) {
        for (job **p = &g_jobs; *p; p = &(*p)->link)
            if (*p == j) {
                *p = j->link;
                break;
            }
        while (j->active > 0) pthread_cond_wait(&g_pool_idle, &g_pool_mutex);
    }
    job_unregister(j);
    pthread_mutex_unlock(&g_pool_mutex);
}

int nm_cpu_run_dispatch(const nm_cpu_kernel *kernel, const nm_launch *launch, const uint32_t *threadgroup_lengths,
                        uint32_t threadgroup_count, const nm_dispatch_control *control, char *err, size_t errlen) {
    job j;
    memset(&j, 0, offsetof(job, err));
    j.err[0] = 0;
    j.k = kernel;
    j.L = launch;
    j.tg_lengths = threadgroup_lengths;
    j.tg_count = threadgroup_count;
    j.control = control;
    j.nthreads = launch->threads[0] * launch->threads[1] * launch->threads[2];
    j.total = (uint64_t)launch->groups[0] * launch->groups[1] * launch->groups[2];
    run_job(&j);
    if (!j.failed) return NM_DISPATCH_OK;
    snprintf(err, errlen, "%s", j.err);
    return j.cancelled ? NM_DISPATCH_CANCELLED : NM_DISPATCH_FAILED;
}

/* MARK: - queues */

typedef struct hist_entry {
    uint64_t id, start, end;
} hist_entry;

/* A failure not reported yet, for its submitter's wait. */
typedef struct failure {
    uint64_t id;
    nm_owner owner;
    int cancelled;
    char *message;
    struct failure *next;
} failure;

#define NM_CQ_MAX_FAILURES 4096u

struct nm_cq {
    pthread_mutex_t submit_lock;
    pthread_mutex_t m;
    pthread_cond_t cv_work, cv_done;
    nm_work *chunks[NM_CQ_MAX_PENDING / NM_CQ_CHUNK];
    uint64_t issued;         /* last reserved id (submit_lock) */
    uint64_t committed;      /* last committed id (m) */
    uint64_t completed;      /* last completed id (m; read atomically elsewhere) */
    uint64_t cancel_through; /* atomic: committed work up to this id is abandoned */
    failure *failures;       /* m: unreported failures in id order, at most one per submitter */
    uint32_t failure_count;  /* m */
    int waiters;             /* atomic: threads waiting for `completed` to advance */
    int sleeping;            /* m: the executor waits for work */
    int released;            /* m: nobody holds the queue any more */
    hist_entry *hist;
    void (*release_ref)(void *);
};

uint32_t nm_cq_history_length(void) { return NM_CQ_HISTORY; }

static nm_work *cq_slot(nm_cq *q, uint64_t id) {
    uint64_t r = (id - 1) % NM_CQ_MAX_PENDING;
    return &q->chunks[r / NM_CQ_CHUNK][r % NM_CQ_CHUNK];
}

static char *format_failure(const nm_work *w, const char *detail) {
    const char *name = w->label[0] ? w->label : (w->kernel ? w->kernel->name : "?");
    size_t n = strlen(detail) + strlen(name) + 96;
    char *msg = (char *)malloc(n);
    if (!msg) return NULL;
    if (w->kind == NM_WORK_DISPATCH) snprintf(msg, n, "kernel '%s' %s", name, detail);
    else snprintf(msg, n, "%s (work %llu) %s", w->kind == NM_WORK_COPY ? "a buffer copy" : "a buffer fill",
                  (unsigned long long)w->id, detail);
    return msg;
}

/* Keeps msg for its submitter's next wait (m held): the first failure since that thread's last report. */
static void record_failure(nm_cq *q, const nm_work *w, char *msg, int cancelled) {
    if (!msg) return;
    failure **tail = &q->failures;
    for (; *tail; tail = &(*tail)->next)
        if (nm_owner_same((*tail)->owner, w->owner)) {
            free(msg);
            return;
        }
    failure *f = q->failure_count < NM_CQ_MAX_FAILURES ? (failure *)malloc(sizeof *f) : NULL;
    if (!f) {
        free(msg);
        return;
    }
    *f = (failure){w->id, w->owner, cancelled, msg, NULL};
    *tail = f;
    q->failure_count++;
}

static int cancelled_before(nm_cq *q, uint64_t id) {
    return __atomic_load_n(&q->cancel_through, __ATOMIC_ACQUIRE) >= id;
}

/* Runs w; *failure is its failure's message (NULL when it succeeded). Returns NM_DISPATCH_*. */
static int execute(nm_cq *q, nm_work *w, char **failure) {
    *failure = NULL;
    switch (w->kind) {
    case NM_WORK_DISPATCH: {
        nm_launch L = w->launch;
        if (w->arg_slot < 31) L.buffers[w->arg_slot] = w->arg_length > NM_WORK_INLINE_ARGS ? w->arg_heap : w->arg_inline;
        nm_dispatch_control control = {q, w->id, &q->cancel_through, w->time_limit_ns};
        char err[1024];
        int rc = nm_cpu_run_dispatch(w->kernel, &L, w->tg_lengths, w->tg_count, &control, err, sizeof err);
        if (rc != NM_DISPATCH_OK) *failure = format_failure(w, err);
        return rc;
    }
    case NM_WORK_COPY:
        memmove(w->dst, w->src, w->n);
        break;
    case NM_WORK_FILL:
        memset(w->dst, w->value, w->n);
        break;
    case NM_WORK_WAIT_FOR: {
        /* Look again now and then: a cancel of this queue must not wait for the other one. */
        nm_cq *o = w->other;
        pthread_mutex_lock(&o->m);
        __atomic_fetch_add(&o->waiters, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&o->completed, __ATOMIC_SEQ_CST) < w->other_id && !cancelled_before(q, w->id))
            nm_cond_wait_until(&o->cv_done, &o->m, nm_clock_ns() + 50000000ull);
        __atomic_fetch_sub(&o->waiters, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_unlock(&o->m);
        break;
    }
    default:
        break;
    }
    return NM_DISPATCH_OK;
}

/* Wakes waiters (nm_cq_wait, wait_for, a full ring) after `completed` advanced. The waiter side
   increments `waiters` and then reads `completed`, both sequentially consistent, so one of the two
   sides always sees the other: no lost wake-up, and no lock or system call when nobody waits. */
static void cq_publish(nm_cq *q, uint64_t id) {
    __atomic_store_n(&q->completed, id, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&q->waiters, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&q->m);
        pthread_cond_broadcast(&q->cv_done);
        pthread_mutex_unlock(&q->m);
    }
}

static void cq_free(nm_cq *q) {
    for (size_t i = 0; i < NM_CQ_MAX_PENDING / NM_CQ_CHUNK; i++) free(q->chunks[i]);
    for (failure *f = q->failures, *next; f; f = next) {
        next = f->next;
        free(f->message);
        free(f);
    }
    free(q->hist);
    pthread_mutex_destroy(&q->submit_lock);
    pthread_mutex_destroy(&q->m);
    pthread_cond_destroy(&q->cv_work);
    pthread_cond_destroy(&q->cv_done);
    free(q);
}

static const char *k_cancelled_queued =
    "was cancelled before it started (its queue was cancelled: a KeyboardInterrupt or another stop during a "
    "wait); its results are missing";

static void *cq_main(void *arg) {
    nm_cq *q = (nm_cq *)arg;
    worker_get(); /* also reads the configuration */
    for (;;) {
        /* Launches arrive microseconds apart: spin briefly before sleeping, so that a burst of submits
           does not pay a futex wake-up per item. */
        uint64_t spin_until = nm_clock_ns() + g_spin_ns;
        for (uint32_t k = 0; __atomic_load_n(&q->committed, __ATOMIC_ACQUIRE) == q->completed; k++) {
#if defined(__x86_64__)
            __builtin_ia32_pause();
#elif defined(__aarch64__)
            __asm__ volatile("yield");
#endif
            if ((k & 63) == 63 && nm_clock_ns() > spin_until) break;
        }
        pthread_mutex_lock(&q->m);
        while (q->completed == q->committed && !q->released) {
            q->sleeping = 1;
            pthread_cond_wait(&q->cv_work, &q->m);
            q->sleeping = 0;
        }
        uint64_t target = q->committed;
        if (q->completed == target) {
            pthread_mutex_unlock(&q->m);
            break;
        }
        pthread_mutex_unlock(&q->m);

        /* Run everything committed so far without touching the lock again. */
        for (uint64_t id = q->completed + 1; id <= target; id++) {
            nm_work *w = cq_slot(q, id);
            uint64_t start = nm_clock_ns();
            char *failure = NULL;
            int rc = NM_DISPATCH_OK;
            if (!cancelled_before(q, id)) {
                rc = execute(q, w, &failure);
            } else if (w->kind == NM_WORK_DISPATCH || w->kind == NM_WORK_COPY || w->kind == NM_WORK_FILL) {
                failure = format_failure(w, k_cancelled_queued);
                rc = NM_DISPATCH_CANCELLED;
            }
            uint64_t end = nm_clock_ns();
            hist_entry *h = &q->hist[id % NM_CQ_HISTORY];
            h->start = start;
            h->end = end;
            __atomic_store_n(&h->id, id, __ATOMIC_RELEASE);
            for (uint32_t i = 0; i < w->ref_count; i++) q->release_ref(w->refs[i]);
            w->ref_count = 0;
            free(w->arg_heap);
            w->arg_heap = NULL;
            if (failure) {
                pthread_mutex_lock(&q->m);
                record_failure(q, w, failure, rc == NM_DISPATCH_CANCELLED);
                pthread_mutex_unlock(&q->m);
            }
            cq_publish(q, id);
        }
    }
    cq_free(q);
    return NULL; /* the worker is freed by its key's destructor */
}

nm_cq *nm_cq_new(void (*release_ref)(void *)) {
    nm_cq *q = (nm_cq *)calloc(1, sizeof(nm_cq));
    if (!q) return NULL;
    q->hist = (hist_entry *)calloc(NM_CQ_HISTORY, sizeof(hist_entry));
    if (!q->hist) {
        free(q);
        return NULL;
    }
    q->release_ref = release_ref;
    pthread_mutex_init(&q->submit_lock, NULL);
    pthread_mutex_init(&q->m, NULL);
    pthread_cond_init(&q->cv_work, NULL);
    nm_cond_init_monotonic(&q->cv_done);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8u << 20);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, cq_main, q);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        free(q->hist);
        free(q);
        return NULL;
    }
    return q;
}

nm_work *nm_cq_reserve(nm_cq *q) {
    nm_owner owner = nm_owner_current();
    pthread_mutex_lock(&q->submit_lock);
    uint64_t id = q->issued + 1;
    if (id > NM_CQ_MAX_PENDING && __atomic_load_n(&q->completed, __ATOMIC_ACQUIRE) + NM_CQ_MAX_PENDING < id) {
        pthread_mutex_lock(&q->m);
        __atomic_fetch_add(&q->waiters, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&q->completed, __ATOMIC_SEQ_CST) + NM_CQ_MAX_PENDING < id)
            pthread_cond_wait(&q->cv_done, &q->m);
        __atomic_fetch_sub(&q->waiters, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_unlock(&q->m);
    }
    uint64_t r = (id - 1) % NM_CQ_MAX_PENDING;
    nm_work **chunk = &q->chunks[r / NM_CQ_CHUNK];
    if (!*chunk) {
        *chunk = (nm_work *)calloc(NM_CQ_CHUNK, sizeof(nm_work));
        if (!*chunk) {
            pthread_mutex_unlock(&q->submit_lock);
            return NULL;
        }
    }
    nm_work *w = &(*chunk)[r % NM_CQ_CHUNK];
    memset(w, 0, offsetof(nm_work, arg_inline));
    w->id = id;
    w->owner = owner;
    w->arg_slot = 31;
    q->issued = id;
    return w;
}

void nm_cq_commit(nm_cq *q, nm_work *w) {
    pthread_mutex_lock(&q->m);
    __atomic_store_n(&q->committed, w->id, __ATOMIC_RELEASE);
    if (q->sleeping) pthread_cond_signal(&q->cv_work);
    pthread_mutex_unlock(&q->m);
    pthread_mutex_unlock(&q->submit_lock);
}

void nm_cq_abandon(nm_cq *q, nm_work *w) {
    free(w->arg_heap);
    w->arg_heap = NULL;
    q->issued = w->id - 1;
    pthread_mutex_unlock(&q->submit_lock);
}

/* Waits (m held) until `completed` reaches target or the deadline passes; 1 on the deadline. */
static int cq_wait_completed(nm_cq *q, uint64_t target, uint64_t deadline_ns) {
    int late = 0;
    __atomic_fetch_add(&q->waiters, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&q->completed, __ATOMIC_SEQ_CST) < target && !late)
        late = nm_cond_wait_until(&q->cv_done, &q->m, deadline_ns);
    __atomic_fetch_sub(&q->waiters, 1, __ATOMIC_SEQ_CST);
    return late;
}

int nm_cq_wait(nm_cq *q, uint64_t *id, uint64_t deadline_ns, nm_owner waiter, char **message) {
    *message = NULL;
    pthread_mutex_lock(&q->m);
    uint64_t target = *id && *id < q->committed ? *id : q->committed;
    *id = target;
    if (cq_wait_completed(q, target, deadline_ns)) {
        pthread_mutex_unlock(&q->m);
        return NM_CQ_TIMED_OUT;
    }
    for (failure **p = &q->failures; *p; p = &(*p)->next) {
        failure *f = *p;
        if (f->id > target) break;
        if (!nm_owner_reports_to(f->owner, waiter)) continue;
        *p = f->next;
        q->failure_count--;
        *message = f->message;
        free(f);
        break;
    }
    pthread_mutex_unlock(&q->m);
    return *message ? NM_CQ_FAILED : NM_CQ_DONE;
}

int nm_cq_cancel(nm_cq *q, nm_owner canceller, uint64_t deadline_ns) {
    pthread_mutex_lock(&q->m);
    uint64_t through = q->committed;
    if (through > __atomic_load_n(&q->cancel_through, __ATOMIC_ACQUIRE))
        __atomic_store_n(&q->cancel_through, through, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&q->m);
    nm_cpu_cancel(q);
    pthread_mutex_lock(&q->m);
    int late = cq_wait_completed(q, through, deadline_ns);
    /* The canceller knows its own work was cancelled: only the other submitters are told. */
    for (failure **p = &q->failures; *p;) {
        failure *f = *p;
        if (f->cancelled && f->id <= through && nm_owner_same(f->owner, canceller)) {
            *p = f->next;
            q->failure_count--;
            free(f->message);
            free(f);
        } else {
            p = &f->next;
        }
    }
    pthread_mutex_unlock(&q->m);
    return late;
}

int nm_cq_query(nm_cq *q, uint64_t id) {
    if (id == 0) {  /* all work issued so far */
        id = __atomic_load_n(&q->issued, __ATOMIC_ACQUIRE);
        if (id == 0) return 1;
    }
    if (id > __atomic_load_n(&q->issued, __ATOMIC_ACQUIRE)) return -1;
    return __atomic_load_n(&q->completed, __ATOMIC_ACQUIRE) >= id ? 1 : 0;
}

int nm_cq_timestamps(nm_cq *q, uint64_t id, uint64_t *start, uint64_t *end) {
    int st = nm_cq_query(q, id);
    if (st < 0) return 3;
    if (st == 0) return 1;
    hist_entry *h = &q->hist[id % NM_CQ_HISTORY];
    if (__atomic_load_n(&h->id, __ATOMIC_ACQUIRE) != id) return 2;
    *start = h->start;
    *end = h->end;
    return 0;
}

uint64_t nm_cq_last_id(nm_cq *q) { return __atomic_load_n(&q->issued, __ATOMIC_ACQUIRE); }

void nm_cq_release(nm_cq *q) {
    pthread_mutex_lock(&q->m);
    q->released = 1;
    pthread_cond_signal(&q->cv_work);
    pthread_mutex_unlock(&q->m);
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

/*
 * cpu_pool.c -- the CPU reference device's executor: dispatches on the worker pool (this file), with
 * fibers in cpu_fibers.c, workers and signal handlers in cpu_worker.c, and queues in cpu_queue.c.
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
#include "cpu_engine.h"

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

NM_ENGINE_PRIVATE int job_interrupted(job *j) { return __atomic_load_n(&j->interrupted, __ATOMIC_SEQ_CST); }

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
        if (w->signo == -1) {
            uint32_t gc[3];
            group_coords(w->L, w->group, gc);
            snprintf(msg, sizeof msg, "%s (threadgroup (%u,%u,%u)); the dispatch was abandoned", w->kernel_error,
                     gc[0], gc[1], gc[2]);
        } else if (w->signo == 0) {
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

/*
 * cpu_worker.c -- the CPU device's executor: its configuration (read once from the environment) and the
 * per-thread worker (fiber table, threadgroup scratch, alternate signal stack, FTZ/DAZ), with the signal
 * handlers that take a fault or an interrupt of kernel code back to the worker.
 */
#include "cpu_engine.h"

/* MARK: - configuration */

NM_ENGINE_PRIVATE uint32_t g_threads;
NM_ENGINE_PRIVATE uint64_t g_stack_bytes;
NM_ENGINE_PRIVATE uint64_t g_spin_ns = NM_CQ_SPIN_NS;
static uint64_t g_time_limit_ns;
NM_ENGINE_PRIVATE size_t g_page;
NM_ENGINE_PRIVATE pthread_once_t g_config_once = PTHREAD_ONCE_INIT;

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

NM_ENGINE_PRIVATE void config_init(void) {
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

NM_ENGINE_PRIVATE _Thread_local worker *tl_worker;

static const int g_signals[5] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, NM_INTERRUPT_SIGNAL};
static struct sigaction g_previous[5];
static struct sigaction g_ours[5];
static pthread_once_t g_signals_once = PTHREAD_ONCE_INIT;

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

/* A signal sent by kill(), sigqueue(), tgkill() or raise() (si_code <= 0: SI_USER, SI_QUEUE, SI_TKILL, ...)
   rather than raised by an instruction (SEGV_MAPERR, FPE_INTDIV, ...: si_code > 0). */
static int signal_was_sent(const siginfo_t *info) { return info && info->si_code <= 0; }

/* What the process would have done without numba-metal with a sent fault signal whose previous disposition
   was SIG_DFL or SIG_IGN: ignore it, or take the default action (terminate with a core dump) by raising it
   again with the default disposition on this thread. Should that return, numba-metal's handler is put back. */
static void take_previous_disposition(int sig) {
    for (int i = 0; i < 5; i++) {
        if (g_signals[i] != sig) continue;
        if (g_previous[i].sa_handler == SIG_IGN) return;
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        sigaction(sig, &g_ours[i], NULL);
        return;
    }
}

static void fault_handler(int sig, siginfo_t *info, void *uc) {
    worker *w = tl_worker;
    int sent = signal_was_sent(info);
    if (w && w->in_kernel && !sent) {
        w->in_kernel = 0;
        w->signo = sig;
        w->fault_addr = info ? info->si_addr : NULL;
        siglongjmp(w->jb, 1);
    }
    if (chain_signal(sig, info, uc)) return;
    if (sent) {
        take_previous_disposition(sig);
        return;
    }
    /* A fault of code that is not a kernel's, and nobody else's handler: restore the default action;
       returning re-executes the faulting instruction, which then terminates the process. (An ignored
       SIGSEGV, SIGBUS, SIGILL or SIGFPE cannot stop the kernel from killing a process that faults.) */
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
    chain_signal(sig, info, uc);  /* otherwise SIGURG's default action: ignore it */
}

static void install_signal_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    /* SA_NODEFER: siglongjmp out of the handler does not restore the signal mask (sigsetjmp(jb, 0)). */
    sa.sa_sigaction = fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 4; i++) {
        g_ours[i] = sa;
        sigaction(g_signals[i], &sa, &g_previous[i]);
    }
    sa.sa_sigaction = interrupt_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
    g_ours[4] = sa;
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

NM_ENGINE_PRIVATE worker *worker_get(void) {
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

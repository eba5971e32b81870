/*
 * cpu_engine.h -- what the files of the CPU device's executor share (private to Sources/CPUEngine):
 * the configuration, the per-thread worker and its fibers, and the hooks between the worker pool
 * (cpu_pool.c), the fibers (cpu_fibers.c), the workers and their signal handlers (cpu_worker.c) and the
 * queues (cpu_queue.c). cpu_pool.c's header comment describes the executor as a whole.
 */
#ifndef NM_CPU_ENGINE_H
#define NM_CPU_ENGINE_H

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

/* Shared between the executor's files only: never exported from the library (a default-visibility global
   could be interposed by another library's symbol of the same name). */
#define NM_ENGINE_PRIVATE __attribute__((visibility("hidden")))

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0
#endif

/* MARK: - configuration (cpu_worker.c) */

#define NM_CQ_SPIN_NS 50000u

/* Interrupts a thread running kernel code of a stopped dispatch. SIGURG is ignored by default and has no
   use in a process that does not handle out-of-band socket data; one the runtime does not expect goes on
   to the previous handler. */
#define NM_INTERRUPT_SIGNAL SIGURG

NM_ENGINE_PRIVATE extern uint32_t g_threads;
NM_ENGINE_PRIVATE extern uint64_t g_stack_bytes;
NM_ENGINE_PRIVATE extern uint64_t g_spin_ns;
NM_ENGINE_PRIVATE extern size_t g_page;
NM_ENGINE_PRIVATE extern pthread_once_t g_config_once;
NM_ENGINE_PRIVATE void config_init(void);

/* MARK: - workers */

enum { F_RUN = 0, F_BARRIER = 1, F_SIMD = 2, F_DONE = 3 };

typedef struct fiber {
    void *sp;
    void *stack;          /* usable stack above the guard page; NULL until first needed */
    const void *site;     /* call site of the SIMD-group function it waits in */
    uint32_t line;        /* MSL line of the threadgroup_barrier it waits at */
    uint32_t state;
} fiber;

#define NM_TG_SCRATCH (32768 + 31 * 16 + 64)

struct job;

typedef struct worker {
    sigjmp_buf jb;
    volatile sig_atomic_t in_kernel;
    volatile int signo;         /* the fault's signal; 0: a barrier outside fiber mode; -1: kernel_error */
    void *volatile fault_addr;
    const char *kernel_error;   /* what the shim refused (a static string of the kernel object), signo -1 */
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

NM_ENGINE_PRIVATE extern _Thread_local worker *tl_worker;

/* cpu_worker.c: this thread's worker, created (with its signal stack and FP mode) on first use. */
NM_ENGINE_PRIVATE worker *worker_get(void);

/* cpu_fibers.c */
NM_ENGINE_PRIVATE int fiber_stack(fiber *f);
NM_ENGINE_PRIVATE void group_coords(const nm_launch *L, uint32_t g, uint32_t out[3]);
/* Runs threadgroup w->group as fibers. 0 = done, 1 = no progress possible (message in err). */
NM_ENGINE_PRIVATE int run_group_fibers(worker *w, char *err, size_t errlen);

/* cpu_pool.c */
NM_ENGINE_PRIVATE int job_interrupted(struct job *j);

#endif

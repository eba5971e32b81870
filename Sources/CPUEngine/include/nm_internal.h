/*
 * nm_internal.h -- C helpers the Swift runtime uses internally. Not part of the public ABI
 * (numba_metal_runtime.h is); Python never sees these declarations.
 *
 * What lives in C and why:
 *  - the CPU device's executor: per-queue work rings, the worker pool, threadgroups run as fibers
 *    (hand-written context switch), SIMD-group rendezvous, barrier deadlock detection;
 *  - fault capture (sigaltstack + SIGSEGV/SIGBUS/SIGILL/SIGFPE -> siglongjmp out of the work-item);
 *  - per-thread floating-point control (FTZ/DAZ) and the thread-local error message;
 *  - SHA-256 and small atomics.
 */
#ifndef NM_INTERNAL_H
#define NM_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include "numba_metal_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors, clock, atomics ---- */
void nm_set_last_error(const char *message);
uint64_t nm_clock_ns(void);
uint64_t nm_atomic_add_u64(uint64_t *p, int64_t delta);   /* returns the new value */
uint64_t nm_atomic_load_u64(const uint64_t *p);

/* ---- SHA-256 ---- */
void nm_sha256(const void *data, size_t n, uint8_t out[32]);
typedef struct { uint32_t h[8]; uint64_t len; uint8_t buf[64]; uint32_t fill; } nm_sha256_ctx;
void nm_sha256_init(nm_sha256_ctx *c);
void nm_sha256_update(nm_sha256_ctx *c, const void *data, size_t n);
void nm_sha256_final(nm_sha256_ctx *c, uint8_t out[32]);

/* ---- process helpers ---- */
/* Runs argv[0] with argv (NULL-terminated) via posix_spawnp, stdout+stderr to log_path.
   Returns the exit status (>=0), or -errno if it could not be started. */
int nm_run_process(const char *const *argv, const char *log_path);
/* Writes n bytes to an anonymous in-memory file (memfd on Linux, an unlinked private temp file
   elsewhere) and dlopens exactly those bytes. Returns the handle or NULL (message in err). */
void *nm_dlopen_bytes(const void *bytes, size_t n, const char *tmpdir, char *err, size_t errlen);
/* Path of the shared object that contains this library (dladdr), or "" */
const char *nm_library_path(void);

/* ---- kernel ABI between the runtime and a compiled CPU kernel (mirrors shim/metal_runtime_abi) ---- */
#define NM_KERNEL_ABI_VERSION 1
typedef struct nm_launch {
    void *buffers[31];          /* resolved [[buffer(i)]] pointers (contents + offset; the argument block) */
    uint32_t groups[3];         /* threadgroups per grid */
    uint32_t threads[3];        /* threads per threadgroup */
} nm_launch;

typedef struct nm_simd_group_state {
    unsigned char in[32][32];   /* each lane's operand (value plus a per-lane parameter) */
    unsigned char out[32][16];  /* each lane's result */
    uint32_t mask;              /* lanes taking part in this operation */
    uint32_t computed;          /* set by the first resumed lane once out[] is filled */
} nm_simd_group_state;

typedef struct nm_rt_api {
    uint32_t version;
    void (*threadgroup_barrier)(void);
    nm_simd_group_state *(*simd_exchange)(const void *site, const void *operand, uint32_t size, uint32_t *lane);
} nm_rt_api;

typedef void (*nm_run_groups_fn)(const nm_launch *, void *const *tg, uint32_t first_group, uint32_t count);
typedef void (*nm_run_item_fn)(const nm_launch *, void *const *tg, uint32_t group, uint32_t thread);

/* A loaded CPU kernel object. */
typedef struct nm_cpu_kernel {
    nm_run_groups_fn run_groups;
    nm_run_item_fn run_item;
    uint64_t static_threadgroup_bytes;
    uint32_t uses_fibers;       /* 1 when the source calls barriers or SIMD-group functions */
    char name[128];
} nm_cpu_kernel;

/* Resolves the entry points in a dlopen'ed kernel object. 0 on success, else message in err. */
int nm_cpu_kernel_bind(void *dl_handle, nm_cpu_kernel *k, char *err, size_t errlen);

/* Runs one dispatch to completion on the calling thread and the worker pool. threadgroup_lengths[i] is the
   byte length of [[threadgroup(i)]] for i < threadgroup_count. Returns 0, or 1 with what failed (a fault,
   a divergent barrier) in err, without the kernel's name. */
int nm_cpu_run_dispatch(const nm_cpu_kernel *kernel, const nm_launch *launch, const uint32_t *threadgroup_lengths,
                        uint32_t threadgroup_count, char *err, size_t errlen);

/* Binds address to [[buffer(slot)]] (slot < 31, checked by the caller's validation). */
static inline void nm_launch_bind_buffer(nm_launch *launch, uint32_t slot, void *address) {
    if (slot < 31) launch->buffers[slot] = address;
}

/* ---- CPU executor ---- */
#define NM_WORK_DISPATCH 1
#define NM_WORK_COPY 2
#define NM_WORK_FILL 3
#define NM_WORK_MARKER 4
#define NM_WORK_WAIT_FOR 5
#define NM_WORK_INLINE_ARGS 256

typedef struct nm_cq nm_cq;

typedef struct nm_work {
    uint64_t id;
    uint32_t kind;
    uint32_t ref_count;
    void *refs[33];                       /* retained runtime objects, released when the work completes */
    /* dispatch */
    const nm_cpu_kernel *kernel;
    nm_launch launch;
    uint32_t arg_slot;                    /* 31 = none */
    uint32_t arg_length;
    void *arg_heap;                       /* argument block when > NM_WORK_INLINE_ARGS bytes */
    uint32_t tg_count;
    uint32_t tg_lengths[31];
    char label[96];
    /* copy / fill */
    unsigned char *dst;
    const unsigned char *src;
    uint64_t n;
    uint8_t value;
    /* wait_for */
    nm_cq *other;
    uint64_t other_id;
    _Alignas(16) unsigned char arg_inline[NM_WORK_INLINE_ARGS];
} nm_work;

/* Typed access to a work item's arrays (Swift sees C arrays as tuples). */
/* Keeps object (a retained runtime object) until the work completes; at most 33 per item. */
static inline int nm_work_keep(nm_work *w, void *object) {
    if (w->ref_count >= sizeof w->refs / sizeof w->refs[0]) return -1;
    w->refs[w->ref_count++] = object;
    return 0;
}
/* Sets the byte length of [[threadgroup(slot)]] (slot < 31) and raises tg_count to cover it. */
static inline void nm_work_set_threadgroup_length(nm_work *w, uint32_t slot, uint32_t length) {
    if (slot >= 31) return;
    w->tg_lengths[slot] = length;
    if (w->tg_count < slot + 1) w->tg_count = slot + 1;
}
/* Copies a NUL-terminated label, truncated to the field. */
static inline void nm_work_set_label(nm_work *w, const char *label) {
    size_t i = 0;
    for (; label[i] && i + 1 < sizeof w->label; i++) w->label[i] = label[i];
    w->label[i] = 0;
}
/* Where a dispatch's argument block of length bytes is copied to: inline, or NULL when it needs arg_heap. */
static inline void *nm_work_inline_arguments(nm_work *w, uint32_t length) {
    return length <= NM_WORK_INLINE_ARGS ? (void *)w->arg_inline : NULL;
}

/* release_ref is called (on the executor thread) for every refs[] entry once its work completed. */
nm_cq *nm_cq_new(void (*release_ref)(void *));
/* Reserves the next slot (blocking while the queue holds its maximum of pending items), with id set
   and the other fields zeroed; the queue's submit lock is held until commit or cancel. */
nm_work *nm_cq_reserve(nm_cq *q);
void nm_cq_commit(nm_cq *q, nm_work *w);
void nm_cq_cancel(nm_cq *q, nm_work *w);
/* Waits for all committed work. Returns 0, or 1 with *message (malloc'ed; free it) naming the first
   failed kernel since the previous wait. */
int nm_cq_wait(nm_cq *q, char **message);
int nm_cq_query(nm_cq *q, uint64_t id);          /* 1 done, 0 pending, -1 never issued */
/* 0 ok, 1 not complete yet, 2 evicted from history, 3 never issued */
int nm_cq_timestamps(nm_cq *q, uint64_t id, uint64_t *start, uint64_t *end);
uint64_t nm_cq_last_id(nm_cq *q);
/* Drains the queue, stops its executor thread and frees it. Never call it from q's own executor. */
void nm_cq_destroy(nm_cq *q);
uint32_t nm_cq_history_length(void);

/* Worker pool configuration (read once): NUMBA_METAL_CPU_THREADS, NUMBA_METAL_CPU_STACK_KB. */
uint32_t nm_cpu_thread_count(void);
uint64_t nm_cpu_stack_bytes(void);

/* ---- per-thread FP control ---- */
void nm_enable_ftz_daz(void);

/* ---- fibers (exposed for tests/benchmarks of the switch itself) ---- */
double nm_measure_context_switch_ns(uint32_t iterations);

#ifdef __cplusplus
}
#endif
#endif

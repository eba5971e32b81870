/*
 * nm_internal.h -- C helpers the Swift runtime uses internally. Not part of the public ABI
 * (numba_metal_runtime.h is); Python never sees these declarations.
 *
 * What lives in C and why:
 *  - the CPU device's executor: per-queue work rings, the worker pool, threadgroups run as fibers
 *    (hand-written context switch), SIMD-group rendezvous, barrier deadlock detection;
 *  - fault capture (sigaltstack + SIGSEGV/SIGBUS/SIGILL/SIGFPE -> siglongjmp out of the work-item),
 *    and stopping a running dispatch (a time limit, a cancelled queue) the same way;
 *  - per-thread floating-point control (FTZ/DAZ) and the thread-local error message;
 *  - which thread submitted work (failures are reported to it), and whether this process is a fork;
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
void nm_atomic_store_u64(uint64_t *p, uint64_t value);

/* ---- the submitting thread ----
   A failure belongs to the thread that submitted the failed work: that thread's waits report it, other
   threads' waits leave it alone, and once the thread has exited any thread's wait reports it. An owner
   names a thread for as long as the process lives (tokens are never reused). */
typedef struct nm_owner {
    const void *slot;           /* the thread's registration (never freed; reused after the thread exits) */
    uint64_t token;             /* unique per thread; the slot holds it while the thread lives */
} nm_owner;
nm_owner nm_owner_current(void);
/* Whether the calling thread asked for its launches to be batched (nm_set_batching). */
int32_t nm_thread_batching(void);
int nm_owner_same(nm_owner a, nm_owner b);
int nm_owner_exited(nm_owner o);
/* True when a wait by `waiter` reports a failure owned by `owner`. */
static inline int nm_owner_reports_to(nm_owner owner, nm_owner waiter) {
    return nm_owner_same(owner, waiter) || nm_owner_exited(owner);
}

/* ---- fork ----
   Called by every entry point that starts using devices. In a child forked after that, the runtime's
   threads are gone and its locks may be held forever: nm_forked_child() is then 1 and nothing may be used. */
void nm_runtime_started(void);
int nm_forked_child(void);

/* ---- waiting with a deadline (monotonic nanoseconds, nm_clock_ns's base) ---- */
#include <pthread.h>
void nm_cond_init_monotonic(pthread_cond_t *cv);
/* pthread_cond_wait until deadline_ns (0: no deadline); 1 when the deadline has passed. */
int nm_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *m, uint64_t deadline_ns);

/* ---- SHA-256 ---- */
void nm_sha256(const void *data, size_t n, uint8_t out[32]);
typedef struct { uint32_t h[8]; uint64_t len; uint8_t buf[64]; uint32_t fill; } nm_sha256_ctx;
void nm_sha256_init(nm_sha256_ctx *c);
void nm_sha256_update(nm_sha256_ctx *c, const void *data, size_t n);
void nm_sha256_final(nm_sha256_ctx *c, uint8_t out[32]);

/* ---- process helpers ---- */
/* Runs argv[0] with argv (NULL-terminated) via posix_spawnp, its stdout and stderr captured through a pipe
   (so a full disk cannot swallow its messages) into *output (malloc'ed, NUL-terminated; free it). pass_fd,
   when >= 0, is given to the child as descriptor 3 (e.g. for `/dev/fd/3`); tmpdir, when not NULL, is its
   TMPDIR (so whatever temporary files it leaves are where the caller removes them). Returns the exit status
   (>= 0), 128 + the signal that ended it, or -errno if it could not be started. */
int nm_run_process(const char *const *argv, int pass_fd, const char *tmpdir, char **output);
/* Removes a directory and everything in it (symbolic links are removed, not followed). 0 on success. */
int nm_remove_directory(const char *path);
/* Removes the build directories `<tmpdir>/numba-metal-build-<pid>-*` this user owns whose process <pid> no
   longer exists (a process killed while clang ran leaves its directory behind). Returns how many. */
int nm_sweep_build_directories(const char *tmpdir);
/* An anonymous in-memory file holding bytes (Linux memfd; its descriptor is close-on-exec), or -1 where
   there is none (errno set). */
int nm_memory_file(const void *bytes, size_t n, const char *name);
/* Writes n bytes to an anonymous in-memory file (memfd on Linux, an unlinked temporary file under tmpdir
   elsewhere) and dlopens exactly those bytes. Returns the handle or NULL (message in err); *object_fd is
   the in-memory file the object is loaded from (-1 when there is none), for nm_dlclose_object. */
void *nm_dlopen_bytes(const void *bytes, size_t n, const char *tmpdir, int *object_fd, char *err, size_t errlen);
/* dlcloses an object of nm_dlopen_bytes and closes its in-memory file once the object is unloaded (kept open,
   never reused, when the loader keeps the object). 1 when the descriptor was closed (or there was none). */
int nm_dlclose_object(void *handle, int object_fd);
/* The message for EMFILE or ENFILE met while doing `doing` ("could not <doing>: ..."): which limit, how to
   raise it. */
void nm_describe_descriptor_exhaustion(int code, const char *doing, char *out, size_t len);
/* Reads a whole regular file through an open descriptor (at most max_bytes; larger: -1 with errno EFBIG). */
long long nm_read_fd(int fd, void **bytes, uint64_t max_bytes);
/* Path of the shared object that contains this library (dladdr), or "" */
const char *nm_library_path(void);

/* ---- kernel ABI between the runtime and a compiled CPU kernel (mirrors shim/metal_runtime_abi) ---- */
#define NM_KERNEL_ABI_VERSION 3
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
    void (*threadgroup_barrier)(uint32_t msl_line);  /* the MSL line of the call */
    nm_simd_group_state *(*simd_exchange)(const void *site, const void *operand, uint32_t size, uint32_t *lane);
    /* Abandons the dispatch with `message` (a string that outlives it): what the shim finds undefined on a
       GPU and cannot give a result for (a SIMD-group matrix operation without its 32 lanes). ABI 3. */
    void (*fail)(const char *message);
} nm_rt_api;

typedef void (*nm_run_groups_fn)(const nm_launch *, void *const *tg, uint32_t first_group, uint32_t count);
typedef void (*nm_run_item_fn)(const nm_launch *, void *const *tg, uint32_t group, uint32_t thread);

/* A loaded CPU kernel object. */
typedef struct nm_cpu_kernel {
    nm_run_groups_fn run_groups;
    nm_run_item_fn run_item;
    uint64_t static_threadgroup_bytes;
    uint32_t uses_fibers;       /* 1 when the source calls barriers or SIMD-group functions */
    /* The Python location ("file.py:12") of the threadgroup_barrier call on an MSL line, or NULL. */
    const char *(*barrier_site)(uint32_t msl_line);
    char name[128];
} nm_cpu_kernel;

/* Resolves the entry points in a dlopen'ed kernel object. 0 on success, else message in err. */
int nm_cpu_kernel_bind(void *dl_handle, nm_cpu_kernel *k, char *err, size_t errlen);

/* How a running dispatch may be stopped: after time_limit_ns (0: never), or when *cancel_through reaches
   id (nm_cpu_cancel with the same tag interrupts it). tag and cancel_through may be NULL. */
typedef struct nm_dispatch_control {
    const void *tag;
    uint64_t id;
    const uint64_t *cancel_through;
    uint64_t time_limit_ns;
} nm_dispatch_control;

#define NM_DISPATCH_OK 0
#define NM_DISPATCH_FAILED 1        /* a fault, a divergent barrier, the time limit */
#define NM_DISPATCH_CANCELLED 2

/* Runs one dispatch to completion on the calling thread and the worker pool. threadgroup_lengths[i] is the
   byte length of [[threadgroup(i)]] for i < threadgroup_count; control may be NULL. Returns NM_DISPATCH_*,
   with what went wrong in err, without the kernel's name. */
int nm_cpu_run_dispatch(const nm_cpu_kernel *kernel, const nm_launch *launch, const uint32_t *threadgroup_lengths,
                        uint32_t threadgroup_count, const nm_dispatch_control *control, char *err, size_t errlen);
/* Stops the running dispatches whose control names tag and whose id is <= *cancel_through (already
   raised by the caller): their threads leave the kernel code at once. */
void nm_cpu_cancel(const void *tag);

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
    nm_owner owner;                       /* the submitting thread (set by nm_cq_reserve) */
    uint64_t time_limit_ns;               /* dispatch: 0 = none */
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
void nm_cq_abandon(nm_cq *q, nm_work *w);        /* gives back a reserved slot instead of committing it */
#define NM_CQ_DONE 0
#define NM_CQ_FAILED 1
#define NM_CQ_TIMED_OUT 2
/* Waits until work *id has completed (*id 0: all committed work; set to the id waited for), or until
   deadline_ns (nm_clock_ns base; 0 = none). NM_CQ_FAILED: *message (malloc'ed; free it) names the first
   failed kernel, up to that id, that waiter submitted (or whose submitter has exited) and no wait has
   reported yet. NM_CQ_TIMED_OUT: nothing is reported; wait again. */
int nm_cq_wait(nm_cq *q, uint64_t *id, uint64_t deadline_ns, nm_owner waiter, char **message);
/* Abandons all committed work that has not completed: the running dispatch is stopped, the rest skipped.
   Each abandoned item fails, for its submitter, as cancelled, except the canceller's own. Waits at most
   until deadline_ns for the executor to catch up; 1 if it did not. */
int nm_cq_cancel(nm_cq *q, nm_owner canceller, uint64_t deadline_ns);
int nm_cq_query(nm_cq *q, uint64_t id);          /* 1 done, 0 pending, -1 never issued */
/* 0 ok, 1 not complete yet, 2 evicted from history, 3 never issued */
int nm_cq_timestamps(nm_cq *q, uint64_t id, uint64_t *start, uint64_t *end);
uint64_t nm_cq_last_id(nm_cq *q);
/* Lets go of the queue without waiting: its executor runs what is committed, then frees the queue and
   exits. Failures not yet reported are dropped. */
void nm_cq_release(nm_cq *q);
uint32_t nm_cq_history_length(void);

/* Worker pool configuration (read once): NUMBA_METAL_CPU_THREADS, NUMBA_METAL_CPU_STACK_KB,
   NUMBA_METAL_CPU_TIME_LIMIT_MS (the default per-dispatch time limit, 0 = none). */
uint32_t nm_cpu_thread_count(void);
uint64_t nm_cpu_stack_bytes(void);
uint64_t nm_cpu_default_time_limit_ns(void);

/* ---- per-thread FP control ---- */
void nm_enable_ftz_daz(void);

/* ---- fibers (exposed for tests/benchmarks of the switch itself) ---- */
double nm_measure_context_switch_ns(uint32_t iterations);

#ifdef __cplusplus
}
#endif
#endif

/*
 * numba_metal_runtime.h -- the C ABI of the numba-metal runtime.
 *
 * This header is the single source of truth for the ABI between Python (cffi)
 * and the Swift runtime library. The Python binding reads the region between
 * the CDEF markers verbatim, so that region uses only what cffi's cdef parser
 * accepts: typedefs, structs, enums, prototypes and integer #defines.
 *
 * Conventions
 *  - Every fallible call returns an nm_status. On failure the calling thread's
 *    message is set; read it with nm_last_error(). Messages say what was wrong
 *    and, for failed work, name the kernel.
 *  - Handles are opaque pointers owned by the caller; release each exactly once.
 *    Passing NULL where a handle is required returns NM_ERR_INVALID_ARGUMENT.
 *  - Nothing in this ABI aborts the host process on bad input.
 *  - All calls are safe to make from several threads at once. A failure of submitted work belongs to the
 *    thread that submitted it: that thread's waits report it, other threads' waits do not (until it has
 *    exited; then the next wait of any thread does).
 *  - In a process forked from one that had opened a device, every call fails with NM_ERR_FORKED (the
 *    runtime's threads do not survive fork) and releasing handles does nothing.
 *  - Two device kinds sit behind this ABI: Apple's Metal (macOS) and the CPU
 *    reference device, which compiles the same MSL with clang and a strict
 *    Metal shim. Both answer the same calls the same way. Where Metal does not
 *    exist, a third kind, the simulated Metal device, runs the Metal backend's
 *    own code against a model of Apple's Metal API (documented behaviour, CPU
 *    execution); it is opened only by asking for it (nm_device_count()).
 */
#ifndef NUMBA_METAL_RUNTIME_H
#define NUMBA_METAL_RUNTIME_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* BEGIN CDEF */

#define NM_ABI_VERSION 10
#define NM_MAX_BUFFER_SLOTS 31
#define NM_MAX_ARGUMENT_BYTES 4096
#define NM_MAX_THREADGROUP_MEMORY_SLOTS 31

typedef int32_t nm_status;
#define NM_OK 0
#define NM_ERR_INVALID_ARGUMENT 1   /* a bad handle, size, offset, slot or option */
#define NM_ERR_UNAVAILABLE 2        /* no such device, or a feature this device lacks */
#define NM_ERR_OUT_OF_MEMORY 3
#define NM_ERR_COMPILE 4            /* MSL failed to compile; the message is the full compiler log */
#define NM_ERR_LIMIT 5              /* over a device or pipeline limit (threads, slots, bytes) */
#define NM_ERR_EXECUTION 6          /* submitted work failed; the message names the kernel */
#define NM_ERR_INTERNAL 7
#define NM_ERR_FORKED 8             /* this process was forked after its parent opened a device: nothing can be
                                       used here; start workers with the 'spawn' method instead */
#define NM_ERR_DEVICE_LOST 9        /* the GPU refused further work from this process (Metal answered a command
                                       buffer with accessRevoked, notPermitted, deviceRemoved or code 14): every
                                       later call on the device fails with one message; restart the process */

#define NM_DEVICE_METAL 1
#define NM_DEVICE_CPU 2
#define NM_DEVICE_METAL_SIM 3               /* the Metal backend on the simulated Metal API (never a GPU) */

typedef struct nm_device nm_device;
typedef struct nm_buffer nm_buffer;
typedef struct nm_pipeline nm_pipeline;
typedef struct nm_queue nm_queue;

typedef struct {
    char name[128];
    int32_t kind;                          /* NM_DEVICE_METAL or NM_DEVICE_CPU */
    uint32_t max_threads_per_threadgroup;
    uint64_t max_threadgroup_memory;       /* bytes */
    uint32_t simd_width;
    uint32_t unified_memory;               /* 1 when host and device share memory */
    uint64_t recommended_working_set;      /* bytes */
    uint64_t page_size;                    /* alignment nm_buffer_wrap requires */
    uint32_t max_buffer_slots;             /* 31 */
    uint32_t max_argument_bytes;           /* 4096 */
} nm_device_info;

typedef struct {
    uint64_t live_buffers;
    uint64_t live_buffer_bytes;
    uint64_t pipelines_compiled;           /* compiles that ran the compiler */
    uint64_t pipelines_from_cache;         /* compiles answered from the disk cache */
    uint64_t dispatches;
} nm_device_stats;

/* Memory the device may still use (numba.cuda's get_memory_info). Host and GPU share memory, so these are
   budgets, not a separate memory's occupancy: total is Metal's recommendedMaxWorkingSetSize (the CPU device:
   the host's physical memory), allocated what this process's device has allocated (Metal:
   currentAllocatedSize; the CPU device: the pages of the buffers it allocated, not memory it wraps), free is
   total - allocated, 0 when allocated exceeds total. Other processes and host allocations are not counted. */
typedef struct {
    uint64_t free;                         /* bytes */
    uint64_t total;                        /* bytes */
    uint64_t allocated;                    /* bytes */
} nm_memory_info;

/* Math modes (nm_compile_options.fast_math), as Metal's MTLMathMode + MTLMathFloatingPointFunctions. */
#define NM_MATH_SAFE 0      /* .safe + .precise: IEEE-like, no reassociation or contraction */
#define NM_MATH_RELAXED 1   /* .relaxed + .fast: fast-math optimisations that keep Inf and NaN */
#define NM_MATH_FAST 2      /* .fast + .fast: also assumes no Inf or NaN (their handling is undefined) */

typedef struct {
    uint32_t fast_math;          /* the math mode: NM_MATH_SAFE, NM_MATH_RELAXED or NM_MATH_FAST */
    uint32_t language_version;   /* MSL version times 100 (e.g. 300 for 3.0); 0 = device default */
} nm_compile_options;

typedef struct {
    uint32_t max_total_threads_per_threadgroup;
    uint32_t thread_execution_width;
    uint64_t static_threadgroup_memory;    /* bytes of threadgroup variables declared in the MSL */
    uint32_t from_cache;                   /* 1 if the compiled code came from the disk cache */
    uint64_t compile_ns;                   /* wall time this compile took */
} nm_pipeline_info;

/* A kernel's parameters as its compiler laid them out (nm_kernel_param.kind). */
#define NM_PARAM_BUFFER 1           /* a device or constant pointer at [[buffer(index)]] */
#define NM_PARAM_ARGUMENT_BLOCK 2   /* a constant reference at [[buffer(index)]] to the packed argument block */
#define NM_PARAM_THREADGROUP 3      /* a threadgroup pointer at [[threadgroup(index)]] (dynamic threadgroup memory) */
#define NM_PARAM_BUILTIN 4          /* a built-in input such as [[thread_position_in_grid]] */

typedef struct {
    uint32_t kind;                         /* NM_PARAM_* */
    uint32_t index;                        /* buffer or threadgroup index; 0 for built-ins */
    uint32_t size;                         /* NM_PARAM_ARGUMENT_BLOCK: the bytes the host packs; else 0 */
    const char *type;                      /* the MSL type as declared: "device float*", "constant nm_args&", "uint3" */
    const char *name;                      /* the parameter's name */
    const char *builtin;                   /* NM_PARAM_BUILTIN: the attribute, e.g. "thread_position_in_grid"; else NULL */
} nm_kernel_param;

typedef struct {
    uint32_t param_count;
    const nm_kernel_param *params;         /* in declaration order */
} nm_kernel_abi;

typedef struct {
    nm_pipeline *pipeline;
    uint32_t buffer_count;
    nm_buffer **buffers;                   /* buffer_count handles */
    uint64_t *buffer_offsets;              /* byte offset each buffer is bound at */
    uint32_t *buffer_slots;                /* [[buffer(i)]] index of each, 0..30 */
    const void *arg_bytes;                 /* one packed argument block (setBytes), may be NULL */
    uint32_t arg_length;                   /* <= 4096 */
    uint32_t arg_slot;                     /* [[buffer(i)]] index of the argument block */
    uint32_t threadgroup_memory_count;
    uint32_t *threadgroup_memory_lengths;  /* bytes for [[threadgroup(i)]], i < count */
    uint32_t groups[3];                    /* threadgroups per grid */
    uint32_t threads[3];                   /* threads per threadgroup */
    const char *label;                     /* names the kernel in errors; NULL = the MSL function name */
} nm_dispatch_desc;

/* ---- library ---- */
uint32_t nm_abi_version(void);
const char *nm_last_error(void);            /* this thread's message for its last failed call */
uint64_t nm_now_ns(void);                   /* host monotonic clock, the base of work timestamps */
const char *nm_config_warnings(void);       /* the runtime's NUMBA_METAL_* settings whose values were refused,
                                               one line each naming the variable, its value and the value
                                               used instead; "" when there are none (read once per process) */
size_t nm_cache_root(char *out, size_t capacity); /* `<cache>`, the directory of every numba-metal cache, by the one
                                               rule (NUMBA_METAL_CACHE_DIR, else $NUMBA_CACHE_DIR/numba-metal,
                                               else $XDG_CACHE_HOME/numba-metal, else $HOME/.cache/numba-metal):
                                               its length in bytes, 0 when there is none (no HOME); written
                                               with its NUL to `out` when the length is below `capacity` */
nm_status nm_cpu_compiler_info(char *out, size_t capacity);
                                            /* the clang the CPU device compiles MSL with, as text: its path,
                                               version and where it was found, then a line "skipped PATH
                                               (where): why" per candidate refused before it (too old, a flag
                                               or feature the shim needs missing). Finds and probes it if no
                                               compile has yet. NM_ERR_UNAVAILABLE when none works: the
                                               message names every candidate and why, and how to get one.
                                               The text is cut to capacity - 1 bytes and NUL-terminated */

/* ---- devices ---- */
int32_t nm_device_count(void);              /* Metal GPUs numba-metal can use (Apple family 7 and later,
                                               SIMD width 32), then the CPU reference device. Index
                                               nm_device_count() is the simulated Metal device: never
                                               counted, it exists only for whoever asks for it by that index
                                               (NM_ERR_UNAVAILABLE where Metal exists). -1 in a forked child
                                               (NM_ERR_FORKED; nm_last_error says why) */
nm_status nm_device_get_info(int32_t index, nm_device_info *out);
nm_status nm_device_open(int32_t index, nm_device **out);
void nm_device_release(nm_device *device);
nm_status nm_device_get_stats(nm_device *device, nm_device_stats *out);
nm_status nm_device_get_memory_info(nm_device *device, nm_memory_info *out);
nm_status nm_device_set_time_limit(nm_device *device, uint64_t nanoseconds);
                                            /* CPU device and simulated Metal device: a dispatch running longer
                                               is stopped and fails (NM_ERR_EXECUTION at its submitter's wait,
                                               naming the kernel). 0: no limit, the default unless
                                               NUMBA_METAL_CPU_TIME_LIMIT_MS is set. A Metal GPU:
                                               NM_ERR_UNAVAILABLE (the OS's GPU watchdog applies) */
nm_status nm_device_get_time_limit(nm_device *device, uint64_t *nanoseconds);

/* ---- buffers (shared storage: the host pointer is valid for the buffer's life) ---- */
nm_status nm_buffer_new(nm_device *device, uint64_t length, nm_buffer **out);      /* zero-filled */
nm_status nm_buffer_wrap(nm_device *device, void *host, uint64_t length, nm_buffer **out);
                                            /* host must be page-aligned; no copy; the caller keeps the
                                               memory alive until the buffer is released and
                                               nm_buffer_in_use says no queued work uses it. A Metal
                                               device that refuses the memory (makeBuffer(bytesNoCopy:)
                                               answers nil or a buffer that is not over it):
                                               NM_ERR_UNAVAILABLE, so that the caller copies instead */
nm_status nm_buffer_in_use(nm_buffer *buffer, int32_t *in_use);
                                            /* *in_use = 1 while work queued on any queue still holds a
                                               buffer made by nm_buffer_wrap or nm_buffer_wrap_native
                                               (until that work completes); 0 otherwise, and always 0 for
                                               buffers the device allocated (their memory is the
                                               device's and lives as long as the work) */
nm_status nm_buffer_native(nm_buffer *buffer, void **mtl_buffer);
                                            /* the id<MTLBuffer> under a Metal device's buffer (not retained;
                                               valid while the buffer is), its contents at byte 0: DLPack's
                                               kDLMetal data pointer. NM_ERR_UNAVAILABLE on the CPU device */
nm_status nm_buffer_wrap_native(nm_device *device, void *mtl_buffer, nm_buffer **out);
                                            /* a buffer over another library's id<MTLBuffer> of this device,
                                               retained until release, no copy; its storage mode must be
                                               shared. The pointer is trusted to be an MTLBuffer. CPU device:
                                               NM_ERR_UNAVAILABLE */
void nm_buffer_release(nm_buffer *buffer);
void nm_dlpack_capsule_destructor(void *capsule);
                                            /* a PyCapsule destructor for DLPack capsules (the Python layer's
                                               exports): calls the tensor's deleter if the capsule was never
                                               consumed, keeping any pending Python exception. Needs the
                                               Python C API of the running process */
void *nm_buffer_contents(nm_buffer *buffer);
uint64_t nm_buffer_length(nm_buffer *buffer);
nm_status nm_buffer_write(nm_buffer *buffer, uint64_t offset, const void *src, uint64_t n);
nm_status nm_buffer_read(nm_buffer *buffer, uint64_t offset, void *dst, uint64_t n);
                                            /* write/read are immediate host copies: wait for the work
                                               that uses the range first */

/* ---- pipelines ---- */
nm_status nm_pipeline_new(nm_device *device, const char *msl_source, const char *kernel_name,
                          const nm_compile_options *options, const nm_kernel_abi *abi, nm_pipeline **out);
                                            /* abi: the kernel's parameters as its compiler laid them out; the
                                               MSL must declare exactly these (else NM_ERR_COMPILE). NULL: read
                                               them from the MSL (hand-written kernels) */
void nm_pipeline_release(nm_pipeline *pipeline);
nm_status nm_pipeline_get_info(nm_pipeline *pipeline, nm_pipeline_info *out);

/* ---- queues (one per stream); work on one queue runs in submission order ---- */
nm_status nm_queue_new(nm_device *device, nm_queue **out);
void nm_queue_release(nm_queue *queue);     /* does not wait: queued work still runs (keeping what it uses
                                               alive); its failures are no longer reported */
nm_status nm_queue_dispatch(nm_queue *queue, const nm_dispatch_desc *desc, uint64_t *work_id);
                                            /* validated before anything is queued; asynchronous */
nm_status nm_queue_copy(nm_queue *queue, nm_buffer *src, uint64_t src_offset,
                        nm_buffer *dst, uint64_t dst_offset, uint64_t n, uint64_t *work_id);
nm_status nm_queue_fill(nm_queue *queue, nm_buffer *buffer, uint64_t offset, uint64_t n,
                        uint8_t value, uint64_t *work_id);
nm_status nm_queue_marker(nm_queue *queue, uint64_t *work_id);
                                            /* completes when all earlier work on the queue has */
nm_status nm_queue_wait_for(nm_queue *queue, nm_queue *other, uint64_t other_work_id);
                                            /* later work on queue starts after other's work_id completes */
nm_status nm_queue_flush(nm_queue *queue);  /* submit encoded work without waiting */
void nm_set_batching(int32_t on);           /* on != 0: the calling thread's launches are batched (Metal:
                                               they stay in the open command buffer until a flush, a wait
                                               or its 64th dispatch); 0, the default: work is committed at
                                               the end of the call that queued it whenever the queue has no
                                               committed, unfinished command buffer, and otherwise as soon
                                               as the last of those completes. The CPU device starts all
                                               work as it is queued either way */
nm_status nm_queue_wait(nm_queue *queue);   /* flush, then wait for all submitted work; NM_ERR_EXECUTION
                                               names the first failed kernel that the calling thread
                                               submitted (or a thread that has exited) and no wait reported */
nm_status nm_queue_wait_bounded(nm_queue *queue, uint64_t *work_id, uint64_t max_ns, int32_t *done);
                                            /* nm_queue_wait returning after at most max_ns, so that a caller can
                                               attend to signals between calls. *work_id: the work to wait for,
                                               0 = all submitted so far (then set to that id: pass it again).
                                               *done = 1: completed, and the status is nm_queue_wait's for the
                                               work up to *work_id; *done = 0: not yet (NM_OK) */
nm_status nm_queue_cancel(nm_queue *queue); /* abandons submitted work that has not completed: the running
                                               dispatch is stopped, the rest skipped; each abandoned item fails
                                               for its submitter (the caller's own are dropped). Returns when
                                               done. A Metal GPU cannot stop work: NM_ERR_UNAVAILABLE */
nm_status nm_queue_query(nm_queue *queue, uint64_t work_id, int32_t *done);
                                            /* work_id 0: all work issued so far (flush first) */
nm_status nm_queue_timestamps(nm_queue *queue, uint64_t work_id, uint64_t *start_ns, uint64_t *end_ns);
                                            /* device start/end of completed work, in nm_now_ns's base */

/* ---- the simulated Metal device (NM_DEVICE_METAL_SIM; other devices answer NM_ERR_UNAVAILABLE) ---- */
#define NM_SIM_FAIL_NEXT_COMMAND_BUFFER 1     /* the next command buffer committed fails as after a GPU page
                                                 fault: none of its commands run, nor its encoded signals */
#define NM_SIM_WATCHDOG_NEXT_COMMAND_BUFFER 2 /* the GPU watchdog kills the next command buffer committed */
#define NM_SIM_HOLD_GPU 3                     /* value 1: the GPU starts no more command buffers; 0: resumes */
#define NM_SIM_STRICT_NO_COPY 4               /* value 1: makeBuffer(bytesNoCopy:) answers nil unless the memory
                                                 lies in file-backed mappings of the process (np.memmap), as
                                                 Metal is reported to refuse malloc'd memory; 0: any
                                                 page-aligned memory (the default) */
#define NM_SIM_PENALTY_BOX_AFTER 5            /* value N > 0: once N more command buffers have failed, every later
                                                 one fails with accessRevoked (code 4, "too many timeouts or
                                                 hangs"), as macOS answers a process it blames; 0: never */
#define NM_SIM_INTERACTIVITY_NEXT_COMMAND_BUFFER 6 /* the next command buffer committed fails with code 14
                                                 (ImpactingInteractivity), which MTLCommandBufferError.Code
                                                 has no case for */
#define NM_SIM_UNTRACKED_NEXT_BUFFER 7        /* the next buffer the device allocates is hazard-untracked
                                                 (MTLHazardTrackingMode.untracked), as a library that orders its
                                                 own work allocates the buffers it exports through DLPack */
#define NM_SIM_FAIL_NEXT_ALLOCATION 8         /* the next makeBuffer(length:options:) answers nil, as Metal does
                                                 when it cannot allocate the memory */
#define NM_SIM_OUT_OF_BOUNDS_READS_RETURN_ZERO 9 /* value 1: buffers allocated from then on are followed by
                                                 16 read-only pages of zeros, so a kernel's read past a buffer's
                                                 end answers 0 without a fault and a write there faults, as an
                                                 Apple GPU reads out of bounds unreported; 0: off (the default) */
#define NM_SIM_FAIL_AT_DISPATCH_OF_NEXT_COMMAND_BUFFER 10 /* value N >= 1: the next command buffer committed
                                                 runs its commands until its Nth dispatch, which faults (pageFault):
                                                 earlier results are written, later commands never run */
#define NM_SIM_SHARED_COMPLETION_THREAD 11   /* value 1: queues made from then on share one completion thread,
                                                 which runs their completed handlers in the order the GPU finished
                                                 their command buffers, across queues; 0: one per queue (default) */

typedef struct {
    uint64_t live_objects;                 /* Metal objects (devices, queues, buffers, encoders...) alive */
    uint64_t autoreleased_without_pool;    /* objects autoreleased where no autorelease pool was in place:
                                              leaked until their thread exits */
    uint64_t uncompleted_command_buffers;  /* created and not yet completed, over all queues */
    uint64_t peak_uncompleted_command_buffers; /* the most any one queue had at once */
    uint64_t failed_command_buffers;
    uint32_t last_math_mode;               /* the MTLCompileOptions of the last makeLibrary: MTLMathMode */
    uint32_t last_math_functions;          /* MTLMathFloatingPointFunctions */
    uint32_t last_language_version;        /* MTLLanguageVersion as the MSL version times 100; 0 when the host left
                                              it unset (the OS default, NUMBA_METAL_SIM_OS's newest) */
    uint64_t uncommitted_work_command_buffers; /* command buffers holding encoded work, not yet committed */
    uint64_t longest_uncommitted_ns;       /* the longest any command buffer held encoded work uncommitted
                                              (the ones still uncommitted measured now): time the GPU could
                                              have worked and did not */
    uint64_t refused_no_copy_wraps;        /* makeBuffer(bytesNoCopy:) calls answered nil */
} nm_sim_stats;

nm_status nm_sim_control(nm_device *device, uint32_t action, uint64_t value);
nm_status nm_sim_get_stats(nm_device *device, nm_sim_stats *out);

/* END CDEF */

#ifdef __cplusplus
}
#endif

#endif /* NUMBA_METAL_RUNTIME_H */

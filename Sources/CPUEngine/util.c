/*
 * util.c -- small host helpers for the Swift runtime: the thread-local error message, the clock,
 * atomics, submitting threads, fork detection, timed waits, FP control, process spawning and loading
 * verified bytes as a shared object.
 */
#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "nm_internal.h"

extern char **environ;

/* MARK: - errors */

static _Thread_local char *tl_error;

void nm_set_last_error(const char *message) {
    free(tl_error);
    tl_error = message ? strdup(message) : NULL;
}

const char *nm_last_error(void) { return tl_error ? tl_error : ""; }

/* MARK: - clock and atomics */

uint64_t nm_clock_ns(void) {
#if defined(__APPLE__)
    /* CLOCK_UPTIME_RAW is mach_absolute_time in nanoseconds: the base of Metal's gpuStartTime. */
    return clock_gettime_nsec_np(CLOCK_UPTIME_RAW);
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

uint64_t nm_atomic_add_u64(uint64_t *p, int64_t delta) {
    return __atomic_add_fetch(p, (uint64_t)delta, __ATOMIC_RELAXED);
}

uint64_t nm_atomic_load_u64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

void nm_atomic_store_u64(uint64_t *p, uint64_t value) { __atomic_store_n(p, value, __ATOMIC_RELAXED); }

/* MARK: - submitting threads */

/* One registration per live thread that submitted work. Slots are never freed (a failure record may name
   one long after its thread exited); a slot freed by an exited thread is reused with a new token. */
typedef struct owner_slot {
    uint64_t token;             /* atomic: the live thread's token, 0 once it exited */
    struct owner_slot *next_free;
} owner_slot;

static pthread_mutex_t g_owner_lock = PTHREAD_MUTEX_INITIALIZER;
static owner_slot *g_owner_free;
static uint64_t g_owner_tokens;
static pthread_key_t g_owner_key;
static pthread_once_t g_owner_once = PTHREAD_ONCE_INIT;
static _Thread_local owner_slot *tl_owner;
static _Thread_local uint64_t tl_owner_token;

static void owner_exit(void *p) {
    owner_slot *s = (owner_slot *)p;
    __atomic_store_n(&s->token, 0, __ATOMIC_RELEASE);
    pthread_mutex_lock(&g_owner_lock);
    s->next_free = g_owner_free;
    g_owner_free = s;
    pthread_mutex_unlock(&g_owner_lock);
}

static void owner_key_init(void) { pthread_key_create(&g_owner_key, owner_exit); }

static _Thread_local int32_t tl_batching;

void nm_set_batching(int32_t on) { tl_batching = on != 0; }

int32_t nm_thread_batching(void) { return tl_batching; }

nm_owner nm_owner_current(void) {
    if (!tl_owner) {
        pthread_once(&g_owner_once, owner_key_init);
        pthread_mutex_lock(&g_owner_lock);
        owner_slot *s = g_owner_free;
        if (s) g_owner_free = s->next_free;
        uint64_t token = ++g_owner_tokens;
        pthread_mutex_unlock(&g_owner_lock);
        if (!s) s = (owner_slot *)calloc(1, sizeof *s);
        if (!s) return (nm_owner){NULL, 0};
        __atomic_store_n(&s->token, token, __ATOMIC_RELEASE);
        tl_owner = s;
        tl_owner_token = token;
        pthread_setspecific(g_owner_key, s);
    }
    return (nm_owner){tl_owner, tl_owner_token};
}

int nm_owner_same(nm_owner a, nm_owner b) { return a.slot == b.slot && a.token == b.token; }

int nm_owner_exited(nm_owner o) {
    return o.slot == NULL || __atomic_load_n(&((const owner_slot *)o.slot)->token, __ATOMIC_ACQUIRE) != o.token;
}

/* MARK: - fork */

/* After fork() only the forking thread exists in the child: the executors and the worker pool are gone and
   a lock another thread held stays held. A child of a process that had started using devices therefore
   refuses every call (nm_forked_child) instead of hanging in it. */
static int g_started;
static int g_forked;
static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void) {
    if (__atomic_load_n(&g_started, __ATOMIC_RELAXED)) __atomic_store_n(&g_forked, 1, __ATOMIC_RELAXED);
}

static void fork_handlers_install(void) { pthread_atfork(NULL, NULL, fork_child); }

void nm_runtime_started(void) {
    if (__atomic_load_n(&g_started, __ATOMIC_RELAXED)) return;
    pthread_once(&g_fork_once, fork_handlers_install);
    __atomic_store_n(&g_started, 1, __ATOMIC_RELAXED);
}

int nm_forked_child(void) { return __atomic_load_n(&g_forked, __ATOMIC_RELAXED); }

/* MARK: - timed waits */

void nm_cond_init_monotonic(pthread_cond_t *cv) {
#if defined(__APPLE__)
    pthread_cond_init(cv, NULL);  /* waits use pthread_cond_timedwait_relative_np */
#else
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
#endif
}

int nm_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *m, uint64_t deadline_ns) {
    if (deadline_ns == 0) {
        pthread_cond_wait(cv, m);
        return 0;
    }
    uint64_t now = nm_clock_ns();
    if (now >= deadline_ns) return 1;
#if defined(__APPLE__)
    uint64_t rel = deadline_ns - now;
    struct timespec ts = {(time_t)(rel / 1000000000ull), (long)(rel % 1000000000ull)};
    pthread_cond_timedwait_relative_np(cv, m, &ts);
#else
    struct timespec ts = {(time_t)(deadline_ns / 1000000000ull), (long)(deadline_ns % 1000000000ull)};
    pthread_cond_timedwait(cv, m, &ts);
#endif
    return 0;
}

/* MARK: - floating point control */

void nm_enable_ftz_daz(void) {
#if defined(__x86_64__)
    unsigned int csr;
    __asm__ volatile("stmxcsr %0" : "=m"(csr));
    csr |= 0x8040; /* FTZ (bit 15) | DAZ (bit 6) */
    __asm__ volatile("ldmxcsr %0" : : "m"(csr));
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    fpcr |= (1ull << 24); /* FZ: flush float denormals; FZ16 (bit 19) stays clear: Apple keeps half subnormals */
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
}

/* MARK: - processes */

/* environ with TMPDIR set to tmpdir (malloc'ed array of borrowed strings but the new TMPDIR entry). */
static char **environment_with_tmpdir(const char *tmpdir) {
    size_t n = 0;
    while (environ[n]) n++;
    char **env = (char **)calloc(n + 2, sizeof(char *));
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "TMPDIR=", 7) != 0) env[k++] = environ[i];
    size_t len = strlen(tmpdir) + 8;
    env[k] = (char *)malloc(len);
    if (!env[k]) {
        free(env);
        return NULL;
    }
    snprintf(env[k], len, "TMPDIR=%s", tmpdir);
    return env;
}

static void environment_free(char **env, const char *tmpdir) {
    if (!env || env == environ) return;
    size_t k = 0;
    while (env[k]) k++;
    if (tmpdir && k) free(env[k - 1]);
    free(env);
}

int nm_run_process(const char *const *argv, int pass_fd, const char *tmpdir, char **output) {
    *output = NULL;
    char **env = tmpdir ? environment_with_tmpdir(tmpdir) : environ;
    if (!env) return -ENOMEM;
    int fds[2];
#if defined(__linux__)
    if (pipe2(fds, O_CLOEXEC) != 0) {
        int e = errno;
        environment_free(env, tmpdir);
        return -e;
    }
#else
    if (pipe(fds) != 0) {
        int e = errno;
        environment_free(env, tmpdir);
        return -e;
    }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
#endif
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    /* dup2 clears close-on-exec, except from a descriptor onto itself: never pass descriptor 3 as it is. */
    int passed = pass_fd == 3 ? fcntl(pass_fd, F_DUPFD_CLOEXEC, 4) : pass_fd;
    if (pass_fd >= 0 && passed < 0) {
        int e = errno;
        environment_free(env, tmpdir);
        posix_spawn_file_actions_destroy(&fa);
        close(fds[0]);
        close(fds[1]);
        return -e;
    }
    if (passed >= 0) posix_spawn_file_actions_adddup2(&fa, passed, 3);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, env);
    posix_spawn_file_actions_destroy(&fa);
    environment_free(env, tmpdir);
    if (passed != pass_fd && passed >= 0) close(passed);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -rc;
    }
    size_t cap = 4096, len = 0;
    char *buf = (char *)malloc(cap);
    for (;;) {
        if (buf && len + 1 >= cap) {
            char *bigger = (char *)realloc(buf, cap * 2);
            if (bigger) {
                buf = bigger;
                cap *= 2;
            }
        }
        char sink[4096];
        char *dst = buf && len + 1 < cap ? buf + len : sink;
        size_t room = buf && len + 1 < cap ? cap - len - 1 : sizeof sink;
        ssize_t n = read(fds[0], dst, room);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (dst != sink) len += (size_t)n;  /* output beyond what memory allows is read and dropped */
    }
    close(fds[0]);
    if (buf) buf[len] = 0;
    *output = buf;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -errno;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* MARK: - build directories */

int nm_remove_directory(const char *path) {
    DIR *d = opendir(path);
    if (!d) return rmdir(path);
    struct dirent *e;
    char child[4096];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        struct stat st;
        if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode)) nm_remove_directory(child);
        else unlink(child);
    }
    closedir(d);
    return rmdir(path);
}

int nm_sweep_build_directories(const char *tmpdir) {
    static const char prefix[] = "numba-metal-build-";
    DIR *d = opendir(tmpdir);
    if (!d) return 0;
    int removed = 0;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, sizeof prefix - 1) != 0) continue;
        char *end = NULL;
        long pid = strtol(e->d_name + sizeof prefix - 1, &end, 10);
        if (pid <= 0 || end == e->d_name + sizeof prefix - 1 || *end != '-') continue;
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
        struct stat st;
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
        if (nm_remove_directory(path) == 0) removed++;
    }
    closedir(d);
    return removed;
}

/* MARK: - loading verified bytes */

static int write_all(int fd, const void *bytes, size_t n) {
    const char *p = (const char *)bytes;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int nm_memory_file(const void *bytes, size_t n, const char *name) {
#if defined(__linux__)
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) return -1;
    if (write_all(fd, bytes, n) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
#else
    (void)bytes;
    (void)n;
    (void)name;
    errno = ENOSYS;
    return -1;
#endif
}

long long nm_read_fd(int fd, void **bytes, uint64_t max_bytes) {
    *bytes = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    if ((uint64_t)st.st_size > max_bytes) {
        errno = EFBIG;
        return -1;
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *buf = (char *)malloc(cap);
    if (!buf) return -1;
    for (;;) {
        if (len == cap) {  /* the file grew while being read */
            if (cap > max_bytes) {
                free(buf);
                errno = EFBIG;
                return -1;
            }
            char *bigger = (char *)realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                return -1;
            }
            buf = bigger;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + len, cap - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            errno = e;
            return -1;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    *bytes = buf;
    return (long long)len;
}

void *nm_dlopen_bytes(const void *bytes, size_t n, const char *tmpdir, int *object_fd, char *err, size_t errlen) {
    char path[4096];
    *object_fd = -1;
#if defined(__linux__)
    /* The memfd stays open while the object is loaded: dlopen recognises objects by path, so the fd number
       (and with it "/proc/self/fd/N") must not be reused for another object while this one is loaded
       (nm_dlclose_object). */
    int fd = nm_memory_file(bytes, n, "numba-metal-kernel");
    if (fd >= 0) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(err, errlen, "could not load the compiled kernel: %s", dlerror());
            close(fd);
            return NULL;
        }
        *object_fd = fd;
        return h;
    }
    if (errno == EMFILE || errno == ENFILE) {
        nm_describe_descriptor_exhaustion(errno, "load the compiled kernel", err, errlen);
        return NULL;
    }
    if (errno != ENOSYS) {  /* ENOSYS: a kernel without memfd; use a file as elsewhere */
        snprintf(err, errlen, "could not write the kernel object to memory: %s", strerror(errno));
        return NULL;
    }
#endif
    /* Elsewhere: a private copy (mkstemp: a new 0600 file), loaded and unlinked at once. */
    snprintf(path, sizeof path, "%s/numba-metal-kernel-XXXXXX", tmpdir);
    int tfd = mkstemp(path);
    if (tfd < 0) {
        if (errno == EMFILE || errno == ENFILE)
            nm_describe_descriptor_exhaustion(errno, "load the compiled kernel", err, errlen);
        else
            snprintf(err, errlen, "could not create a private copy of the kernel in %s: %s", tmpdir, strerror(errno));
        return NULL;
    }
    if (write_all(tfd, bytes, n) != 0) {
        snprintf(err, errlen, "could not write a private copy of the kernel: %s", strerror(errno));
        close(tfd);
        unlink(path);
        return NULL;
    }
    close(tfd);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) snprintf(err, errlen, "could not load the compiled kernel: %s", dlerror());
    unlink(path);
    return h;
}

int nm_dlclose_object(void *handle, int object_fd) {
    if (handle) dlclose(handle);
    if (object_fd < 0) return 1;
#if defined(__linux__)
    /* The loader may keep an object loaded after its last dlclose (RTLD_NODELETE, unique symbols). Its
       descriptor is closed only once the object is gone, else a new object loaded from the same number
       would be taken for it. */
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", object_fd);
    void *still = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (still) {
        dlclose(still);
        return 0;
    }
#endif
    close(object_fd);
    return 1;
}

void nm_describe_descriptor_exhaustion(int code, const char *doing, char *out, size_t len) {
    struct rlimit rl;
    char limit[96] = "";
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        snprintf(limit, sizeof limit, ", RLIMIT_NOFILE %llu", (unsigned long long)rl.rlim_cur);
    if (code == ENFILE)
        snprintf(out, len, "could not %s: the system has too many open files (ENFILE, %s); close files other processes "
                 "hold open or raise the system's limit (fs.file-max)", doing, strerror(code));
    else
        snprintf(out, len, "could not %s: this process has too many open files (EMFILE, %s%s); close files it no "
                 "longer needs (each loaded kernel holds one until no kernel object uses it) or raise the limit "
                 "(ulimit -n, resource.setrlimit)", doing, strerror(code), limit);
}

const char *nm_library_path(void) {
    static char path[4096];
    Dl_info info;
    if (path[0] == 0 && dladdr((void *)&nm_library_path, &info) && info.dli_fname) {
        snprintf(path, sizeof path, "%s", info.dli_fname);
    }
    return path;
}

int nm_cpu_kernel_bind(void *h, nm_cpu_kernel *k, char *err, size_t errlen) {
    const uint32_t *abi = (const uint32_t *)dlsym(h, "nm_kernel_abi_version");
    void (*set_rt)(const nm_rt_api *) = (void (*)(const nm_rt_api *))dlsym(h, "nm_kernel_set_rt");
    k->run_groups = (nm_run_groups_fn)dlsym(h, "nm_kernel_run_groups");
    k->run_item = (nm_run_item_fn)dlsym(h, "nm_kernel_run_item");
    const uint64_t *tg = (const uint64_t *)dlsym(h, "nm_kernel_static_tg_bytes");
    k->barrier_site = (const char *(*)(uint32_t))dlsym(h, "nm_kernel_barrier_site");
    if (!abi || !set_rt || !k->run_groups || !k->run_item || !tg || !k->barrier_site) {
        snprintf(err, errlen, "the compiled kernel object lacks the numba-metal entry points");
        return 1;
    }
    if (*abi != NM_KERNEL_ABI_VERSION) {
        snprintf(err, errlen, "the compiled kernel object has kernel ABI %u, this runtime needs %u", *abi,
                 NM_KERNEL_ABI_VERSION);
        return 1;
    }
    k->static_threadgroup_bytes = *tg;
    extern const nm_rt_api nm_cpu_rt_api;
    set_rt(&nm_cpu_rt_api);
    return 0;
}

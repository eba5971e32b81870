/*
 * util.c -- small host helpers for the Swift runtime: the thread-local error message, the clock,
 * atomics, FP control, process spawning and loading verified bytes as a shared object.
 */
#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

int nm_run_process(const char *const *argv, const char *log_path) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -rc;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return -errno;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
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

void *nm_dlopen_bytes(const void *bytes, size_t n, const char *tmpdir, char *err, size_t errlen) {
    char path[4096];
#if defined(__linux__)
    /* The memfd stays open for the life of the process: dlopen recognises objects by path, so the
       fd number (and with it "/proc/self/fd/N") must never be reused for another object. */
    int fd = memfd_create("numba-metal-kernel", MFD_CLOEXEC);
    if (fd >= 0) {
        if (write_all(fd, bytes, n) != 0) {
            snprintf(err, errlen, "could not write the kernel object to memory: %s", strerror(errno));
            close(fd);
            return NULL;
        }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(err, errlen, "could not load the compiled kernel: %s", dlerror());
            close(fd);
        }
        return h;
    }
#endif
    /* Elsewhere: a private copy in a 0700 directory we created, loaded and unlinked at once. */
    snprintf(path, sizeof path, "%s/kernel-XXXXXX", tmpdir);
    int tfd = mkstemp(path);
    if (tfd < 0) {
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
    if (!abi || !set_rt || !k->run_groups || !k->run_item || !tg) {
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

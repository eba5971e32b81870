/* dlpack_capsule.c -- the destructor of the DLPack capsules numba-metal's Python layer exports.
 *
 * DLPack's Python specification: a capsule that is destroyed while still named "dltensor_versioned" (or
 * "dltensor") was never consumed, and its destructor calls the tensor's deleter; a consumer renames it
 * "used_..." and calls the deleter itself later. A capsule is often destroyed by a consumer that refused it,
 * with that refusal's exception pending: the destructor must keep the exception as it is, which Python code
 * (a ctypes callback) cannot do, hence C. The deleter it calls is the exporter's (a ctypes callback, entered
 * with no exception pending). The Python C API is looked up in the running process rather than linked, so
 * the library does not depend on libpython. Layouts: DLPack's dlpack.h (1.x and the legacy 0.x). */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include "numba_metal_runtime.h"

typedef struct {
    void *data;
    int32_t device_type, device_id;
    int32_t ndim;
    uint8_t code, bits;
    uint16_t lanes;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} nm_dl_tensor;

typedef struct nm_dl_managed {
    nm_dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct nm_dl_managed *);
} nm_dl_managed;

typedef struct nm_dl_managed_versioned {
    uint32_t major, minor;
    void *manager_ctx;
    void (*deleter)(struct nm_dl_managed_versioned *);
    uint64_t flags;
    nm_dl_tensor dl_tensor;
} nm_dl_managed_versioned;

typedef int (*nm_capsule_is_valid)(void *, const char *);
typedef void *(*nm_capsule_get_pointer)(void *, const char *);
typedef void (*nm_err_fetch)(void **, void **, void **);
typedef void (*nm_err_restore)(void *, void *, void *);

void nm_dlpack_capsule_destructor(void *capsule) {
    /* Called with the GIL held (CPython runs capsule destructors in the thread dropping the last reference). */
    nm_capsule_is_valid is_valid = (nm_capsule_is_valid)dlsym(RTLD_DEFAULT, "PyCapsule_IsValid");
    nm_capsule_get_pointer get_pointer = (nm_capsule_get_pointer)dlsym(RTLD_DEFAULT, "PyCapsule_GetPointer");
    nm_err_fetch fetch = (nm_err_fetch)dlsym(RTLD_DEFAULT, "PyErr_Fetch");
    nm_err_restore restore = (nm_err_restore)dlsym(RTLD_DEFAULT, "PyErr_Restore");
    if (!is_valid || !get_pointer || !fetch || !restore) return;  /* not in a Python process */
    void *type, *value, *traceback;
    fetch(&type, &value, &traceback);
    if (is_valid(capsule, "dltensor_versioned")) {
        nm_dl_managed_versioned *m = get_pointer(capsule, "dltensor_versioned");
        if (m && m->deleter) m->deleter(m);
    } else if (is_valid(capsule, "dltensor")) {
        nm_dl_managed *m = get_pointer(capsule, "dltensor");
        if (m && m->deleter) m->deleter(m);
    }
    restore(type, value, traceback);
}

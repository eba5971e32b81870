/*
 * cpu_queue.c -- the CPU device's queues: each nm_cq owns an executor thread that runs its
 * work items in order from a ring of fixed-size chunks, keeps their timestamps, and records failures for
 * their submitters' waits.
 */
#include "cpu_engine.h"

#define NM_CQ_CHUNK 1024u
#define NM_CQ_MAX_PENDING 32768u
#define NM_CQ_HISTORY 65536u

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

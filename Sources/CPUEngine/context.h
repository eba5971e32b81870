/* context.h -- fiber context switch (context.c). Internal to CPUEngine. */
#ifndef NM_CONTEXT_H
#define NM_CONTEXT_H
#include <stddef.h>
void nm_ctx_switch(void **save_sp, void *load_sp);
void *nm_ctx_init(void *stack_base, size_t stack_size, void (*fn)(void *), void *arg);
#endif

/*
 * context.c -- the fiber context switch used by the CPU device to run the work-items of one
 * threadgroup as cooperatively scheduled fibers on one OS thread.
 *
 * nm_ctx_switch(void **save_sp, void *load_sp) saves the callee-saved registers and the FP control
 * state on the current stack, stores the stack pointer in *save_sp, switches to load_sp and restores
 * the registers saved there. ucontext's swapcontext makes a sigprocmask system call on every switch
 * (about 0.5-1 us); this switch costs a few nanoseconds (see nm_measure_context_switch_ns).
 * nm_ctx_init prepares a fresh stack so that the first switch to it calls fn(arg).
 */
#include <stdint.h>
#include "context.h"

#if defined(__APPLE__)
#define NM_SYM(name) "_" #name
#else
#define NM_SYM(name) #name
#endif

#if defined(__x86_64__)
/* System V AMD64: rbx, rbp, r12-r15 are callee-saved, plus MXCSR control bits and the x87 control word. */
__asm__(
    ".text\n"
    ".globl " NM_SYM(nm_ctx_switch) "\n"
#if !defined(__APPLE__)
    ".type nm_ctx_switch,@function\n"
    ".hidden nm_ctx_switch\n"
#else
    ".private_extern _nm_ctx_switch\n"
#endif
    ".p2align 4\n"
    NM_SYM(nm_ctx_switch) ":\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    subq $8, %rsp\n"
    "    stmxcsr (%rsp)\n"
    "    fnstcw 4(%rsp)\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    ldmxcsr (%rsp)\n"
    "    fldcw 4(%rsp)\n"
    "    addq $8, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".globl " NM_SYM(nm_ctx_start) "\n"
#if !defined(__APPLE__)
    ".hidden nm_ctx_start\n"
#else
    ".private_extern _nm_ctx_start\n"
#endif
    ".p2align 4\n"
    NM_SYM(nm_ctx_start) ":\n"
    "    movq %r13, %rdi\n"
    "    callq *%r12\n"
    "    ud2\n");

extern void nm_ctx_start(void);

void *nm_ctx_init(void *stack_base, size_t stack_size, void (*fn)(void *), void *arg) {
    uintptr_t top = ((uintptr_t)stack_base + stack_size) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)top;
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    sp[-1] = (uint64_t)(uintptr_t)nm_ctx_start; /* return address: after ret, rsp = top (16-aligned) */
    sp[-2] = 0;                                  /* rbp */
    sp[-3] = 0;                                  /* rbx */
    sp[-4] = (uint64_t)(uintptr_t)fn;            /* r12 */
    sp[-5] = (uint64_t)(uintptr_t)arg;           /* r13 */
    sp[-6] = 0;                                  /* r14 */
    sp[-7] = 0;                                  /* r15 */
    sp[-8] = (uint64_t)mxcsr | ((uint64_t)fpucw << 32);
    return (void *)&sp[-8];
}

#elif defined(__aarch64__)
/* AAPCS64: x19-x29, x30 (lr), sp and d8-d15 are callee-saved; FPCR carries FZ. x18 is left alone
   (reserved on Apple platforms). */
__asm__(
    ".text\n"
    ".globl " NM_SYM(nm_ctx_switch) "\n"
#if !defined(__APPLE__)
    ".type nm_ctx_switch,%function\n"
    ".hidden nm_ctx_switch\n"
#else
    ".private_extern _nm_ctx_switch\n"
#endif
    ".p2align 4\n"
    NM_SYM(nm_ctx_switch) ":\n"
    "    sub sp, sp, #176\n"
    "    stp x19, x20, [sp, #0]\n"
    "    stp x21, x22, [sp, #16]\n"
    "    stp x23, x24, [sp, #32]\n"
    "    stp x25, x26, [sp, #48]\n"
    "    stp x27, x28, [sp, #64]\n"
    "    stp x29, x30, [sp, #80]\n"
    "    stp d8, d9, [sp, #96]\n"
    "    stp d10, d11, [sp, #112]\n"
    "    stp d12, d13, [sp, #128]\n"
    "    stp d14, d15, [sp, #144]\n"
    "    mrs x9, fpcr\n"
    "    str x9, [sp, #160]\n"
    "    mov x9, sp\n"
    "    str x9, [x0]\n"
    "    mov sp, x1\n"
    "    ldp x19, x20, [sp, #0]\n"
    "    ldp x21, x22, [sp, #16]\n"
    "    ldp x23, x24, [sp, #32]\n"
    "    ldp x25, x26, [sp, #48]\n"
    "    ldp x27, x28, [sp, #64]\n"
    "    ldp x29, x30, [sp, #80]\n"
    "    ldp d8, d9, [sp, #96]\n"
    "    ldp d10, d11, [sp, #112]\n"
    "    ldp d12, d13, [sp, #128]\n"
    "    ldp d14, d15, [sp, #144]\n"
    "    ldr x9, [sp, #160]\n"
    "    msr fpcr, x9\n"
    "    add sp, sp, #176\n"
    "    ret\n"
    ".globl " NM_SYM(nm_ctx_start) "\n"
#if !defined(__APPLE__)
    ".hidden nm_ctx_start\n"
#else
    ".private_extern _nm_ctx_start\n"
#endif
    ".p2align 4\n"
    NM_SYM(nm_ctx_start) ":\n"
    "    mov x0, x20\n"
    "    blr x19\n"
    "    brk #0\n");

extern void nm_ctx_start(void);

void *nm_ctx_init(void *stack_base, size_t stack_size, void (*fn)(void *), void *arg) {
    uintptr_t top = ((uintptr_t)stack_base + stack_size) & ~(uintptr_t)15;
    uint64_t *sp = (uint64_t *)(top - 176);
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    for (int i = 0; i < 22; i++) sp[i] = 0;
    sp[0] = (uint64_t)(uintptr_t)fn;            /* x19 */
    sp[1] = (uint64_t)(uintptr_t)arg;           /* x20 */
    sp[11] = (uint64_t)(uintptr_t)nm_ctx_start; /* x30 */
    sp[20] = fpcr;
    return (void *)sp;
}
#else
#error "numba-metal's CPU device needs a fiber context switch for this architecture (x86_64 and arm64 are provided)"
#endif

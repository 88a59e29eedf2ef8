/*
 * kernel.h
 *		The running kernel: its symbols (/proc/kallsyms), release and
 *		build id (/sys/kernel/notes).
 */
#ifndef AGENT_KERNEL_H
#define AGENT_KERNEL_H

#include <stdint.h>

/* Load the kernel's text symbols; returns the number loaded (0 if hidden). */
extern int	kernel_load_symbols(void);

/*
 * The function containing addr, or NULL.  *module is set to the module's
 * name ("" for the kernel image).  Both are valid until the next call.
 */
extern const char *kernel_symbol(uint64_t addr, const char **module);

/* uname -r */
extern const char *kernel_release(void);

/* The kernel image's GNU build id in hex, or the release if it has none. */
extern const char *kernel_build_id(void);

#endif							/* AGENT_KERNEL_H */

/*
 * demangle.h
 *		Readable names for C++ and Rust symbols.
 */
#ifndef AGENT_DEMANGLE_H
#define AGENT_DEMANGLE_H

#include <stddef.h>

/*
 * Write the demangled form of a symbol name into out and return out, or
 * return name itself when it is not a mangled name we can read.
 */
extern const char *demangle(const char *name, char *out, size_t outlen);

#endif							/* AGENT_DEMANGLE_H */

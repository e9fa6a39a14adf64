/* Whether the dynamic loader will preload a library into a program: shared
 * by the preload library (its exec wrappers, scan.c) and the launcher
 * (launcher/launcher.c), so both reach the same verdict.  The supervisor's
 * own (crates/supervisor/src/program.rs, check_program) follows the same
 * rules; tests/integration/run.rs checks they agree. */
#ifndef SC_INTERPOSABLE_H
#define SC_INTERPOSABLE_H

#include <stddef.h>

/* 1 when `path` (through up to SC_MAX_SCRIPT_DEPTH `#!` scripts) is
 * statically linked, set-user-ID, set-group-ID or has file capabilities,
 * with the reason in `why`; 0 otherwise (also when it cannot be read). */
int sc_elf_static_or_setuid(const char *path, char *why, size_t len);

#endif

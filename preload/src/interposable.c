/* See interposable.h.  Raw system calls and no state of the library: the
 * launcher links this file alone. */
#include "interposable.h"
#include "sys.h"
#include "formats.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static long rd(int fd, void *buf, size_t n, off_t at)
{
    return sc_sys4(SYS_pread64, fd, (long)buf, (long)n, at);
}

/* How many `#!` scripts can lead to a program: the kernel follows five
 * (a sixth gives ELOOP).  The supervisor follows as many
 * (crates/supervisor/src/program.rs, MAX_SCRIPT_DEPTH): both from
 * data/formats.tsv. */
#define SC_MAX_SCRIPT_DEPTH SCL_MAX_SCRIPT_DEPTH

int sc_elf_static_or_setuid(const char *path, char *why, size_t len)
{
    for (int depth = 0; depth <= SC_MAX_SCRIPT_DEPTH; depth++) {
        long fd = sc_sys4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0);
        if (fd < 0)
            return 0;
        struct stat st;
        int verdict = 0;
        char interp[256];
        if (sc_sys2(SYS_fstat, fd, (long)&st) == 0 && (st.st_mode & (S_ISUID | S_ISGID))) {
            snprintf(why, len, "%s is set-user-ID or set-group-ID: the loader ignores LD_PRELOAD", path);
            verdict = 1;
        } else if (sc_sys4(SYS_fgetxattr, fd, (long)"security.capability", 0, 0) > 0) {
            snprintf(why, len, "%s has file capabilities: the loader ignores LD_PRELOAD", path);
            verdict = 1;
        } else {
            ElfW(Ehdr) eh;
            long n = rd((int)fd, &eh, sizeof eh, 0);
            if (n >= 2 && ((char *)&eh)[0] == '#' && ((char *)&eh)[1] == '!') {
                /* A script: what matters is its interpreter. */
                char line[256];
                long m = rd((int)fd, line, sizeof line - 1, 2);
                line[m > 0 ? m : 0] = 0;
                char *s = line + strspn(line, " \t");
                s[strcspn(s, " \t\n")] = 0;
                snprintf(interp, sizeof interp, "%s", s);
                sc_sys1(SYS_close, fd);
                if (!interp[0])
                    return 0;
                path = interp;
                continue;
            }
            if (n == (long)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_phentsize == sizeof(ElfW(Phdr)) &&
                eh.e_phnum < 64) {
                ElfW(Phdr) ph[64];
                size_t want = sizeof(ElfW(Phdr)) * eh.e_phnum;
                int has_interp = 0;
                if (rd((int)fd, ph, want, (off_t)eh.e_phoff) == (long)want) {
                    for (int i = 0; i < eh.e_phnum; i++)
                        has_interp |= ph[i].p_type == PT_INTERP;
                    if (!has_interp) {
                        snprintf(why, len, "%s is statically linked: its system calls cannot be interposed", path);
                        verdict = 1;
                    }
                }
            }
        }
        sc_sys1(SYS_close, fd);
        return verdict;
    }
    return 0;
}


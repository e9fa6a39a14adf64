/* swapper: preloaded beside the runtime (test/scancache.c), its
 * constructor runs before the runtime's: it loads SCSWAP_LOAD, then renames
 * SCSWAP_FROM over that path -- so that when the runtime scans, the path
 * of a loaded library names another file than the one mapped -- and runs
 * SCSWAP_WARM (a shell command), which leaves the scan cache an entry for
 * the file the path names now. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void swap(void)
{
    const char *load = getenv("SCSWAP_LOAD"), *from = getenv("SCSWAP_FROM"), *warm = getenv("SCSWAP_WARM");
    if (!load || !from || !warm)
        return;
    if (!dlopen(load, RTLD_NOW) || rename(from, load) != 0) {
        fprintf(stderr, "swapper: %s\n", dlerror() ? dlerror() : "rename failed");
        return;
    }
    unsetenv("SCSWAP_LOAD");
    if (system(warm) != 0)
        fprintf(stderr, "swapper: %s failed\n", warm);
}

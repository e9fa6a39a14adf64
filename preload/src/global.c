/* The runtime's state (struct sc_global and the per-thread struct sc_tls,
 * rt.h), defined apart from the code that works on it so that every file
 * -- report.c as well as state.c, which reports -- depends on it in one
 * direction. */
#include "rt.h"

/* G.slots is NULL until the first deferral makes the region shared with
 * the guardian, and the slots in it (guardian.c, sc_region_create): a
 * process that defers nothing never touches a slot. */
struct sc_global sc_g;
__thread struct sc_tls sc_tls __attribute__((tls_model("initial-exec")));

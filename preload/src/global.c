/* The runtime's state (struct sc_global and the per-thread struct sc_tls,
 * rt.h), defined apart from the code that works on it so that every file
 * -- report.c as well as state.c, which reports -- depends on it in one
 * direction. */
#include "rt.h"

/* Slots live in the region shared with the guardian once it exists
 * (guardian.c); before, nothing is bound and they are these. */
static struct sc_slot sc_slots0[SC_NSLOTS];
struct sc_global sc_g = {.slots = sc_slots0};
__thread struct sc_tls sc_tls __attribute__((tls_model("initial-exec")));

/* The plan line format: what the supervisor passes in $SYSCLUSTER_PLAN
 * (docs/PLAN_FORMAT.md, "The plan line format"; its version and limits in
 * data/formats.tsv).  The parser holds none of the library's state, so that
 * test/planline.c reads the shared fixtures (tests/fixtures/formats/plan-line)
 * with the very code the library runs. */
#ifndef SC_PLAN_LINE_H
#define SC_PLAN_LINE_H

#include "formats.h"

#include <stddef.h>
#include <stdint.h>

struct sc_plan_module {
    const char *path; /* NULL: the plan has no module of this index */
    uint8_t id[SCL_PLAN_LINE_MAX_BUILD_ID];
    int idlen; /* 0: none ("-"), matched by path */
};

struct sc_plan_site {
    int kind; /* 1 << its index in SCL_PLAN_LINE_SITE_KIND_NAMES (rt.h's SC_PK_*) */
    int module;
    uint64_t offset; /* file offset of the return address */
    long nr;
    size_t param;
    int cluster;
    const char *label;
};

struct sc_plan_lines {
    size_t buffer;  /* 0: no buffer line */
    int n_modules;  /* one past the highest module index */
    struct sc_plan_module modules[SCL_PLAN_LINE_MAX_MODULES];
    int n_sites;
    struct sc_plan_site sites[SCL_PLAN_LINE_MAX_SITES];
    int dropped; /* valid sites past SCL_PLAN_LINE_MAX_SITES, not kept */
};

/* Reads text (changed in place: paths and labels point into it) into *out,
 * which must be zeroed.  0 when the whole text is a valid plan; -1 when
 * not, with one line in err saying which line, which field and what was
 * expected ("plan line 3: site offset "0x12g" is not hexadecimal ..."). */
int sc_plan_lines_parse(char *text, struct sc_plan_lines *out, char *err, size_t errlen);

/* The name of a site kind, or "?" . */
const char *sc_plan_kind_name(int kind);

#endif

/* The plan line format's parser (plan_line.h).  Strict: it takes only what
 * the supervisor writes (crates/supervisor/src/plan.rs), byte for byte --
 * numbers without sign or leading zero, lowercase hexadecimal without 0x
 * -- and refuses anything else with the line, the field and what was
 * expected, so that a writer and a reader that disagree are told, never
 * half-applied.  A leaf: string functions of libc only. */
#include "plan_line.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MAX_MODULES SCL_PLAN_LINE_MAX_MODULES
#define MAX_SITES SCL_PLAN_LINE_MAX_SITES

static const char *const kind_names[] = {SCL_PLAN_LINE_SITE_KIND_NAMES};

const char *sc_plan_kind_name(int kind)
{
    for (int i = 0; i < SCL_PLAN_LINE_SITE_KIND_COUNT; i++)
        if (kind == 1 << i)
            return kind_names[i];
    return "?";
}

/* The records, in the order a plan has them. */
enum { R_HEADER, R_BUFFER, R_MODULE, R_SITE };
static const char *const record_names[] = {"header", "buffer", "module", "site"};

struct parse {
    char *err;
    size_t errlen;
    int line;
    int last;        /* the record of the line before */
    int last_module; /* the index of the module line before, -1 */
};

/* A field as the message shows it: quoted, at most 40 bytes, bytes other
 * than printable ASCII escaped, so that the message stays one line. */
static const char *quote(const char *s, char *buf, size_t size)
{
    size_t o = 0, i = 0;
    buf[o++] = '"';
    for (; s[i] && i < 40 && o + 6 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
    }
    if (s[i] && o + 5 < size) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o++] = '"';
    buf[o] = 0;
    return buf;
}

static int fail(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parse *p, const char *fmt, ...)
{
    int n = snprintf(p->err, p->errlen, "plan line %d: ", p->line);
    if (n >= 0 && (size_t)n < p->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A decimal number as the supervisor writes it ("0", or no leading zero),
 * at most max; what names the field in the message. */
static int decimal(struct parse *p, const char *what, const char *s, uint64_t max, uint64_t *v)
{
    char q[200];
    uint64_t n = 0;
    if (!*s || (s[0] == '0' && s[1]))
        return fail(p, "%s %s is not a decimal number (digits, no sign or leading zero)", what, quote(s, q, sizeof q));
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9')
            return fail(p, "%s %s is not a decimal number (digits, no sign or leading zero)", what,
                        quote(s, q, sizeof q));
        if (n > (max - (uint64_t)(*c - '0')) / 10)
            return fail(p, "%s %s is larger than %llu", what, quote(s, q, sizeof q), (unsigned long long)max);
        n = n * 10 + (uint64_t)(*c - '0');
    }
    *v = n;
    return 0;
}

static int hexdigit(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

/* Splits line at tabs into exactly n fields, the last taking the rest; the
 * number of fields found, at most n. */
static int split(char *line, char **f, int n)
{
    int k = 0;
    for (;;) {
        f[k++] = line;
        if (k == n)
            return k;
        char *t = strchr(line, '\t');
        if (!t)
            return k;
        *t = 0;
        line = t + 1;
    }
}

static int fields(struct parse *p, char *line, char **f, int n, const char *shape)
{
    int k = split(line, f, n);
    if (k != n)
        return fail(p, "a %s line has %d field%s, want %d (%s)", f[0], k, k == 1 ? "" : "s", n, shape);
    return 0;
}

static int header(struct parse *p, const char *line)
{
    static const char prefix[] = SCL_PLAN_LINE_HEADER;
    size_t plen = strcspn(prefix, "/") + 1; /* "syscluster-plan/" */
    char q[200];
    uint64_t v;
    if (strcmp(line, prefix) == 0)
        return 0;
    if (strncmp(line, prefix, plen) != 0 || decimal(p, "version", line + plen, 1u << 30, &v) < 0)
        return fail(p, "%s is not a plan line header (want %s)", quote(line, q, sizeof q), SCL_PLAN_LINE_HEADER);
    if (SCL_PLAN_LINE_OLDEST == SCL_PLAN_LINE_VERSION)
        return fail(p, "version %llu of the plan line format; this runtime reads version %d (%s)",
                    (unsigned long long)v, SCL_PLAN_LINE_VERSION, SCL_PLAN_LINE_HEADER);
    return fail(p, "version %llu of the plan line format; this runtime reads versions %d to %d",
                (unsigned long long)v, SCL_PLAN_LINE_OLDEST, SCL_PLAN_LINE_VERSION);
}

static int buffer(struct parse *p, char *line, struct sc_plan_lines *out)
{
    char *f[2];
    uint64_t v;
    if (fields(p, line, f, 2, "buffer BYTES") < 0 || decimal(p, "buffer", f[1], SCL_PLAN_LINE_MAX_BUFFER, &v) < 0)
        return -1;
    if (!v)
        return fail(p, "buffer 0: want 1 to %d bytes", SCL_PLAN_LINE_MAX_BUFFER);
    out->buffer = (size_t)v;
    return 0;
}

static int module(struct parse *p, char *line, struct sc_plan_lines *out)
{
    char *f[4], q[200];
    uint64_t i;
    if (fields(p, line, f, 4, "module INDEX BUILD-ID|- PATH") < 0 ||
        decimal(p, "module index", f[1], MAX_MODULES - 1, &i) < 0)
        return -1;
    struct sc_plan_module *m = &out->modules[i];
    if ((int)i <= p->last_module)
        return fail(p, "module %llu after module %d (want increasing indexes)", (unsigned long long)i, p->last_module);
    p->last_module = (int)i;
    if (strcmp(f[2], "-") != 0) {
        size_t n = strlen(f[2]);
        if (n == 0 || n % 2 || n / 2 > sizeof m->id)
            return fail(p, "module build-id %s is not 1 to %d bytes in hexadecimal (or - for none)",
                        quote(f[2], q, sizeof q), SCL_PLAN_LINE_MAX_BUILD_ID);
        for (size_t j = 0; j < n / 2; j++) {
            int h = hexdigit(f[2][2 * j]), l = hexdigit(f[2][2 * j + 1]);
            if (h < 0 || l < 0)
                return fail(p, "module build-id %s is not hexadecimal (lowercase digits, or - for none)",
                            quote(f[2], q, sizeof q));
            m->id[j] = (uint8_t)(h << 4 | l);
        }
        m->idlen = (int)(n / 2);
    }
    if (f[3][0] != '/')
        return fail(p, "module path %s is not an absolute path", quote(f[3], q, sizeof q));
    m->path = f[3];
    if ((int)i >= out->n_modules)
        out->n_modules = (int)i + 1;
    return 0;
}

static int site(struct parse *p, char *line, struct sc_plan_lines *out)
{
    char *f[8], q[200];
    uint64_t module, nr, param, cluster, offset = 0;
    if (fields(p, line, f, 8, "site KIND MODULE OFFSET NR PARAM CLUSTER LABEL") < 0)
        return -1;
    int kind = 0;
    for (int i = 0; i < SCL_PLAN_LINE_SITE_KIND_COUNT; i++)
        if (strcmp(f[1], kind_names[i]) == 0)
            kind = 1 << i;
    if (!kind) {
        char all[128] = "";
        for (int i = 0; i < SCL_PLAN_LINE_SITE_KIND_COUNT; i++)
            snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? ", " : "", kind_names[i]);
        return fail(p, "site kind %s is not one of %s", quote(f[1], q, sizeof q), all);
    }
    if (decimal(p, "site module", f[2], MAX_MODULES - 1, &module) < 0)
        return -1;
    if (!out->modules[module].path)
        return fail(p, "site module %llu has no module line before it", (unsigned long long)module);
    const char *o = f[3];
    if (!*o || (o[0] == '0' && o[1]) || strlen(o) > 16)
        return fail(p, "site offset %s is not hexadecimal (1 to 16 lowercase digits, no 0x or leading zero)",
                    quote(o, q, sizeof q));
    for (; *o; o++) {
        int d = hexdigit(*o);
        if (d < 0)
            return fail(p, "site offset %s is not hexadecimal (1 to 16 lowercase digits, no 0x or leading zero)",
                        quote(f[3], q, sizeof q));
        offset = offset << 4 | (uint64_t)d;
    }
    if (decimal(p, "site system call number", f[4], INT_MAX, &nr) < 0 ||
        decimal(p, "site param", f[5], SIZE_MAX, &param) < 0 ||
        decimal(p, "site cluster", f[6], INT_MAX, &cluster) < 0)
        return -1;
    if (out->n_sites == MAX_SITES) {
        out->dropped++;
        return 0;
    }
    out->sites[out->n_sites++] = (struct sc_plan_site){.kind = kind, .module = (int)module, .offset = offset,
                                                        .nr = (long)nr, .param = (size_t)param,
                                                        .cluster = (int)cluster, .label = f[7]};
    return 0;
}

int sc_plan_lines_parse(char *text, struct sc_plan_lines *out, char *err, size_t errlen)
{
    struct parse p = {.err = err, .errlen = errlen, .line = 0, .last = R_HEADER, .last_module = -1};
    char q[200];
    err[0] = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        p.line++;
        int r, rec = -1;
        if (p.line == 1)
            r = header(&p, line);
        else if (!*line)
            r = fail(&p, "an empty line (only the last line ends the plan)");
        else {
            size_t n = strcspn(line, "\t");
            for (int i = R_BUFFER; i <= R_SITE; i++)
                if (strlen(record_names[i]) == n && strncmp(line, record_names[i], n) == 0)
                    rec = i;
            if (rec < 0) {
                line[n] = 0;
                r = fail(&p, "unknown record %s (want buffer, module or site)", quote(line, q, sizeof q));
            } else if (rec < p.last || (rec == R_BUFFER && p.last == R_BUFFER))
                r = fail(&p, "a %s line after a %s line (want the header, one buffer line, the modules, the sites)",
                         record_names[rec], record_names[p.last]);
            else if (rec != R_BUFFER && p.last == R_HEADER)
                r = fail(&p, "a %s line before the buffer line (want the header, one buffer line, the modules, "
                         "the sites)", record_names[rec]);
            else
                r = rec == R_BUFFER ? buffer(&p, line, out) : rec == R_MODULE ? module(&p, line, out) : site(&p, line, out);
            if (rec >= 0)
                p.last = rec;
        }
        if (r < 0)
            return -1;
        if (!nl)
            break;
        line = nl + 1;
    }
    if (p.line == 0) {
        p.line = 1;
        return fail(&p, "the plan is empty (want %s)", SCL_PLAN_LINE_HEADER);
    }
    /* The supervisor passes no plan at all rather than one without a site. */
    if (p.last != R_SITE) {
        p.line++;
        return fail(&p, "the plan ends without %s (want the header, one buffer line, the modules, the sites)",
                    p.last == R_HEADER ? "a buffer line" : "a site line");
    }
    return 0;
}

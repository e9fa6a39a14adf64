/* SPDX-License-Identifier: MIT */
/*
 * Description: the preload library's reader of the plan line format
 * (src/plan_line.c, linked in as the library links it) on the fixtures of
 * tests/fixtures/formats/plan-line, which the supervisor's writer is tested
 * on too (crates/supervisor/tests/plan_line.rs):
 *   - each valid-NAME.lines is read, and what was read is NAME.expect;
 *   - each invalid-NAME.lines is refused with the one line NAME.expect gives;
 * then a mutation fuzz: ITERATIONS random edits of the valid fixtures (bytes
 * flipped, removed, inserted -- tabs, newlines, digits --, lines repeated,
 * swapped, cut), each read; the parser must not crash (make test builds this
 * program with ASan and UBSan), must give one line starting "plan line N:"
 * when it refuses, and must take nothing the supervisor could not have
 * written: a text it accepts is, byte for byte, the plan it read printed
 * back.
 *   planline DIR [ITERATIONS [SEED]]     (UPDATE_FIXTURES=1: rewrite the .expect)
 * Exit 0 when every check passed, 1 otherwise (liburing's codes).
 */
#include "plan_line.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_MAX 65536

static int failed, checks;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int ok, const char *fmt, ...)
{
    va_list ap;
    checks++;
    if (ok)
        return; /* one line per failure; the passes are counted */
    failed++;
    printf("FAIL planline: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static size_t slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    if (f) {
        n = fread(buf, 1, size - 1, f);
        fclose(f);
    }
    buf[n] = 0;
    return n;
}

/* A module's build-id in lowercase hex, or none when it has none. */
static const char *hex_id(const struct sc_plan_module *pm, char *buf, const char *none)
{
    if (!pm->idlen)
        return none;
    for (int j = 0; j < pm->idlen; j++)
        snprintf(buf + 2 * j, 3, "%02x", pm->id[j]);
    return buf;
}

/* What was read, as NAME.expect of a valid fixture has it. */
static void describe(const struct sc_plan_lines *p, char *out, size_t size)
{
    size_t o = 0;
    o += (size_t)snprintf(out + o, size - o, "buffer %zu\n", p->buffer);
    for (int m = 0; m < p->n_modules && o < size; m++) {
        const struct sc_plan_module *pm = &p->modules[m];
        if (!pm->path)
            continue;
        char id[2 * SCL_PLAN_LINE_MAX_BUILD_ID + 1];
        o += (size_t)snprintf(out + o, size - o, "module %d build-id %s path %s\n", m, hex_id(pm, id, "none"), pm->path);
    }
    for (int i = 0; i < p->n_sites && o < size; i++) {
        const struct sc_plan_site *s = &p->sites[i];
        o += (size_t)snprintf(out + o, size - o, "site %s module %d offset 0x%llx nr %ld param %zu cluster %d label %s\n",
                              sc_plan_kind_name(s->kind), s->module, (unsigned long long)s->offset, s->nr, s->param,
                              s->cluster, s->label);
    }
    if (o < size)
        snprintf(out + o, size - o, "dropped %d\n", p->dropped);
}

/* The plan printed back in the plan line format, as the supervisor writes it. */
static void print_back(const struct sc_plan_lines *p, char *out, size_t size)
{
    size_t o = (size_t)snprintf(out, size, "%s\nbuffer\t%zu\n", SCL_PLAN_LINE_HEADER, p->buffer);
    for (int m = 0; m < p->n_modules && o < size; m++) {
        const struct sc_plan_module *pm = &p->modules[m];
        if (!pm->path)
            continue;
        char id[2 * SCL_PLAN_LINE_MAX_BUILD_ID + 1];
        o += (size_t)snprintf(out + o, size - o, "module\t%d\t%s\t%s\n", m, hex_id(pm, id, "-"), pm->path);
    }
    for (int i = 0; i < p->n_sites && o < size; i++) {
        const struct sc_plan_site *s = &p->sites[i];
        o += (size_t)snprintf(out + o, size - o, "site\t%s\t%d\t%llx\t%ld\t%zu\t%d\t%s\n", sc_plan_kind_name(s->kind),
                              s->module, (unsigned long long)s->offset, s->nr, s->param, s->cluster, s->label);
    }
}

/* Reads text (a copy: the parser cuts it up); 0 or -1, with what it read
 * or its error in out. */
static int read_plan(const char *text, struct sc_plan_lines *p, char *out, size_t size)
{
    static char copy[TEXT_MAX], err[512];
    snprintf(copy, sizeof copy, "%s", text);
    memset(p, 0, sizeof *p);
    int r = sc_plan_lines_parse(copy, p, err, sizeof err);
    if (r == 0)
        describe(p, out, size);
    else
        snprintf(out, size, "%s\n", err);
    return r;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static struct sc_plan_lines plan; /* large: not on the stack */

/* The fixtures; the valid texts are kept for the fuzz. */
static int fixtures(const char *dir, char **valid, int max_valid)
{
    char *names[256];
    int n = 0, n_valid = 0, n_invalid = 0;
    int update = getenv("UPDATE_FIXTURES") && strcmp(getenv("UPDATE_FIXTURES"), "1") == 0;
    DIR *d = opendir(dir);
    if (!d) {
        check(0, "cannot open the fixtures %s", dir);
        return 0;
    }
    for (struct dirent *e; (e = readdir(d)) && n < 256;) {
        size_t l = strlen(e->d_name);
        if (l > 6 && strcmp(e->d_name + l - 6, ".lines") == 0)
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    static char text[TEXT_MAX], got[TEXT_MAX], want[TEXT_MAX], path[4096];
    for (int i = 0; i < n; i++) {
        int is_valid = strncmp(names[i], "valid-", 6) == 0;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        slurp(path, text, sizeof text);
        int r = read_plan(text, &plan, got, sizeof got);
        if (is_valid) {
            n_valid++;
            check(r == 0, "%s is valid, the parser says: %s", names[i], got);
            if (n_valid <= max_valid)
                valid[n_valid - 1] = strdup(text);
        } else {
            n_invalid++;
            check(r < 0, "%s is invalid, the parser took it", names[i]);
            check(r < 0 && strchr(got, '\n') == got + strlen(got) - 1, "%s: one line: %s", names[i], got);
        }
        snprintf(path + strlen(path) - 6, sizeof path - strlen(path) + 6, ".expect");
        if (update) {
            FILE *f = fopen(path, "w");
            check(f && fputs(got, f) >= 0 && fclose(f) == 0, "cannot write %s", path);
        } else {
            slurp(path, want, sizeof want);
            check(strcmp(got, want) == 0, "%s: the parser says\n%s  want\n%s", names[i], got, want);
        }
        free(names[i]);
    }
    check(n_valid >= 2 && n_invalid >= 20, "%d valid and %d invalid fixtures in %s", n_valid, n_invalid, dir);
    printf("ok   planline: %d valid fixtures read as expected, %d invalid refused with their message\n", n_valid,
           n_invalid);
    return n_valid < max_valid ? n_valid : max_valid;
}

static unsigned long long rng;

static unsigned pick(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

/* One random edit of text (len bytes) in place; the new length. */
static size_t mutate(char *text, size_t len, size_t cap)
{
    static const char alphabet[] = "\t\n0123456789abcdefx-/ +\r\x01\xff";
    size_t at = len ? pick((unsigned)len) : 0;
    switch (pick(7)) {
    case 0: /* a byte changed */
        if (len)
            text[at] = alphabet[pick(sizeof alphabet - 1)];
        break;
    case 1: /* a byte removed */
        if (len) {
            memmove(text + at, text + at + 1, len - at);
            len--;
        }
        break;
    case 2: /* a byte inserted */
        if (len + 1 < cap) {
            memmove(text + at + 1, text + at, len - at + 1);
            text[at] = alphabet[pick(sizeof alphabet - 1)];
            len++;
        }
        break;
    case 3: /* cut short */
        text[at] = 0;
        len = at;
        break;
    case 4: { /* a line repeated */
        char *s = text + at;
        while (s > text && s[-1] != '\n')
            s--;
        char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) + 1 : strlen(s);
        if (len + n < cap) {
            memmove(s + n, s, len - (size_t)(s - text) + 1);
            len += n;
        }
        break;
    }
    case 5: { /* two bytes swapped (lines, fields, digits) */
        size_t b = len ? pick((unsigned)len) : 0;
        if (len) {
            char c = text[at];
            text[at] = text[b];
            text[b] = c;
        }
        break;
    }
    default: /* a digit run made huge */
        if (len + 20 < cap && len) {
            memmove(text + at + 20, text + at, len - at + 1);
            memset(text + at, '9', 20);
            len += 20;
        }
        break;
    }
    return len;
}

static void fuzz(char **valid, int n_valid, long iterations)
{
    static char text[TEXT_MAX], got[TEXT_MAX], back[TEXT_MAX];
    long accepted = 0, refused = 0;
    for (long i = 0; i < iterations && n_valid > 0; i++) {
        size_t len = (size_t)snprintf(text, sizeof text, "%s", valid[pick((unsigned)n_valid)]);
        for (int k = 1 + (int)pick(3); k > 0; k--)
            len = mutate(text, len, sizeof text - 32);
        if (read_plan(text, &plan, got, sizeof got) == 0) {
            accepted++;
            print_back(&plan, back, sizeof back);
            /* The last line's newline may be missing (a shell's $(...) drops it). */
            size_t bl = strlen(back);
            int same = strcmp(back, text) == 0 || (bl == len + 1 && strncmp(back, text, len) == 0);
            check(same && plan.dropped == 0, "the parser took a text the supervisor does not write:\n%s---\nprinted back:\n%s",
                  text, back);
        } else {
            refused++;
            check(strncmp(got, "plan line ", 10) == 0 && strchr(got, '\n') == got + strlen(got) - 1,
                  "a refusal is one line \"plan line N: ...\": %s", got);
        }
        if (failed > 20)
            break;
    }
    printf("ok   planline: fuzz, %ld mutated plans: %ld refused with one line, %ld taken (each the plan it read)\n",
           accepted + refused, refused, accepted);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: planline DIR [ITERATIONS [SEED]]\n");
        return 1;
    }
    long iterations = argc > 2 ? atol(argv[2]) : 20000;
    rng = (argc > 3 ? strtoull(argv[3], NULL, 10) : 1) * 2654435761ULL + 88172645463325252ULL;
    char *valid[16];
    int n_valid = fixtures(argv[1], valid, 16);
    fuzz(valid, n_valid, iterations);
    for (int i = 0; i < n_valid; i++)
        free(valid[i]);
    printf("%s planline: %d checks, %d failed\n", failed ? "FAIL" : "ok  ", checks, failed);
    return failed ? 1 : 0;
}

#include <stdlib.h>
#include <string.h>
#include "wordstat.h"

#define SLOTS 256

struct table {
    struct { char w[32]; size_t n; unsigned count; } slot[SLOTS];
    size_t used;
};

struct table *table_new(void) { return calloc(1, sizeof(struct table)); }

void table_add(struct table *t, const char *w, size_t n)
{
    if (n >= 32)
        n = 31;
    for (uint32_t i = checksum(w, n, 0) % SLOTS;; i = (i + 1) % SLOTS) {
        if (t->slot[i].n == 0) {
            memcpy(t->slot[i].w, w, n);
            t->slot[i].n = n;
            t->used++;
        }
        if (t->slot[i].n == n && memcmp(t->slot[i].w, w, n) == 0) {
            t->slot[i].count++;
            return;
        }
    }
}

size_t table_size(const struct table *t) { return t->used; }

uint32_t table_checksum(const struct table *t)
{
    uint32_t c = 0;
    for (int i = 0; i < SLOTS; i++)
        c = checksum(&t->slot[i].count, sizeof t->slot[i].count, c);
    return c;
}

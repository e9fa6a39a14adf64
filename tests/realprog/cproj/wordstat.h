#include <stddef.h>
#include <stdint.h>

/* Splits text into words; calls fn for each. */
void words(const char *text, void (*fn)(const char *w, size_t n, void *arg), void *arg);
/* A small open-addressing table of word counts. */
struct table;
struct table *table_new(void);
void table_add(struct table *t, const char *w, size_t n);
size_t table_size(const struct table *t);
uint32_t table_checksum(const struct table *t);
uint32_t checksum(const void *p, size_t n, uint32_t seed);

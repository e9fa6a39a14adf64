#include "wordstat.h"

/* FNV-1a, seeded. */
uint32_t checksum(const void *p, size_t n, uint32_t seed)
{
    const unsigned char *b = p;
    uint32_t h = 2166136261u ^ seed;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

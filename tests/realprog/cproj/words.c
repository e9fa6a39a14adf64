#include <ctype.h>
#include "wordstat.h"

void words(const char *text, void (*fn)(const char *w, size_t n, void *arg), void *arg)
{
    const char *p = text;
    while (*p) {
        while (*p && !isalpha((unsigned char)*p))
            p++;
        const char *start = p;
        while (isalpha((unsigned char)*p) || *p == '\'')
            p++;
        if (p > start)
            fn(start, (size_t)(p - start), arg);
    }
}

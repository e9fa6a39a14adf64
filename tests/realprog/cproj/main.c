#include <stdio.h>
#include "wordstat.h"

static void add(const char *w, size_t n, void *arg) { table_add(arg, w, n); }

int main(void)
{
    static const char text[] =
        "the seeds profile a program's system calls and cluster the calls "
        "that follow one another into one crossing of the kernel boundary";
    struct table *t = table_new();
    for (int i = 0; i < 100; i++)
        words(text, add, t);
    printf("%zu words, checksum %08x\n", table_size(t), table_checksum(t));
    return 0;
}

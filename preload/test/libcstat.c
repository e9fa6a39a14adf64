/* libcstat: libc functions that stat or read files themselves (no wrapper
 * sees their calls) see every byte the program wrote.
 *   libcstat DIR LIB
 * writes DIR/log in 8-byte writes, then walks DIR with nftw, ftw and fts
 * and prints the sizes they report; copies LIB to DIR/copy.so in 100-byte
 * writes and dlopens it.  Before all that, a failed dlopen's dlerror()
 * must survive wrapped calls made in between (their first use resolves
 * what they wrap).  The output must be the same with and without the
 * runtime (which defers the writes). */
#include <dlfcn.h>
#include <fcntl.h>
#include <fts.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static int on_nftw(const char *p, const struct stat *st, int type, struct FTW *f)
{
    if (type == FTW_F)
        printf("nftw %s %lld\n", p + f->base, (long long)st->st_size);
    return 0;
}

static int on_ftw(const char *p, const struct stat *st, int type)
{
    if (type == FTW_F)
        printf("ftw %s %lld\n", strrchr(p, '/') + 1, (long long)st->st_size);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/log", argv[1]);
    void *none = dlopen("/nonexistent/libnone.so", RTLD_NOW);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    struct timeval tv;
    ftruncate(fd, 0);
    fdatasync(fd);
    gettimeofday(&tv, NULL);
    const char *err = dlerror();
    printf("dlerror %s %s\n", none ? "loaded?" : "failed", err ? err : "(null: cleared by someone)");
    for (int i = 0; i < 200; i++)
        if (write(fd, "record.\n", 8) != 8)
            return 1;
    nftw(argv[1], on_nftw, 4, FTW_PHYS);
    ftw(argv[1], on_ftw, 4);
    char *roots[] = {argv[1], NULL};
    FTS *t = fts_open(roots, FTS_PHYSICAL, NULL);
    for (FTSENT *e; t && (e = fts_read(t));)
        if (e->fts_info == FTS_F)
            printf("fts %s %lld\n", e->fts_name, (long long)e->fts_statp->st_size);
    if (t)
        fts_close(t);
    /* A library written in chunks, then loaded. */
    int in = open(argv[2], O_RDONLY);
    snprintf(path, sizeof path, "%s/copy.so", argv[1]);
    int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    char buf[100];
    for (long n; (n = read(in, buf, sizeof buf)) > 0;)
        if (write(out, buf, (size_t)n) != n)
            return 1;
    void *h = dlopen(path, RTLD_NOW);
    long (*fn)(long) = h ? (long (*)(long))dlsym(h, "datatext_fn") : NULL;
    printf("dlopen %s %ld\n", h ? "ok" : dlerror(), fn ? fn(2) : -1);
    return 0;
}

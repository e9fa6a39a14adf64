/* The next definition of a libc function (what dlsym(RTLD_NEXT, name)
 * gives), found without dlsym.  Wrappers resolve what they call on first
 * use (SC_REAL), and dlsym resets the dlerror() state: a program that
 * reads dlerror() after a failed dlopen and made a wrapped call in between
 * would find NULL there (one crashed on it).  So the dynamic symbol tables
 * of the objects loaded after this library are searched directly, in load
 * order (the loader's search order), through their GNU hash tables, for the
 * default version of the name — as the loader answers dlsym.
 * dl_iterate_phdr does not touch the dlerror() state. */
#include "rt.h"
#include "sys.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>

struct want {
    const char *name;
    uint32_t hash;
    uintptr_t self; /* load address of this library */
    int past_self;
    int no_table;   /* an object without a GNU hash table was on the way */
    void *found;
};

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (uint8_t)*s;
    return h;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct want *w = arg;
    if (!w->past_self) {
        w->past_self = info->dlpi_addr == w->self;
        return 0;
    }
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 0;
    uintptr_t gh = 0, symtab = 0, strtab = 0, versym = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        /* The loader relocates these in place, except in the vDSO. */
        uintptr_t v = dyn->d_un.d_ptr < info->dlpi_addr ? dyn->d_un.d_ptr + info->dlpi_addr : dyn->d_un.d_ptr;
        if (dyn->d_tag == DT_GNU_HASH)
            gh = v;
        else if (dyn->d_tag == DT_SYMTAB)
            symtab = v;
        else if (dyn->d_tag == DT_STRTAB)
            strtab = v;
        else if (dyn->d_tag == DT_VERSYM)
            versym = v;
    }
    if (!symtab || !strtab)
        return 0;
    if (!gh) {
        w->no_table = 1;
        return 1;
    }
    const uint32_t *t = (const uint32_t *)gh;
    uint32_t nbuckets = t[0], symoffset = t[1], bloom_size = t[2], bloom_shift = t[3];
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(t + 4);
    const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size), *chain = buckets + nbuckets;
    if (nbuckets == 0 || bloom_size == 0)
        return 0;
    const unsigned bits = sizeof(ElfW(Addr)) * 8;
    ElfW(Addr) word = bloom[(w->hash / bits) % bloom_size];
    if (!((word >> (w->hash % bits)) & (word >> ((w->hash >> bloom_shift) % bits)) & 1))
        return 0;
    uint32_t i = buckets[w->hash % nbuckets];
    if (i < symoffset)
        return 0;
    const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
    const uint16_t *vs = (const uint16_t *)versym;
    for (;; i++) {
        uint32_t h = chain[i - symoffset];
        const ElfW(Sym) *s = &syms[i];
        if ((h | 1) == (w->hash | 1) && strcmp((const char *)strtab + s->st_name, w->name) == 0 &&
            s->st_shndx != SHN_UNDEF && ELF64_ST_BIND(s->st_info) != STB_LOCAL &&
            (!vs || ((vs[i] & 0x8000) == 0 && (vs[i] & 0x7fff) != 0))) {
            uintptr_t addr = info->dlpi_addr + s->st_value;
            if (ELF64_ST_TYPE(s->st_info) == STT_GNU_IFUNC)
                addr = ((uintptr_t(*)(void))addr)();
            w->found = (void *)addr;
            return 1;
        }
        if (h & 1)
            return 0;
    }
}

void *sc_dlnext(const char *name)
{
    uintptr_t self = sc_self_base();
    struct want w = {name, gnu_hash(name), self, 0, 0, NULL};
    if (self)
        dl_iterate_phdr(visit, &w);
    void *p = w.found;
    if (!p && (!self || !w.past_self || w.no_table))
        p = dlsym(RTLD_NEXT, name); /* an object we cannot search: as the loader would */
    if (!p) {
        static const char msg[] = "syscluster: runtime cannot find a libc function it wraps\n";
        sc_sys3(SYS_write, 2, (long)msg, sizeof msg - 1);
        sc_sys1(SYS_exit_group, 127);
    }
    return p;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Binding the program past the table. Each exported wrapper is one jump
 * through rsp_tab, jmp *rsp_tab+N(%rip): one instruction, but one more
 * taken branch a call, which switched off costs about 1.16x an
 * uncontended mutex pair natively (scripts/bench --interposer), and on
 * two instructions a pair. The objects loaded so far were bound to the
 * wrappers by the dynamic loader, in their GOTs; once rsp_tab is set,
 * rsp_rebind() binds them to what it holds instead: the real functions
 * (RSP_PASS: RSEQ_SLICE_PRELOAD=0, or no backend), so that a call does
 * not pass through this library at all, or the fast or general path's
 * function itself. Objects loaded later (dlopen) keep the jump.
 *
 * A slot is rebound when it belongs to one of the wrapped names and holds
 * this library's wrapper (bound now), or an address inside its own
 * object (a lazy binding's PLT entry, not resolved yet: the loader would
 * resolve it to the wrapper, which would jump to the same place). A slot
 * that holds anything else (another interposer preloaded before this
 * one) is left alone; one preloaded after it is what rsp_real holds
 * (RTLD_NEXT), and stays on the path. Slots in the RELRO part are made
 * writable for the store and read-only again. A program that compares
 * a wrapped function's address with one taken in a later object sees
 * two. Only the RELA architectures (x86-64, arm64); elsewhere a no-op.
 */
#define _GNU_SOURCE
#include "preload.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__aarch64__)

#if defined(__x86_64__)
#define R_SLOT	R_X86_64_JUMP_SLOT
#define R_GLOB	R_X86_64_GLOB_DAT
#else
#define R_SLOT	R_AARCH64_JUMP_SLOT
#define R_GLOB	R_AARCH64_GLOB_DAT
#endif

struct bind {
	const char *name;
	void *wrapper;
	void *to;
};

/* The wrapped names, as dl_iterate_phdr()'s argument. */
struct binds {
	const struct bind *b;
	int n;
};

#define B(field, sym)	{ #sym, (void *)sym, (void *)rsp_tab.field }

static uintptr_t self_base;
static long page;

/* A dynamic entry's address: relocated in place by glibc, or not. */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
	return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

static int in_object(const struct dl_phdr_info *info, uintptr_t a)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && a >= s && a < s + ph->p_memsz)
			return 1;
	}
	return 0;
}

static void store(const struct dl_phdr_info *info, void **slot, void *v)
{
	uintptr_t a = (uintptr_t)slot, lo = 0, hi = 0;
	void *pg = (void *)(a & ~(uintptr_t)(page - 1));
	int i, relro = 0;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_GNU_RELRO)
			continue;
		lo = info->dlpi_addr + ph->p_vaddr;
		hi = lo + ph->p_memsz;
		relro = a >= lo && a < hi;
	}
	if (relro && mprotect(pg, page, PROT_READ | PROT_WRITE))
		return;		/* leave it bound to the wrapper */
	__atomic_store_n(slot, v, __ATOMIC_RELAXED);
	if (relro)
		mprotect(pg, page, PROT_READ);
}

static void rebind_rela(const struct dl_phdr_info *info, const ElfW(Rela) *r, size_t n,
			const ElfW(Sym) *symtab, const char *strtab, const struct bind *b, int nb)
{
	size_t i;
	int j;

	for (i = 0; i < n; i++) {
		unsigned long type = ELF64_R_TYPE(r[i].r_info);
		const char *name;
		void **slot, *v;

		if (type != R_SLOT && type != R_GLOB)
			continue;
		name = strtab + symtab[ELF64_R_SYM(r[i].r_info)].st_name;
		if (strncmp(name, "pthread_", 8))
			continue;
		for (j = 0; j < nb; j++) {
			if (strcmp(name, b[j].name) || !b[j].to)
				continue;
			slot = (void **)(info->dlpi_addr + r[i].r_offset);
			v = *slot;
			if (v == b[j].wrapper || (type == R_SLOT && in_object(info, (uintptr_t)v)))
				store(info, slot, b[j].to);
			break;
		}
	}
}

static int rebind_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	const struct binds *bs = arg;
	const ElfW(Dyn) *dyn = NULL, *d;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *jmprel = NULL, *rela = NULL;
	size_t pltsz = 0, relasz = 0;
	int i;

	(void)size;
	if (info->dlpi_addr == self_base)
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return 0;
	for (d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const void *)dyn_ptr(info, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const void *)dyn_ptr(info, d->d_un.d_ptr); break;
		case DT_JMPREL: jmprel = (const void *)dyn_ptr(info, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: pltsz = d->d_un.d_val; break;
		case DT_RELA: rela = (const void *)dyn_ptr(info, d->d_un.d_ptr); break;
		case DT_RELASZ: relasz = d->d_un.d_val; break;
		case DT_PLTREL:
			if (d->d_un.d_val != DT_RELA)
				return 0;
			break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	if (jmprel)
		rebind_rela(info, jmprel, pltsz / sizeof(*jmprel), symtab, strtab, bs->b, bs->n);
	if (rela)
		rebind_rela(info, rela, relasz / sizeof(*rela), symtab, strtab, bs->b, bs->n);
	return 0;
}

void rsp_rebind(void)
{
	struct bind b[] = {
		B(mutex_lock, pthread_mutex_lock),
		B(mutex_trylock, pthread_mutex_trylock),
		B(mutex_timedlock, pthread_mutex_timedlock),
		B(mutex_clocklock, pthread_mutex_clocklock),
		B(mutex_unlock, pthread_mutex_unlock),
		B(spin_lock, pthread_spin_lock),
		B(spin_trylock, pthread_spin_trylock),
		B(spin_unlock, pthread_spin_unlock),
		B(rwlock_wrlock, pthread_rwlock_wrlock),
		B(rwlock_trywrlock, pthread_rwlock_trywrlock),
		B(rwlock_timedwrlock, pthread_rwlock_timedwrlock),
		B(rwlock_clockwrlock, pthread_rwlock_clockwrlock),
		B(rwlock_unlock, pthread_rwlock_unlock),
		B(cond_wait, pthread_cond_wait),
		B(cond_timedwait, pthread_cond_timedwait),
		B(cond_clockwait, pthread_cond_clockwait),
	};
	struct binds bs = { b, (int)(sizeof(b) / sizeof(b[0])) };
	Dl_info di;

	if (!dladdr((void *)rsp_rebind, &di))
		return;
	self_base = (uintptr_t)di.dli_fbase;
	page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		return;
	dl_iterate_phdr(rebind_one, &bs);
}

#else

void rsp_rebind(void)
{
}

#endif

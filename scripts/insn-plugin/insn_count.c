// SPDX-License-Identifier: GPL-2.0
/*
 * insn_count: a QEMU TCG plugin (QEMU 7.2's API, version 1) counting the
 * guest instructions each vCPU executes, in user and in kernel mode, over
 * regions the guest marks itself (selftests/bench/insn_marker.h).
 *
 *   qemu-system-x86_64 -accel tcg,thread=single \
 *	-plugin insn_count.so,out=FILE[,samples=FILE2] ...
 * or the same with qemu-system-aarch64 (an arm64 guest: its markers are
 * arm64's, see insn_marker.h).
 *
 * At exit it writes, per region name and vCPU, one line to FILE:
 *   insns region=NAME vcpu=N n=SAMPLES user=U kernel=K total=T min=M mean=A
 *	umed=UM kmed=KM kp10=KP p10=P
 * where T is the median of the samples' totals and U, K that sample's
 * split, M the smallest total, A the mean, UM and KM the medians of the
 * user and of the kernel parts on their own, KP the 10th percentile of
 * the kernel part and P that of the total. The median is the figure to
 * compare: a sample an interrupt landed in is an outlier and leaves it
 * alone. Then a line "insns-plugin vcpus=N unmatched=U" (U: STOP markers
 * without an open region, a sign that a measuring thread migrated).
 * FILE2, if given, gets every sample as it ends: "NAME VCPU USER KERNEL".
 *
 * profile=FILE3 also counts, per region, the kernel instructions each
 * translation block ran inside it, by the block's start address: at exit
 * FILE3 gets "region NAME VCPU SAMPLES" for each region, then one line
 * "NAME VCPU ADDRESS COUNT" per block (hex address). A block never spans
 * a call, so its start names the function it ran in (scripts/insns-profile
 * resolves them against the guest's /proc/kallsyms).
 *
 * How it counts, exactly and per vCPU: every instruction adds 1 to one
 * global counter (an inline op, no call), and every translation block
 * starts with a call that hands what the counter gained since the last
 * call to the vCPU and mode of the block that ran then. That is exact,
 * also when a block is left early by a fault, because single-threaded TCG
 * (thread=single, as scripts/vm runs) executes one block of one vCPU at a
 * time. Under multi-threaded TCG the counts would be wrong.
 *
 * User or kernel: by the block's address. The 7.2 API cannot read CPL or
 * any register, but an x86-64 kernel runs in the upper half of the
 * address space and user space in the lower half, and a block never
 * spans the two (they are 2^63 bytes apart). The only kernel-half user
 * address, the legacy vsyscall page, faults into the kernel instead of
 * running. arm64 splits the same way: EL1 runs from TTBR1's range (the
 * top bits all ones), EL0 from TTBR0's (all zeros), and its vDSO is in
 * the lower half.
 *
 * QEMU's idea of an instruction: a faulting instruction counts once per
 * attempt, and a rep-prefixed string instruction counts once per
 * iteration (TCG runs it as a loop of one-iteration blocks). Both are
 * the same in every arm that runs the same code.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

#include "insn_marker.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

enum { USER, KERNEL };

struct sample {
	uint64_t n[2];
};

struct region {
	char name[INSN_MARK_NAME_MAX + 1];
	unsigned int vcpu;
	size_t n, cap;
	struct sample *s;
	struct region *next;
};

struct vcpu {
	uint64_t count[2];
	uint64_t start[2];
	int open;
	char name[INSN_MARK_NAME_MAX + 1];
	unsigned int bits;	/* of the name so far */
	struct region *region;	/* of name, found at the first START */
	struct pending *pend;	/* profile=: the open sample's blocks */
	size_t npend, cap_pend;
};

static struct vcpu *vcpus;
static unsigned int n_vcpus;
static struct region *regions, **regions_tail = &regions;
static uint64_t unmatched;
static const char *out_path;
static FILE *samples;

/* Every executed instruction adds 1 here (inline, in the generated code). */
static uint64_t executed;
static uint64_t handed_out;
static int last_vcpu = -1, last_mode;

/* profile=: kernel instructions per (region, block start address). */
struct prof_entry {
	const struct region *region;
	uint64_t vaddr;
	uint64_t count;
};

/* A block's instructions in the open sample, kept until it ends or is cancelled. */
struct pending {
	uint64_t vaddr;
	uint64_t count;
};

static const char *profile_path;
static FILE *profile;	/* profile=, open from install to exit */
static struct prof_entry *prof;
static size_t prof_size, prof_used;
static uint64_t last_vaddr;

static size_t prof_slot(struct prof_entry *t, size_t size, const struct region *r,
			uint64_t vaddr)
{
	size_t i = (size_t)((vaddr ^ (uintptr_t)r) * 0x9e3779b97f4a7c15ull) & (size - 1);

	while (t[i].region && (t[i].region != r || t[i].vaddr != vaddr))
		i = (i + 1) & (size - 1);
	return i;
}

static void prof_add(const struct region *r, uint64_t vaddr, uint64_t n)
{
	size_t i;

	if (2 * (prof_used + 1) > prof_size) {
		size_t size = prof_size ? 2 * prof_size : 1 << 16, j;
		struct prof_entry *t = calloc(size, sizeof(*t));

		if (!t)
			abort();
		for (j = 0; j < prof_size; j++)
			if (prof[j].region)
				t[prof_slot(t, size, prof[j].region, prof[j].vaddr)] = prof[j];
		free(prof);
		prof = t;
		prof_size = size;
	}
	i = prof_slot(prof, prof_size, r, vaddr);
	if (!prof[i].region) {
		prof[i].region = r;
		prof[i].vaddr = vaddr;
		prof_used++;
	}
	prof[i].count += n;
}

static void pend_add(struct vcpu *c, uint64_t vaddr, uint64_t n)
{
	if (c->npend && c->pend[c->npend - 1].vaddr == vaddr) {
		c->pend[c->npend - 1].count += n;
		return;
	}
	if (c->npend == c->cap_pend) {
		c->cap_pend = c->cap_pend ? 2 * c->cap_pend : 1024;
		c->pend = realloc(c->pend, c->cap_pend * sizeof(*c->pend));
		if (!c->pend)
			abort();
	}
	c->pend[c->npend].vaddr = vaddr;
	c->pend[c->npend].count = n;
	c->npend++;
}

/* A sample ended: its blocks go to its region's profile. */
static void pend_commit(struct vcpu *c)
{
	size_t i;

	for (i = 0; i < c->npend; i++)
		prof_add(c->region, c->pend[i].vaddr, c->pend[i].count);
	c->npend = 0;
}

/* Give what ran since the last block started to that block's vCPU. */
static void settle(void)
{
	if (last_vcpu >= 0) {
		struct vcpu *c = &vcpus[last_vcpu];

		c->count[last_mode] += executed - handed_out;
		if (profile_path && last_mode == KERNEL && c->open && executed != handed_out)
			pend_add(c, last_vaddr, executed - handed_out);
	}
	handed_out = executed;
}

static void tb_exec(unsigned int vcpu, void *mode)
{
	settle();
	if (vcpu < n_vcpus) {
		last_vcpu = (int)vcpu;
		last_mode = (int)(uintptr_t)mode;
	} else {
		last_vcpu = -1;
	}
}

/* The mode a block at @vaddr runs in: kernel text is the upper half. */
static uintptr_t mode_of(uint64_t vaddr)
{
	return (int64_t)vaddr < 0 ? KERNEL : USER;
}

/* tb_exec() with the block's address (profile=): @tb is it. */
static void tb_exec_prof(unsigned int vcpu, void *tb)
{
	tb_exec(vcpu, (void *)mode_of((uintptr_t)tb));
	last_vaddr = (uintptr_t)tb;
}

static struct region *find_region(const char *name, unsigned int vcpu)
{
	struct region *r;

	for (r = regions; r; r = r->next)
		if (r->vcpu == vcpu && !strcmp(r->name, name))
			return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		abort();
	strcpy(r->name, name);
	r->vcpu = vcpu;
	*regions_tail = r;
	regions_tail = &r->next;
	return r;
}

static void add_sample(struct region *r, const struct vcpu *c)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 1024;
		r->s = realloc(r->s, r->cap * sizeof(*r->s));
		if (!r->s)
			abort();
	}
	r->s[r->n].n[USER] = c->count[USER] - c->start[USER];
	r->s[r->n].n[KERNEL] = c->count[KERNEL] - c->start[KERNEL];
	if (samples)
		fprintf(samples, "%s %u %" PRIu64 " %" PRIu64 "\n", r->name, r->vcpu,
			r->s[r->n].n[USER], r->s[r->n].n[KERNEL]);
	r->n++;
}

/*
 * A marker's call runs before the marker's own inline count, so the
 * counts here exclude the marker: START adds it to the start value, and
 * the region holds what ran strictly between START and STOP.
 */
static void marker_exec(unsigned int vcpu, void *udata)
{
	unsigned int op = (uintptr_t)udata >> 8 & 0xff;
	unsigned int arg = (uintptr_t)udata & 0xff;
	struct vcpu *c;

	settle();
	if (vcpu >= n_vcpus || last_vcpu != (int)vcpu)
		return;
	c = &vcpus[vcpu];
	switch (op) {
	case INSN_MARK_START:
		if (!c->region)
			c->region = find_region(c->name, vcpu);
		memcpy(c->start, c->count, sizeof(c->start));
		c->start[last_mode]++;
		c->open = 1;
		c->npend = 0;
		break;
	case INSN_MARK_STOP:
		if (!c->open) {
			unmatched++;
			break;
		}
		add_sample(c->region, c);
		if (profile_path)
			pend_commit(c);
		c->open = 0;
		break;
	case INSN_MARK_CANCEL:
		c->open = 0;
		break;
	case INSN_MARK_NAME_CLEAR:
		memset(c->name, 0, sizeof(c->name));
		c->bits = 0;
		c->region = NULL;
		c->open = 0;
		break;
	case INSN_MARK_NAME_BIT:
		if (c->bits < 8 * INSN_MARK_NAME_MAX) {
			c->name[c->bits / 8] |= (arg & 1) << (7 - c->bits % 8);
			c->bits++;
		}
		break;
	}
}

/* x86-64: 0f 1f 84 00 + a little-endian displacement with the magic on top. */
static int marker_code_x86(struct qemu_plugin_insn *insn, uint32_t *code)
{
	const uint8_t *b = qemu_plugin_insn_data(insn);
	uint32_t disp;

	if (qemu_plugin_insn_size(insn) != 8 ||
	    b[0] != 0x0f || b[1] != 0x1f || b[2] != 0x84 || b[3] != 0x00)
		return 0;
	disp = b[4] | b[5] << 8 | b[6] << 16 | (uint32_t)b[7] << 24;
	if ((disp & INSN_MARK_MAGIC_MASK) != INSN_MARK_MAGIC)
		return 0;
	*code = disp & 0xffff;
	return 1;
}

/*
 * arm64: "movk xzr, #IMM, lsl #48", a little-endian word, IMM the magic
 * (bits 8-15), the operation (4-7) and its argument (0-3); the same code
 * as x86's comes out (op in bits 8-15, arg in 0-7).
 */
static int marker_code_arm64(struct qemu_plugin_insn *insn, uint32_t *code)
{
	const uint8_t *b = qemu_plugin_insn_data(insn);
	uint32_t w, imm;

	if (qemu_plugin_insn_size(insn) != 4)
		return 0;
	w = b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
	if ((w & INSN_MARK_A64_MASK) != INSN_MARK_A64_INSN)
		return 0;
	imm = w >> 5 & 0xffff;
	if (imm >> 8 != INSN_MARK_A64_MAGIC)
		return 0;
	*code = (imm & 0xf0) << 4 | (imm & 0xf);
	return 1;
}

/* The guest's architecture's decoder, chosen at install. */
static int (*marker_code)(struct qemu_plugin_insn *insn, uint32_t *code);

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uintptr_t mode = mode_of(qemu_plugin_tb_vaddr(tb));
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	if (profile_path)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec_prof, QEMU_PLUGIN_CB_NO_REGS,
						     (void *)(uintptr_t)qemu_plugin_tb_vaddr(tb));
	else
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
						     (void *)mode);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint32_t code;

		if (marker_code(insn, &code))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, marker_exec,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)code);
		qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
							   &executed, 1);
	}
}

static int cmp_total(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;
	uint64_t tx = x->n[USER] + x->n[KERNEL], ty = y->n[USER] + y->n[KERNEL];

	return tx < ty ? -1 : tx > ty;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A quantile (q/100) of one part (user or kernel) on its own. */
static uint64_t part_quantile(const struct region *r, int part, unsigned int q)
{
	uint64_t *v = malloc(r->n * sizeof(*v)), m;
	size_t i;

	if (!v)
		abort();
	for (i = 0; i < r->n; i++)
		v[i] = r->s[i].n[part];
	qsort(v, r->n, sizeof(*v), cmp_u64);
	m = v[r->n * q / 100];
	free(v);
	return m;
}

static void report(FILE *f)
{
	struct region *r;

	for (r = regions; r; r = r->next) {
		const struct sample *med;
		uint64_t umed, kmed, kp10;
		double sum = 0;
		size_t i;

		if (!r->n)
			continue;
		umed = part_quantile(r, USER, 50);
		kmed = part_quantile(r, KERNEL, 50);
		kp10 = part_quantile(r, KERNEL, 10);
		qsort(r->s, r->n, sizeof(*r->s), cmp_total);
		for (i = 0; i < r->n; i++)
			sum += r->s[i].n[USER] + r->s[i].n[KERNEL];
		med = &r->s[r->n / 2];
		fprintf(f, "insns region=%s vcpu=%u n=%zu user=%" PRIu64 " kernel=%" PRIu64
			" total=%" PRIu64 " min=%" PRIu64 " mean=%.1f umed=%" PRIu64
			" kmed=%" PRIu64 " kp10=%" PRIu64 " p10=%" PRIu64 "\n",
			r->name[0] ? r->name : "-", r->vcpu, r->n, med->n[USER], med->n[KERNEL],
			med->n[USER] + med->n[KERNEL], r->s[0].n[USER] + r->s[0].n[KERNEL],
			sum / r->n, umed, kmed, kp10,
			r->s[r->n / 10].n[USER] + r->s[r->n / 10].n[KERNEL]);
	}
	fprintf(f, "insns-plugin vcpus=%u unmatched=%" PRIu64 "\n", n_vcpus, unmatched);
}

static void write_profile(FILE *f)
{
	struct region *r;
	size_t i;

	for (r = regions; r; r = r->next)
		fprintf(f, "region %s %u %zu\n", r->name[0] ? r->name : "-", r->vcpu, r->n);
	for (i = 0; i < prof_size; i++)
		if (prof[i].region)
			fprintf(f, "%s %u %" PRIx64 " %" PRIu64 "\n",
				prof[i].region->name[0] ? prof[i].region->name : "-",
				prof[i].region->vcpu, prof[i].vaddr, prof[i].count);
	fclose(f);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	FILE *f = stderr;

	(void)id;
	(void)p;
	if (profile)
		write_profile(profile);
	if (out_path) {
		f = fopen(out_path, "w");
		if (!f) {
			perror(out_path);
			return;
		}
	}
	report(f);
	if (f != stderr)
		fclose(f);
	if (samples)
		fclose(samples);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	if (info->system_emulation && !strcmp(info->target_name, "x86_64")) {
		marker_code = marker_code_x86;
	} else if (info->system_emulation && !strcmp(info->target_name, "aarch64")) {
		marker_code = marker_code_arm64;
	} else {
		fprintf(stderr, "insn_count: x86_64 or aarch64 system emulation only\n");
		return -1;
	}
	if (info->version.cur < QEMU_PLUGIN_VERSION || info->version.min > QEMU_PLUGIN_VERSION) {
		fprintf(stderr, "insn_count: built for plugin API %d, QEMU has %d..%d\n",
			QEMU_PLUGIN_VERSION, info->version.min, info->version.cur);
		return -1;
	}
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			out_path = argv[i] + 4;
		} else if (!strncmp(argv[i], "profile=", 8)) {
			profile_path = argv[i] + 8;
			/* Opened now: a path that cannot be written fails the run at once. */
			profile = fopen(profile_path, "w");
			if (!profile) {
				perror(profile_path);
				return -1;
			}
		} else if (!strncmp(argv[i], "samples=", 8)) {
			samples = fopen(argv[i] + 8, "w");
			if (!samples) {
				perror(argv[i] + 8);
				return -1;
			}
		} else {
			fprintf(stderr, "insn_count: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	n_vcpus = info->system.max_vcpus;
	vcpus = calloc(n_vcpus, sizeof(*vcpus));
	if (!vcpus)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * insn_marker.h: markers a guest program executes to tell the instruction
 * counting plugin (scripts/insn-plugin, loaded by scripts/vm --count-insns)
 * where a measured region starts and ends, and what it is called.
 *
 * x86-64: a marker is an 8-byte nop, "nopl disp32(%rax,%rax,1)" (0f 1f 84
 * 00 and the displacement), the long nop compilers pad with, but with a
 * displacement they never use: INSN_MARK_MAGIC in bits 16-31, the
 * operation in bits 8-15 and its argument in bits 0-7.
 *
 * arm64: "movk xzr, #IMM, lsl #48" (0xf2e0001f | IMM << 5), a write to
 * the zero register, which discards it: architecturally a no-op that no
 * compiler emits (it would be a wasted instruction) and no kernel or
 * library assembly uses, unlike the HINT space (NOP, YIELD, the pointer
 * authentication and BTI hints, ...), whose free encodings the
 * architecture keeps allocating and which carry 7 bits only. IMM holds
 * INSN_MARK_A64_MAGIC in bits 8-15, the operation in bits 4-7 and its
 * argument in bits 0-3 (every operation and argument here fits).
 *
 * Either does nothing on any CPU of its architecture, so a program with
 * markers runs anywhere. The plugin recognises a marker by its encoding
 * when QEMU translates it: QEMU 7.2's plugin API cannot read registers,
 * so everything a marker says is in its encoding, and a name is sent a
 * bit at a time.
 *
 * Regions are per CPU: the plugin counts what the vCPU that executed
 * START runs until it executes STOP (every thread, user and kernel), so a
 * measuring thread must be pinned. A region counts the instructions
 * strictly between its two markers; the region's name is the last one
 * this vCPU was given with insn_region_name().
 */
#ifndef INSN_MARKER_H
#define INSN_MARKER_H

#define INSN_MARK_MAGIC		0x51ce0000u
#define INSN_MARK_MAGIC_MASK	0xffff0000u
#define INSN_MARK_START		1	/* open a region on this vCPU */
#define INSN_MARK_STOP		2	/* close it: one sample of its name */
#define INSN_MARK_NAME_CLEAR	3	/* start a new name (closes nothing) */
#define INSN_MARK_NAME_BIT	4	/* argument: the name's next bit */
#define INSN_MARK_CANCEL	5	/* close the region without a sample */
#define INSN_MARK_NAME_MAX	63	/* characters of a name the plugin keeps */

/* arm64: "movk xzr, #IMM, lsl #48", IMM = magic << 8 | op << 4 | arg. */
#define INSN_MARK_A64_INSN	0xf2e0001fu	/* IMM 0 */
#define INSN_MARK_A64_MASK	0xffe0001fu	/* MOVK, hw 3, Rd 31 */
#define INSN_MARK_A64_MAGIC	0xce	/* no suffix: the assembler reads it too */

#ifndef __ASSEMBLER__
/*
 * The marker instruction; its operand is INSN_MARK_CODE(op, arg). The
 * counting is x86-64's and arm64's (scripts/vm --count-insns): on other
 * architectures a marker is nothing but a compiler barrier.
 */
#if defined(__x86_64__) || defined(__i386__)
#define INSN_MARK_INSN	".byte 0x0f, 0x1f, 0x84, 0x00\n\t.long %c0"
#elif defined(__aarch64__)
/* The magic, then the code's op (bits 8-15) and arg (bits 0-7), 4 bits each. */
#define INSN_MARK_STR_(x)	#x
#define INSN_MARK_STR(x)	INSN_MARK_STR_(x)
#define INSN_MARK_INSN	"movk xzr, #(" INSN_MARK_STR(INSN_MARK_A64_MAGIC) " << 8 | " \
			"(%c0 >> 4 & 0xf0) | (%c0 & 0xf)), lsl #48"
#else
#define INSN_MARK_INSN	""
#endif
#define INSN_MARK_CODE(op, arg)	(INSN_MARK_MAGIC | (op) << 8 | (arg))

static inline void insn_region_start(void)
{
	__asm__ __volatile__(INSN_MARK_INSN
			     : : "i" (INSN_MARK_CODE(INSN_MARK_START, 0)) : "memory");
}

static inline void insn_region_stop(void)
{
	__asm__ __volatile__(INSN_MARK_INSN
			     : : "i" (INSN_MARK_CODE(INSN_MARK_STOP, 0)) : "memory");
}

/* The region turned out not to be one to count (e.g. no grant came). */
static inline void insn_region_cancel(void)
{
	__asm__ __volatile__(INSN_MARK_INSN
			     : : "i" (INSN_MARK_CODE(INSN_MARK_CANCEL, 0)) : "memory");
}

/* A marker holds a constant: one marker for a 0 bit, one for a 1. */
static inline void insn_mark_bit(unsigned int bit)
{
	if (bit)
		__asm__ __volatile__(INSN_MARK_INSN
				     : : "i" (INSN_MARK_CODE(INSN_MARK_NAME_BIT, 1)) : "memory");
	else
		__asm__ __volatile__(INSN_MARK_INSN
				     : : "i" (INSN_MARK_CODE(INSN_MARK_NAME_BIT, 0)) : "memory");
}

/* Name the regions this vCPU measures next (call it pinned). */
static inline void insn_region_name(const char *name)
{
	int i;

	__asm__ __volatile__(INSN_MARK_INSN
			     : : "i" (INSN_MARK_CODE(INSN_MARK_NAME_CLEAR, 0)) : "memory");
	for (; *name; name++)
		for (i = 7; i >= 0; i--)
			insn_mark_bit((unsigned char)*name >> i & 1);
}
#endif /* __ASSEMBLER__ */
#endif /* INSN_MARKER_H */

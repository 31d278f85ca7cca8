/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interfaces of the rseq_slice module.
 */
#ifndef RSEQ_SLICE_INTERNAL_H
#define RSEQ_SLICE_INTERNAL_H

#include <linux/types.h>

#define RSEQ_SLICE_GRANT_NS_MIN		5000U
#define RSEQ_SLICE_GRANT_NS_MAX		50000U
#define RSEQ_SLICE_GRANT_NS_DEFAULT	30000U

/* params.c: the module parameters, read locklessly with READ_ONCE(). */
enum rseq_slice_foreign {
	RSEQ_SLICE_FOREIGN_KILL,	/* v1: SIGSEGV */
	RSEQ_SLICE_FOREIGN_ABORT,	/* merged upstream: revoke, let it run */
};

extern unsigned int rseq_slice_grant_ns;
extern bool rseq_slice_enabled;
extern bool rseq_slice_debug;
extern int rseq_slice_foreign;

#endif /* RSEQ_SLICE_INTERNAL_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * merged_probe: does this kernel offer the merged (7.2) ABI? Exit 0 if
 * prctl(PR_RSEQ_SLICE_EXTENSION, GET) says anything but EINVAL (7.2 with
 * the feature built in, or the module once it implements the ABI), 1 if
 * it says EINVAL. Prints one comment line saying which. For run_suite.sh.
 */
#include <stdbool.h>
#include "merged_util.h"

int main(void)
{
	long ret = merged_get();

	if (ret == -EINVAL) {
		printf("# merged ABI not offered here: prctl(PR_RSEQ_SLICE_EXTENSION, GET) returns EINVAL\n");
		return 1;
	}
	printf("# merged ABI offered: prctl(PR_RSEQ_SLICE_EXTENSION, GET) returns %ld\n", ret);
	return 0;
}

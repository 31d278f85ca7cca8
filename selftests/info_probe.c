// SPDX-License-Identifier: GPL-2.0
/*
 * info_probe: can the loaded module grant on this kernel? Exit 0 if
 * RSEQ_SLICE_IOC_INFO's flags lack RSEQ_SLICE_INFO_NO_GRANTS, 1 if they
 * have it, 2 if the device cannot be asked. Prints one comment line
 * saying which. For run_suite.sh, as root.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/ioctl.h>
#include <linux/rseq_slice.h>

int main(void)
{
	struct rseq_slice_info info;
	int fd = open(RSEQ_SLICE_DEVICE, O_RDWR | O_CLOEXEC);

	if (fd < 0 || ioctl(fd, RSEQ_SLICE_IOC_INFO, &info)) {
		printf("# info_probe: no answer from %s: %s\n", RSEQ_SLICE_DEVICE, strerror(errno));
		return 2;
	}
	if (info.flags & RSEQ_SLICE_INFO_NO_GRANTS) {
		printf("# the module cannot grant on this kernel (RSEQ_SLICE_INFO_NO_GRANTS): every REQUEST is denied\n");
		return 1;
	}
	printf("# the module can grant on this kernel (flags %#x)\n", info.flags);
	return 0;
}
